package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/permission"
)

// acpChild is an ACP agent process driven with the Go SDK's client side.
//
// The SDK hands notifications to one ordered queue of 1024 and closes the
// connection when it overflows (spec acp.md §8). session/update — the only
// notification that comes in floods — never reaches that queue: an
// updateFilter takes it off the wire on the reading goroutine and only
// appends the chunk's text to the session's buffer (see updateFilter).
type acpChild struct {
	reg    *Registry
	proc   *childProc
	conn   *acp.ClientSideConnection
	parent *core.Session
	cwd    string
	log    *slog.Logger
	// canClose: the agent advertised session/close, so a pooled child
	// frees each session after its run.
	canClose bool

	callCtx
	mu   sync.Mutex
	bufs map[acp.SessionId]*strings.Builder

	wg sync.WaitGroup // cancel notifications in flight
	closer
}

// spawnACP starts the agent and initializes it. On failure the process is
// reaped before returning.
func spawnACP(ctx context.Context, r *Registry, s spawnSpec) (*acpChild, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subagent request was aborted before the ACP child started: %w", context.Cause(ctx))
	}
	p, err := startProc(s.argv, s.env, s.cwd)
	if err != nil {
		return nil, fmt.Errorf("could not start the ACP agent: %w", err)
	}
	c := &acpChild{reg: r, proc: p, parent: s.parent, cwd: s.cwd, log: r.log,
		bufs: map[acp.SessionId]*strings.Builder{}, closer: newCloser()}
	in := newGatedReader(newUpdateFilter(p.stdout, c.onUpdate))
	c.conn = acp.NewClientSideConnection((*acpClient)(c), p.stdin, in)
	c.conn.SetLogger(r.log.With("subagent", s.name))
	in.open()

	ictx, cancel := context.WithTimeout(ctx, r.initTimeout)
	defer cancel()
	resp, err := c.conn.Initialize(ictx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{},
		ClientInfo:         &acp.Implementation{Name: "dsh-subagent-gateway", Version: "1"},
	})
	if err == nil && resp.ProtocolVersion != acp.ProtocolVersionNumber {
		err = fmt.Errorf("the agent speaks ACP protocol version %d; the gateway speaks %d", resp.ProtocolVersion, acp.ProtocolVersionNumber)
	}
	if err != nil {
		aborted := ctx.Err() != nil
		c.fastClose()
		if aborted {
			return nil, fmt.Errorf("subagent request was aborted before the ACP child started: %w", context.Cause(ctx))
		}
		select {
		case <-c.conn.Done():
			return nil, fmt.Errorf("the ACP agent failed to initialize: it closed the connection before answering; %s", p.describe())
		default:
			return nil, fmt.Errorf("the ACP agent failed to initialize: %s; %s", c.describeErr(err), p.describe())
		}
	}
	c.canClose = resp.AgentCapabilities.SessionCapabilities.Close != nil
	return c, nil
}

// fastClose kills the child at once (failed handshake).
func (c *acpChild) fastClose() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.close(ctx)
}

func (c *acpChild) open(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.reg.initTimeout)
	defer cancel()
	resp, err := c.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: c.cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		return "", fmt.Errorf("the ACP agent refused session/new: %s", c.describeErr(err))
	}
	if resp.SessionId == "" {
		return "", errors.New("the ACP agent answered session/new without a sessionId")
	}
	return string(resp.SessionId), nil
}

func (c *acpChild) prompt(ctx context.Context, sid, text string) runResult {
	buf := &strings.Builder{}
	c.mu.Lock()
	c.bufs[acp.SessionId(sid)] = buf
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.bufs, acp.SessionId(sid))
		c.mu.Unlock()
	}()
	resp, err := c.conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(sid), Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	// The SDK has run every notification sent before the response by now
	// (its response barrier), so the buffer is complete.
	c.mu.Lock()
	out := buf.String()
	c.mu.Unlock()
	if err != nil {
		r := runResult{outcome: outcome{StopReason: StopError, Output: out}, broken: true}
		select {
		case <-c.conn.Done():
			// Give the reaper a moment so the diagnostic can say how the
			// process ended.
			c.proc.await(context.Background(), 500*time.Millisecond)
			r.Diagnostic = "the ACP agent disconnected mid-run: " + c.proc.describe()
		default:
			r.Diagnostic = "the ACP agent failed the prompt: " + c.describeErr(err)
			// A JSON-RPC error answer leaves the connection usable.
			var re *acp.RequestError
			r.broken = !errors.As(err, &re) || ctx.Err() != nil
		}
		return r
	}
	stop, diag := fromACPStop(resp.StopReason)
	return runResult{outcome: outcome{StopReason: stop, Output: out, Diagnostic: diag}}
}

// describeErr renders an ACP error: the SDK's RequestError prints as JSON;
// its message and any data.error / data.details read better.
func (c *acpChild) describeErr(err error) string {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return err.Error()
	}
	msg := re.Message
	if m, ok := re.Data.(map[string]any); ok {
		for _, k := range []string{"error", "details", "message"} {
			if s, ok := m[k].(string); ok && s != "" && s != msg {
				msg += ": " + s
				break
			}
		}
	} else if re.Data != nil {
		if b, err := json.Marshal(re.Data); err == nil {
			msg += ": " + string(b)
		}
	}
	return fmt.Sprintf("%s (code %d)", msg, re.Code)
}

func (c *acpChild) cancel(sid string) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), c.reg.cancelGrace)
		defer cancel()
		if err := c.conn.Cancel(ctx, acp.CancelNotification{SessionId: acp.SessionId(sid)}); err != nil {
			c.log.Debug("subagent: session/cancel not sent", "err", err)
		}
	}()
}

func (c *acpChild) finish(ctx context.Context, sid string) bool {
	if !c.canClose {
		return c.healthy()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.conn.CloseSession(ctx, acp.CloseSessionRequest{SessionId: acp.SessionId(sid)}); err != nil {
		c.log.Debug("subagent: session/close failed; not reusing the child", "err", err)
		return false
	}
	return c.healthy()
}

func (c *acpChild) healthy() bool {
	if !c.proc.alive() {
		return false
	}
	select {
	case <-c.conn.Done():
		return false
	default:
		return true
	}
}

func (c *acpChild) close(ctx context.Context) error {
	err := c.closer.do(ctx, func(ctx context.Context) error {
		err := c.proc.stop(ctx, c.reg.ladder)
		// The reader ends now that the pipe is closed.
		<-c.conn.Done()
		return err
	})
	c.wg.Wait()
	return err
}

func (c *acpChild) pid() int { return c.proc.pid() }

// onUpdate keeps the text of agent message chunks; it runs on the
// connection's reading goroutine, so it must stay this cheap.
func (c *acpChild) onUpdate(sid string, update json.RawMessage) {
	text := agentText(update)
	if text == "" {
		return
	}
	c.mu.Lock()
	if b := c.bufs[acp.SessionId(sid)]; b != nil {
		b.WriteString(text)
	}
	c.mu.Unlock()
}

// acpClient is the acp.Client side of an acpChild: the requests and
// notifications the agent sends us.
type acpClient acpChild

// SessionUpdate keeps agent message text. The updateFilter takes updates
// off the wire before the SDK sees them, so this only serves an update the
// filter could not recognise; it must return at once all the same.
func (a *acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	u := n.Update.AgentMessageChunk
	if u == nil || u.Content.Text == nil {
		return nil
	}
	a.mu.Lock()
	if b := a.bufs[n.SessionId]; b != nil {
		b.WriteString(u.Content.Text.Text)
	}
	a.mu.Unlock()
	return nil
}

// RequestPermission answers with the parent session's gate.
func (a *acpClient) RequestPermission(h context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	ctx, call, stop := a.within(h)
	defer stop()
	ans := decide(ctx, a.parent, call, acpPermissionRequest(p, a.cwd))
	return acp.RequestPermissionResponse{Outcome: acpOutcome(ans, p.Options)}, nil
}

// acpPermissionRequest describes an ACP tool call for the parent's gate.
func acpPermissionRequest(p acp.RequestPermissionRequest, cwd string) permission.Request {
	tc := p.ToolCall
	req := permission.Request{CallID: string(tc.ToolCallId), Workspace: cwd, Kind: "execute"}
	if tc.Title != nil {
		req.Title = *tc.Title
	}
	if tc.Kind != nil {
		req.Tool = string(*tc.Kind)
		switch *tc.Kind {
		case acp.ToolKindRead, acp.ToolKindSearch, acp.ToolKindThink, acp.ToolKindFetch:
			req.Kind = "read"
		case acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove:
			req.Kind, req.Write = "mutate", true
		}
	}
	if req.Tool == "" {
		req.Tool = "acp-tool"
	}
	for _, l := range tc.Locations {
		if l.Path != "" {
			req.Paths = append(req.Paths, l.Path)
		}
	}
	if tc.RawInput != nil {
		if b, err := json.Marshal(tc.RawInput); err == nil {
			req.RawInput = b
			var in struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(b, &in) == nil {
				req.Command = in.Command
			}
		}
	}
	return req
}

// acpOutcome picks the agent's option matching the parent's answer: an
// allow option for allow, a reject option for reject, cancelled when the
// call was cancelled or the agent offered nothing that fits.
func acpOutcome(ans permission.Answer, opts []acp.PermissionOption) acp.RequestPermissionOutcome {
	var want []acp.PermissionOptionKind
	switch ans {
	case permission.AllowOnce:
		want = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways}
	case permission.RejectOnce:
		want = []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways}
	}
	for _, k := range want {
		for _, o := range opts {
			if o.Kind == k {
				return acp.NewRequestPermissionOutcomeSelected(o.OptionId)
			}
		}
	}
	return acp.NewRequestPermissionOutcomeCancelled()
}

// The gateway advertises no fs or terminal capability; an agent that asks
// anyway is told the method does not exist.

func (a *acpClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (a *acpClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (a *acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (a *acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (a *acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (a *acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (a *acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

var _ acp.Client = (*acpClient)(nil)
