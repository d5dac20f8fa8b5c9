package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/sandbox"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

const testModel = "scripted-model"

// newRuntime builds a real runtime on a store at root with the scripted
// provider playing script.
func newRuntime(t *testing.T, root string, script any, mode permission.Mode, more ...func(*core.Config)) *core.Runtime {
	t.Helper()
	b, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{
		Store: store.New(root),
		NewProvider: func(name string) (model.Provider, error) {
			return model.New(name, model.Options{ScriptPath: path})
		},
		Defaults:       event.Config{Provider: model.ProviderScripted, Model: testModel},
		PermissionMode: mode,
		Tools:          tool.Builtins(),
		Origin:         "run",
		Logger:         testLogger(t),
	}
	for _, f := range more {
		f(&cfg)
	}
	rt, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// harness runs Serve on in-memory pipes with the SDK's client side.
type harness struct {
	t    *testing.T
	rt   *core.Runtime
	root string
	cwd  string
	cl   *testClient
	conn *sdk.ClientSideConnection
	in   *lockedWriter // what the agent reads
	out  *recorder     // what the agent wrote
	done chan error
}

type hopts struct {
	script   any
	mode     permission.Mode
	root     string // store root; "" = fresh
	cwd      string // workspace; "" = fresh
	maxFrame int
	models   []string
	prices   map[string]core.Price // the runtime's (core prices each call)
	// sandboxNotice and containTerminal are the Options'.
	sandboxNotice   func() string
	containTerminal func(sandbox.Scope, []string) ([]string, []string, error)
	// Pacing and the hooks (the outbox hook: raw harness only).
	updatesPerSecond float64
	onOutboxFull     func()
	onForget         func(string)
}

// withDefaults fills what a test left out: fresh root and workspace, mode
// auto, a script that answers "ok".
func (o hopts) withDefaults(t *testing.T) hopts {
	if o.root == "" {
		o.root = t.TempDir()
	}
	if o.cwd == "" {
		o.cwd = t.TempDir()
	}
	if o.mode == "" {
		o.mode = permission.ModeAuto
	}
	if o.script == nil {
		o.script = map[string]any{"steps": []any{map[string]any{"text": "ok"}}, "repeat": "last"}
	}
	return o
}

func start(t *testing.T, o hopts) *harness {
	t.Helper()
	o = o.withDefaults(t)
	rt := newRuntime(t, o.root, o.script, o.mode, func(c *core.Config) { c.Prices = o.prices })
	h := &harness{t: t, rt: rt, root: o.root, cwd: o.cwd, cl: newTestClient(), done: make(chan error, 1)}

	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		h.done <- Serve(ctx, rt, agentIn, agentOut, Options{Logger: testLogger(t), MaxFrameBytes: o.maxFrame, Version: "test", Models: o.models,
			SandboxNotice: o.sandboxNotice, ContainTerminal: o.containTerminal, UpdatesPerSecond: o.updatesPerSecond, onForget: o.onForget})
		_ = agentOut.Close()
	}()
	h.in = &lockedWriter{w: clientOut}
	h.out = &recorder{r: clientIn}
	h.conn = sdk.NewClientSideConnection(h.cl, h.in, h.out)
	h.conn.SetLogger(testLogger(t))
	t.Cleanup(func() {
		_ = clientOut.Close() // the client disconnects
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("Serve did not return after the client disconnected")
		}
		cancel()
		<-h.conn.Done()
		h.cl.closeTerminals()
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("runtime close: %v", err)
		}
	})
	return h
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) initialize(caps sdk.ClientCapabilities) sdk.InitializeResponse {
	h.t.Helper()
	resp, err := h.conn.Initialize(h.ctx(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps})
	if err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return resp
}

func (h *harness) newSession() sdk.NewSessionResponse {
	h.t.Helper()
	resp, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return resp
}

func (h *harness) prompt(id sdk.SessionId, blocks ...sdk.ContentBlock) (sdk.PromptResponse, error) {
	return h.conn.Prompt(h.ctx(), sdk.PromptRequest{SessionId: id, Prompt: blocks})
}

func (h *harness) promptText(id sdk.SessionId, text string) sdk.PromptResponse {
	h.t.Helper()
	resp, err := h.prompt(id, sdk.TextBlock(text))
	if err != nil {
		h.t.Fatalf("session/prompt: %v", err)
	}
	return resp
}

// raw writes one frame as is.
func (h *harness) raw(frame []byte) {
	h.t.Helper()
	if _, err := h.in.Write(frame); err != nil {
		h.t.Fatalf("raw write: %v", err)
	}
}

// waitLine waits for an output line containing every one of subs.
func (h *harness) waitLine(subs ...string) string {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range h.out.lines() {
			ok := true
			for _, s := range subs {
				if !strings.Contains(l, s) {
					ok = false
					break
				}
			}
			if ok {
				return l
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("no output line with %q; output:\n%s", subs, strings.Join(h.out.lines(), "\n"))
	return ""
}

// sessionEvents reads the session's log through the store.
func (h *harness) sessionEvents(id sdk.SessionId) []event.Event {
	h.t.Helper()
	_, evs, err := h.rt.Store().Read(string(id))
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

func wantCode(t *testing.T, err error, code int, msg string) {
	t.Helper()
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("want error %d %q, got %v", code, msg, err)
	}
	if re.Code != code || !strings.Contains(re.Message, msg) {
		t.Fatalf("want error %d containing %q, got %d %q", code, msg, re.Code, re.Message)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// recorder tees what the client reads, split into lines.
type recorder struct {
	r   io.Reader
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.mu.Lock()
	r.buf.Write(p[:n])
	r.mu.Unlock()
	return n, err
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Split(strings.TrimRight(r.buf.String(), "\n"), "\n")
}

// testClient is an ACP client with a real file system and real terminals.
type testClient struct {
	mu      sync.Mutex
	updates map[sdk.SessionId][]sdk.SessionUpdate
	asked   []sdk.RequestPermissionRequest
	reads   []string
	writes  []string
	answer  func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome
	terms   map[string]*terminal
	nextTID int
	changed chan struct{}
}

func newTestClient() *testClient {
	return &testClient{updates: map[sdk.SessionId][]sdk.SessionUpdate{}, terms: map[string]*terminal{}, changed: make(chan struct{})}
}

func (c *testClient) note() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *testClient) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates[n.SessionId] = append(c.updates[n.SessionId], n.Update)
	c.note()
	return nil
}

func (c *testClient) got(id sdk.SessionId) []sdk.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionUpdate(nil), c.updates[id]...)
}

func (c *testClient) reset(id sdk.SessionId) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.updates, id)
}

// waitFor waits until cond holds on the client's state.
func (c *testClient) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		ok := cond()
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (c *testClient) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	answer := c.answer
	c.note()
	c.mu.Unlock()
	if answer == nil {
		return sdk.RequestPermissionResponse{}, &sdk.RequestError{Code: -32603, Message: "no policy"}
	}
	out := answer(p)
	if out.Selected == nil && out.Cancelled == nil {
		// Hold the request until it is cancelled.
		<-ctx.Done()
		return sdk.RequestPermissionResponse{}, ctx.Err()
	}
	return sdk.RequestPermissionResponse{Outcome: out}, nil
}

func (c *testClient) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	c.reads = append(c.reads, p.Path)
	c.mu.Unlock()
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: -32002, Message: err.Error()}
	}
	return sdk.ReadTextFileResponse{Content: string(b)}, nil
}

func (c *testClient) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	c.writes = append(c.writes, p.Path)
	c.mu.Unlock()
	if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
		return sdk.WriteTextFileResponse{}, &sdk.RequestError{Code: -32603, Message: err.Error()}
	}
	return sdk.WriteTextFileResponse{}, nil
}

// terminal is a real process group run for the agent.
type terminal struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	code *int
	sig  *string
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.Write(p)
}

func (c *testClient) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	cmd := exec.Command(p.Command, p.Args...)
	if p.Cwd != nil {
		cmd.Dir = *p.Cwd
	}
	cmd.Env = os.Environ()
	for _, e := range p.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	term := &terminal{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = term, term
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return sdk.CreateTerminalResponse{}, &sdk.RequestError{Code: -32603, Message: err.Error()}
	}
	go func() {
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		term.mu.Lock()
		if ws.Signaled() {
			s := ws.Signal().String()
			term.sig = &s
		} else {
			code := ws.ExitStatus()
			term.code = &code
		}
		term.mu.Unlock()
		close(term.done)
	}()
	c.mu.Lock()
	c.nextTID++
	id := "term-" + strconv.Itoa(c.nextTID)
	c.terms[id] = term
	c.mu.Unlock()
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (c *testClient) term(id string) (*terminal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.terms[id]
	if t == nil {
		return nil, &sdk.RequestError{Code: -32602, Message: "unknown terminal " + id}
	}
	return t, nil
}

func (c *testClient) KillTerminal(ctx context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return sdk.KillTerminalResponse{}, err
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	<-t.done
	return sdk.KillTerminalResponse{}, nil
}

func (c *testClient) TerminalOutput(ctx context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	resp := sdk.TerminalOutputResponse{Output: t.out.String()}
	select {
	case <-t.done:
		resp.ExitStatus = &sdk.TerminalExitStatus{ExitCode: t.code, Signal: t.sig}
	default:
	}
	return resp, nil
}

func (c *testClient) ReleaseTerminal(ctx context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return sdk.ReleaseTerminalResponse{}, err
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	<-t.done
	c.mu.Lock()
	delete(c.terms, p.TerminalId)
	c.mu.Unlock()
	return sdk.ReleaseTerminalResponse{}, nil
}

func (c *testClient) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return sdk.WaitForTerminalExitResponse{ExitCode: t.code, Signal: t.sig}, nil
}

func (c *testClient) closeTerminals() {
	c.mu.Lock()
	terms := c.terms
	c.terms = map[string]*terminal{}
	c.mu.Unlock()
	for _, t := range terms {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.done
	}
}

// Kinds of updates, for assertions.
func kindOf(u sdk.SessionUpdate) string {
	switch {
	case u.UserMessageChunk != nil:
		return "user_message_chunk"
	case u.AgentMessageChunk != nil:
		return "agent_message_chunk"
	case u.AgentThoughtChunk != nil:
		return "agent_thought_chunk"
	case u.ToolCall != nil:
		return "tool_call"
	case u.ToolCallUpdate != nil:
		return "tool_call_update"
	case u.Plan != nil:
		return "plan"
	case u.AvailableCommandsUpdate != nil:
		return "available_commands_update"
	case u.CurrentModeUpdate != nil:
		return "current_mode_update"
	case u.ConfigOptionUpdate != nil:
		return "config_option_update"
	case u.SessionInfoUpdate != nil:
		return "session_info_update"
	case u.UsageUpdate != nil:
		return "usage_update"
	}
	return "?"
}

func kinds(us []sdk.SessionUpdate) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, kindOf(u))
	}
	return out
}

func chunkText(u sdk.SessionUpdate) string {
	var b sdk.ContentBlock
	switch {
	case u.UserMessageChunk != nil:
		b = u.UserMessageChunk.Content
	case u.AgentMessageChunk != nil:
		b = u.AgentMessageChunk.Content
	case u.AgentThoughtChunk != nil:
		b = u.AgentThoughtChunk.Content
	default:
		return ""
	}
	if b.Text != nil {
		return b.Text.Text
	}
	return ""
}

func indexOf(ks []string, k string) int {
	for i, x := range ks {
		if x == k {
			return i
		}
	}
	return -1
}
