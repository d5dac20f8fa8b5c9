package mcp

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp/mcptest"
	"github.com/dsh-dev/dsh/core/tool"
)

// stdioServer is a config that runs this test binary as the test server.
func stdioServer(name string, env ...KV) ServerConfig {
	return ServerConfig{Name: name, Transport: TransportStdio, Command: os.Args[0],
		Env: append([]KV{{Name: "MCPTEST_SERVE", Value: "1"}}, env...), Source: "config"}
}

type harness struct {
	t      *testing.T
	set    *Set
	status chan Status
}

func start(t *testing.T, opts Options, cfgs ...ServerConfig) *harness {
	t.Helper()
	h := &harness{t: t, status: make(chan Status, 64)}
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	opts.OnStatus = func(s Status) { h.status <- s }
	h.set = Start(cfgs, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.set.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !h.set.WaitStarted(ctx) {
		t.Fatal("servers did not settle")
	}
	return h
}

func (h *harness) tool(name string) tool.Tool {
	h.t.Helper()
	ts, _ := h.set.Tools()
	for _, x := range ts {
		if x.Name() == name {
			return x
		}
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name())
	}
	h.t.Fatalf("no tool %s in %v (status %+v)", name, names, h.set.Status())
	return nil
}

func (h *harness) call(ctx context.Context, name, args string, env *tool.Env) tool.Result {
	h.t.Helper()
	tl := h.tool(name)
	if _, err := tl.Inspect(json.RawMessage(args), env); err != nil {
		h.t.Fatalf("inspect %s: %v", name, err)
	}
	return tl.Run(ctx, json.RawMessage(args), env)
}

// waitState waits for a status report of the server in that state.
func (h *harness) waitState(name string, st State) Status {
	h.t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case s := <-h.status:
			if s.Name == name && s.State == st {
				return s
			}
		case <-timeout:
			h.t.Fatalf("server %s never reached %s: %+v", name, st, h.set.Status())
		}
	}
}

func text(r tool.Result) string { return event.JoinText(r.Content) }

var allTools = []string{"mcp__t__add", "mcp__t__big", "mcp__t__block", "mcp__t__crash", "mcp__t__echo",
	"mcp__t__fail", "mcp__t__garble", "mcp__t__grow", "mcp__t__image", "mcp__t__resource"}

func TestStdioServerListsAndCalls(t *testing.T) {
	h := start(t, Options{}, stdioServer("t"))
	if st := h.set.Status(); len(st) != 1 || st[0].State != StateReady || st[0].Tools != len(allTools) {
		t.Fatalf("status %+v", st)
	}
	ts, v1 := h.set.Tools()
	var names []string
	for _, x := range ts {
		names = append(names, x.Name())
	}
	if strings.Join(names, " ") != strings.Join(allTools, " ") {
		t.Fatalf("tools %v, want %v", names, allTools)
	}
	ts2, v2 := h.set.Tools()
	if v1 != v2 || string(ts[4].Schema()) != string(ts2[4].Schema()) {
		t.Fatal("the tool list is not stable between two snapshots")
	}
	echo := h.tool("mcp__t__echo")
	if echo.Kind() != tool.KindMCPRead || !echo.ParallelSafe() {
		t.Errorf("echo is readOnlyHint: kind %s", echo.Kind())
	}
	if h.tool("mcp__t__fail").Kind() != tool.KindMCP {
		t.Errorf("fail has no readOnlyHint: kind %s", h.tool("mcp__t__fail").Kind())
	}
	if !strings.Contains(string(echo.Schema()), `"text"`) || !json.Valid(echo.Schema()) {
		t.Errorf("echo schema %s", echo.Schema())
	}
	acc, err := echo.Inspect(json.RawMessage(`{"text":"x"}`), nil)
	if err != nil || acc.Title != "t: Echo text" {
		t.Errorf("inspect: %+v %v", acc, err)
	}
	if _, err := echo.Inspect(json.RawMessage(`{}`), nil); err == nil || !strings.Contains(err.Error(), "text") {
		t.Errorf("a missing required argument must be refused before the call: %v", err)
	}

	ctx := context.Background()
	if r := h.call(ctx, "mcp__t__echo", `{"text":"hi"}`, nil); r.IsError || text(r) != "echo: hi" {
		t.Errorf("echo: %+v", r)
	}
	if r := h.call(ctx, "mcp__t__add", `{"a":2,"b":3}`, nil); r.IsError || !strings.Contains(text(r), `"sum":5`) || strings.Count(text(r), "sum") != 1 {
		t.Errorf("add (structured content once): %q", text(r))
	}
	if r := h.call(ctx, "mcp__t__fail", `{}`, nil); !r.IsError || text(r) != "it failed on purpose" {
		t.Errorf("fail: %+v", r)
	}
	r := h.call(ctx, "mcp__t__resource", `{}`, nil)
	if r.IsError || !strings.Contains(text(r), "test://notes/1") || !strings.Contains(text(r), "the notes") || !strings.Contains(text(r), "Resource link: test://notes/2") {
		t.Errorf("resource: %q", text(r))
	}
}

func TestImagesGoToTheModelOnlyWhenItTakesThem(t *testing.T) {
	h := start(t, Options{}, stdioServer("t"))
	var saved []byte
	env := &tool.Env{ModelImages: true, SaveAttachment: func(mt string, data []byte) (*event.Attachment, error) {
		saved = data
		return &event.Attachment{AttachmentID: "sha256:x", MediaType: mt, Bytes: int64(len(data))}, nil
	}}
	r := h.call(context.Background(), "mcp__t__image", `{}`, env)
	if r.IsError || len(r.Content) != 3 || r.Content[2].Type != event.BlockImage || string(saved) != string(mcptest.PNG) {
		t.Fatalf("image to a model that takes images: %+v", r.Content)
	}
	r = h.call(context.Background(), "mcp__t__image", `{}`, &tool.Env{})
	if r.IsError || !strings.Contains(text(r), "cannot view images") {
		t.Fatalf("image to a text-only model: %q", text(r))
	}
}

func TestCancelEndsTheCallAtOnce(t *testing.T) {
	h := start(t, Options{}, stdioServer("t"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Result)
	go func() { done <- h.call(ctx, "mcp__t__block", `{}`, nil) }()
	cancel() // wherever the call is by now, it must end at once
	select {
	case r := <-done:
		if !r.IsError || !strings.Contains(text(r), "cancelled") {
			t.Errorf("cancelled call: %+v", r)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the cancelled call did not end within 2 s")
	}
	if r := h.call(context.Background(), "mcp__t__echo", `{"text":"after"}`, nil); r.IsError {
		t.Errorf("the server must go on after a cancel: %q", text(r))
	}
}

func TestListChangedUpdatesTheTools(t *testing.T) {
	h := start(t, Options{}, stdioServer("t"))
	_, v := h.set.Tools()
	h.waitState("t", StateReady) // the start's report
	if r := h.call(context.Background(), "mcp__t__grow", `{}`, nil); r.IsError {
		t.Fatal(text(r))
	}
	h.waitState("t", StateReady) // the re-list after tools/list_changed
	ts, v2 := h.set.Tools()
	if v2 == v || len(ts) != len(allTools)+1 {
		t.Fatalf("after list_changed: version %d→%d, %d tools", v, v2, len(ts))
	}
	if r := h.call(context.Background(), "mcp__t__extra", `{}`, nil); text(r) != "extra ran" {
		t.Errorf("extra: %q", text(r))
	}
}

func TestCrashMidCallIsAToolErrorAndTheServerIsReported(t *testing.T) {
	h := start(t, Options{}, stdioServer("t"), stdioServer("u"))
	r := h.call(context.Background(), "mcp__t__crash", `{}`, nil)
	if !r.IsError || !strings.Contains(text(r), "the MCP server t stopped during the call to crash") {
		t.Fatalf("crash: %+v", r)
	}
	st := h.waitState("t", StateRestarting)
	if !strings.Contains(st.Error, "crashing on purpose") || !strings.Contains(st.Error, "exit status 3") {
		t.Errorf("the death's report should carry the exit status and the server's stderr: %q", st.Error)
	}
	h.waitState("t", StateReady)
	if r := h.call(context.Background(), "mcp__u__echo", `{"text":"still"}`, nil); r.IsError {
		t.Errorf("the other server must go on: %q", text(r))
	}
}

func TestMisbehavingStdoutKeepsTheServer(t *testing.T) {
	h := start(t, Options{}, stdioServer("t", KV{Name: "MCPTEST_BANNER", Value: "1"}))
	r := h.call(context.Background(), "mcp__t__garble", `{}`, nil)
	if !r.IsError || !strings.Contains(text(r), "malformed JSON") {
		t.Fatalf("garbled answer: %+v", r)
	}
	r = h.call(context.Background(), "mcp__t__big", `{"mib":17}`, nil)
	if !r.IsError || !strings.Contains(text(r), "over dsh's limit of 16 MiB") {
		t.Fatalf("17 MiB answer: %.300q", text(r))
	}
	if r := h.call(context.Background(), "mcp__t__echo", `{"text":"ok"}`, nil); r.IsError {
		t.Fatalf("the server must go on: %q", text(r))
	}
}

func TestBadServersFailClearlyAndTheOthersGoOn(t *testing.T) {
	h := start(t, Options{},
		stdioServer("good"),
		ServerConfig{Name: "missing", Transport: TransportStdio, Command: "dsh-no-such-mcp-server"},
		stdioServer("exits", KV{Name: "MCPTEST_EXIT", Value: "4"}),
		ServerConfig{Name: "good", Transport: TransportStdio, Command: "other", Source: "acp"},
		ServerConfig{Name: "nocmd", Transport: TransportStdio},
		ServerConfig{Name: "refused", Transport: TransportHTTP, URL: "http://" + closedAddr(t) + "/mcp"},
	)
	want := map[string]string{
		"missing": "not found on PATH",
		"exits":   "refusing to start",
		"nocmd":   "needs a \"command\"",
		"refused": "connect",
	}
	dupSeen := false
	for _, st := range h.set.Status() {
		if st.Name == "good" && st.State == StateFailed {
			dupSeen = strings.Contains(st.Error, "another server of that name")
			continue
		}
		if st.Name == "good" {
			if st.State != StateReady {
				t.Errorf("good: %+v", st)
			}
			continue
		}
		if st.State != StateFailed || !strings.Contains(st.Error, want[st.Name]) {
			t.Errorf("%s: %s %q, want failed with %q", st.Name, st.State, st.Error, want[st.Name])
		}
	}
	if !dupSeen {
		t.Errorf("the second server named good must be refused: %+v", h.set.Status())
	}
	if r := h.call(context.Background(), "mcp__good__echo", `{"text":"x"}`, nil); r.IsError {
		t.Fatal(text(r))
	}
}

func TestAServerThatNeverAnswersTimesOut(t *testing.T) {
	h := start(t, Options{StartTimeout: 300 * time.Millisecond}, stdioServer("hangs", KV{Name: "MCPTEST_HANG", Value: "1"}))
	if st := h.set.Status()[0]; st.State != StateFailed || !strings.Contains(st.Error, "did not answer within 300ms") {
		t.Errorf("hangs: %+v", st)
	}
}

func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestStreamableHTTPServer(t *testing.T) {
	cancelled, blocking := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := httptest.NewServer(mcptest.Handler(mcptest.Options{OnCancel: func() { cancelled <- struct{}{} },
		OnCall: func(name string) {
			if name == "block" {
				blocking <- struct{}{}
			}
		}}))
	t.Cleanup(srv.Close) // after the set's close, registered later

	var gotAuth string
	authed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(authed.Close)
	h := start(t, Options{},
		ServerConfig{Name: "web", Transport: TransportHTTP, URL: srv.URL},
		ServerConfig{Name: "broken", Transport: TransportHTTP, URL: authed.URL, Headers: []KV{{Name: "Authorization", Value: "Bearer k"}}})
	if r := h.call(context.Background(), "mcp__web__echo", `{"text":"over http"}`, nil); text(r) != "echo: over http" {
		t.Fatalf("echo: %+v", r)
	}
	st := h.set.Status()
	if st[0].Name != "broken" || st[0].State != StateFailed || !strings.Contains(st[0].Error, "Internal Server Error") || gotAuth != "Bearer k" {
		t.Errorf("a 500 must fail the server clearly (and headers be sent): %+v auth %q", st[0], gotAuth)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Result)
	go func() { done <- h.call(ctx, "mcp__web__block", `{}`, nil) }()
	<-blocking
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the cancelled call did not end within 2 s")
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel did not reach the server")
	}
}

func TestCloseStopsTheProcess(t *testing.T) {
	set := Start([]ServerConfig{stdioServer("t")}, Options{Cwd: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set.WaitStarted(ctx)
	p := set.servers[0].proc
	start := time.Now()
	if err := set.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	default:
		t.Fatal("the server process is still running after Close")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("close took %s", d)
	}
	if _, _, err := set.servers[0].session(context.Background()); err == nil {
		t.Error("a stopped server must refuse calls")
	}
	_ = filepath.Join
}
