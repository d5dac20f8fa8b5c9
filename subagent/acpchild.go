package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
)

// acpChild is an ACP agent process driven over acp/wire, the connection
// layer the ACP door serves editors with, in acp-go-sdk's schema types.
//
// The SDK's own client connection hands notifications to one ordered queue
// of 1024 and closes the connection when it overflows (spec acp.md §8); an
// agent streaming small chunks at full speed outruns it. acp/wire handles
// each notification on its reading goroutine instead, so the pipe is the
// queue: a fast agent is slowed by backpressure, never disconnected, and
// every update precedes the prompt response that follows it on the wire.
type acpChild struct {
	reg    *Registry
	proc   *childProc
	conn   *acpConn
	parent *core.Session
	// mcpCaps are the MCP transports the child agent takes besides stdio.
	mcpCaps acp.McpCapabilities
	cwd     string
	log     *slog.Logger
	// canClose: the agent advertised session/close, so a pooled child
	// frees each session after its run.
	canClose bool

	callCtx
	mu   sync.Mutex
	runs map[acp.SessionId]*acpRun

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
		runs: map[acp.SessionId]*acpRun{}, closer: newCloser()}
	c.conn = newACPConn(p.stdin, p.stdout, (*acpClient)(c), r.log.With("subagent", s.name))

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
	c.mcpCaps = resp.AgentCapabilities.McpCapabilities
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
	resp, err := c.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: c.cwd, McpServers: childMCPServers(c.parent, c.mcpCaps)})
	if err != nil {
		return "", fmt.Errorf("the ACP agent refused session/new: %s", c.describeErr(err))
	}
	if resp.SessionId == "" {
		return "", errors.New("the ACP agent answered session/new without a sessionId")
	}
	return string(resp.SessionId), nil
}

// acpRun is what one prompt of an ACP child has streamed: the agent's
// message text, and how much of it was already reported as progress.
type acpRun struct {
	out      strings.Builder
	reported int
	rep      *reporter
}

// flush reports the message streamed since the last report: it is
// complete once the agent moves on (a tool call, the prompt's answer).
func (r *acpRun) flush() {
	s := r.out.String()
	if len(s) > r.reported {
		r.rep.message([]event.ContentBlock{event.Text(s[r.reported:])})
		r.reported = len(s)
	}
}

func (c *acpChild) prompt(ctx context.Context, sid, text string, rep *reporter) runResult {
	run := &acpRun{rep: rep}
	c.mu.Lock()
	c.runs[acp.SessionId(sid)] = run
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.runs, acp.SessionId(sid))
		c.mu.Unlock()
	}()
	resp, err := c.conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(sid), Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	// acp/wire has run every notification sent before the response by now
	// (they are handled on its reading goroutine, in wire order), so the
	// text is complete.
	c.mu.Lock()
	run.flush()
	out := run.out.String()
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

// acpClient is the client side of an acpChild: the requests and
// notifications the agent sends us.
type acpClient acpChild

// SessionUpdate keeps agent message text and reports tool calls (and the
// message before each) as progress. It runs on the connection's reading
// goroutine, so it must stay this cheap: the reporter only queues.
func (a *acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.runs[n.SessionId]
	if run == nil {
		return nil
	}
	switch u := n.Update; {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		run.out.WriteString(u.AgentMessageChunk.Content.Text.Text)
	case u.ToolCall != nil:
		run.flush()
		title := strings.TrimSpace(u.ToolCall.Title)
		if title == "" {
			title = strings.TrimSpace("tool call " + string(u.ToolCall.Kind))
		}
		run.rep.toolCall(title, "", "")
	}
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

// acpConn is the gateway's client connection to one agent.
type acpConn struct {
	w *wire.Conn
}

func newACPConn(stdin io.Writer, stdout io.Reader, cl acp.Client, log *slog.Logger) *acpConn {
	c := &acpConn{}
	c.w = wire.New(stdout, stdin, &clientHandler{cl: cl, log: log}, wire.Options{MaxFrameBytes: maxFrame, Logger: log})
	go func() {
		if err := c.w.Run(); err != nil {
			log.Debug("subagent: reading the ACP agent failed", "err", err)
		}
	}()
	return c
}

// maxFrame bounds one frame from the agent (the SDK's own limit is 10 MiB).
const maxFrame = 16 << 20

// Done is closed when the agent's output ends: the moment calls waiting for
// an answer fail, so a caller that sees its call fail sees Done too.
func (c *acpConn) Done() <-chan struct{} { return c.w.Done() }

func acpCall[Resp any](ctx context.Context, c *acpConn, method string, params any) (Resp, error) {
	resp, err := wire.CallSDK[Resp](ctx, c.w, method, params)
	if errors.Is(err, wire.ErrClosed) {
		return resp, fmt.Errorf("peer disconnected before response: %w", err)
	}
	return resp, err
}

func (c *acpConn) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acpCall[acp.InitializeResponse](ctx, c, acp.AgentMethodInitialize, p)
}

func (c *acpConn) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acpCall[acp.NewSessionResponse](ctx, c, acp.AgentMethodSessionNew, p)
}

func (c *acpConn) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	return acpCall[acp.PromptResponse](ctx, c, acp.AgentMethodSessionPrompt, p)
}

func (c *acpConn) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acpCall[acp.CloseSessionResponse](ctx, c, acp.AgentMethodSessionClose, p)
}

// Cancel sends session/cancel (a notification).
func (c *acpConn) Cancel(_ context.Context, p acp.CancelNotification) error {
	return c.w.Notify(acp.AgentMethodSessionCancel, p)
}

// clientHandler dispatches what the agent sends onto an acp.Client, in the
// SDK's request types.
type clientHandler struct {
	cl  acp.Client
	log *slog.Logger
}

func (h *clientHandler) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case acp.ClientMethodSessionRequestPermission:
		return wire.Answer(ctx, params, h.cl.RequestPermission)
	case acp.ClientMethodFsReadTextFile:
		return wire.Answer(ctx, params, h.cl.ReadTextFile)
	case acp.ClientMethodFsWriteTextFile:
		return wire.Answer(ctx, params, h.cl.WriteTextFile)
	case acp.ClientMethodTerminalCreate:
		return wire.Answer(ctx, params, h.cl.CreateTerminal)
	case acp.ClientMethodTerminalOutput:
		return wire.Answer(ctx, params, h.cl.TerminalOutput)
	case acp.ClientMethodTerminalWaitForExit:
		return wire.Answer(ctx, params, h.cl.WaitForTerminalExit)
	case acp.ClientMethodTerminalKill:
		return wire.Answer(ctx, params, h.cl.KillTerminal)
	case acp.ClientMethodTerminalRelease:
		return wire.Answer(ctx, params, h.cl.ReleaseTerminal)
	}
	return nil, wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", method)
}

// HandleNotification runs on the reading goroutine: session/update is
// decoded once into the SDK's type and handed over in wire order.
func (h *clientHandler) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	if method != acp.ClientMethodSessionUpdate {
		return
	}
	n, err := wire.DecodeParams[acp.SessionNotification](params)
	if err != nil {
		h.log.Debug("subagent: unreadable session/update", "err", err)
		return
	}
	if err := h.cl.SessionUpdate(ctx, n); err != nil {
		h.log.Debug("subagent: session/update handler failed", "err", err)
	}
}
