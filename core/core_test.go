package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stepFunc answers one model call of a test.
type stepFunc func(ctx context.Context, req *model.Request) (*model.Response, error)

// testProvider is a unit-level provider: each call gets the next step
// function. The e2e suite uses the real SSE client against a fake server.
type testProvider struct {
	mu    sync.Mutex
	steps []stepFunc
	reqs  []*model.Request
	caps  model.Caps
}

func (p *testProvider) Name() string           { return "test" }
func (p *testProvider) Caps(string) model.Caps { return p.caps }
func (p *testProvider) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	p.mu.Lock()
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	p.reqs = append(p.reqs, &cp)
	if len(p.steps) == 0 {
		p.mu.Unlock()
		return nil, &model.Error{Class: model.ClassScript, Message: "test script exhausted"}
	}
	f := p.steps[0]
	p.steps = p.steps[1:]
	p.mu.Unlock()
	return f(ctx, req)
}

func (p *testProvider) requests() []*model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*model.Request(nil), p.reqs...)
}

func text(s string) stepFunc {
	return func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Text: s, Reasoning: "thinking about " + s, FinishReason: "stop",
			Usage: &event.Usage{InputTokens: 10, OutputTokens: 2}}, nil
	}
}

func calls(cs ...model.ToolCall) stepFunc {
	return func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{ToolCalls: cs, FinishReason: "tool_calls"}, nil
	}
}

func fail(class model.Class) stepFunc {
	return func(context.Context, *model.Request) (*model.Response, error) {
		return nil, &model.Error{Class: class, Message: "injected " + string(class)}
	}
}

type harness struct {
	t    *testing.T
	rt   *Runtime
	prov *testProvider
	root string
	cwd  string
}

func newHarness(t *testing.T, steps ...stepFunc) *harness {
	t.Helper()
	h := &harness{t: t, prov: &testProvider{steps: steps, caps: model.Caps{Efforts: []string{"off", "high"}}},
		root: t.TempDir(), cwd: t.TempDir()}
	h.rt = h.newRuntime()
	return h
}

func (h *harness) newRuntime() *Runtime { return h.runtimeWith(func(*Config) {}) }

func (h *harness) session() *Session {
	h.t.Helper()
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func run(t *testing.T, s *Session, prompt string) TurnResult {
	t.Helper()
	return runWithin(t, s, prompt, 20*time.Second)
}

// runWithin is run with its own bound, for a turn whose tools move many
// megabytes (slow under -race on a loaded machine, not stuck).
func runWithin(t *testing.T, s *Session, prompt string, bound time.Duration) TurnResult {
	t.Helper()
	tk, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text(prompt)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tk.Done():
	case <-time.After(bound):
		t.Fatal("turn did not end")
	}
	return tk.Result()
}

func types(evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func TestTextTurn(t *testing.T) {
	h := newHarness(t, text("hello"))
	s := h.session()
	res := run(t, s, "say hello")
	if res.Reason.Kind != event.ReasonCompleted || res.Text != "hello" {
		t.Fatalf("result = %+v", res)
	}
	got := strings.Join(types(s.Events()), ",")
	want := "agent/inbox/spliced,turn/start,agent/inbox/spliced,checkpoint/files,step/start,context/environment,user/message,session/title,request/header,request/context," +
		strings.Repeat("assistant/chunk,", 6) + "assistant/message,step/end,checkpoint/files,turn/end"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	for i, e := range s.Events() {
		if e.Seq != int64(i) {
			t.Fatalf("seq %d at %d", e.Seq, i)
		}
	}
	req := h.prov.requests()[0]
	if req.Messages[0].Role != "system" || strings.Contains(req.Messages[0].Content, h.cwd) || !strings.Contains(req.Messages[0].Content, "m1") {
		t.Fatalf("system prompt lacks the model or holds the cwd: %q", req.Messages[0].Content)
	}
	if !model.IsContext(req.Messages[1]) || !strings.Contains(req.Messages[1].Content, "Working directory: "+h.cwd+"\n") {
		t.Fatalf("context message: %q", req.Messages[1].Content)
	}
}

func TestToolTurnResultsInCallOrder(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	args := func(i int) string {
		return fmt.Sprintf(`{"file_path":%q}`, filepath.Join(dir, fmt.Sprintf("f%d.txt", i)))
	}
	h := newHarness(t, calls(
		model.ToolCall{ID: "c0", Name: "read", Arguments: args(0)},
		model.ToolCall{ID: "c1", Name: "read", Arguments: args(1)},
		model.ToolCall{ID: "c2", Name: "nosuch", Arguments: `{}`},
		model.ToolCall{ID: "c3", Name: "read", Arguments: `{"file_path": 12`},
		model.ToolCall{ID: "c4", Name: "read", Arguments: args(2)},
	), text("done"))
	s := h.session()
	res := run(t, s, "read them")
	if res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("reason %+v", res.Reason)
	}
	var ids []string
	results := map[string]event.ToolResult{}
	for _, e := range s.Events() {
		if e.Type == event.TypeToolResult {
			tr, _ := event.Decode[event.ToolResult](e)
			ids = append(ids, tr.Result().ToolCallID)
			results[tr.Result().ToolCallID] = tr
		}
	}
	if strings.Join(ids, ",") != "c0,c1,c2,c3,c4" {
		t.Fatalf("results out of call order: %v", ids)
	}
	if r := results["c1"].Result(); r.IsError || !strings.Contains(event.JoinText(r.Content), "file 1") {
		t.Fatalf("c1 = %+v", r)
	}
	if results["c2"].Error == nil || results["c2"].Error.Code != event.ToolUnknown {
		t.Fatalf("unknown tool: %+v", results["c2"].Error)
	}
	if results["c3"].Error == nil || results["c3"].Error.Code != event.ToolInvalidArguments {
		t.Fatalf("invalid args: %+v", results["c3"].Error)
	}
	// The second request carries every call's result right after the call.
	req := h.prov.requests()[1]
	msgs := req.Messages
	if msgs[len(msgs)-6].Role != "assistant" || len(msgs[len(msgs)-6].ToolCalls) != 5 {
		t.Fatalf("assistant message with calls not where expected: %+v", msgs)
	}
	for i := 0; i < 5; i++ {
		if m := msgs[len(msgs)-5+i]; m.Role != "tool" || m.ToolCallID != fmt.Sprintf("c%d", i) {
			t.Fatalf("tool message %d = %+v", i, m)
		}
	}
}

func TestRetryThenSuccessAndNonRetryable(t *testing.T) {
	h := newHarness(t, fail(model.ClassServer), fail(model.ClassRateLimit), text("ok"), fail(model.ClassAuth))
	s := h.session()
	if res := run(t, s, "one"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("first turn %+v", res.Reason)
	}
	attempts := 0
	for _, e := range s.Events() {
		if e.Type == event.TypeAssistantAttempt {
			attempts++
		}
	}
	if attempts != 2 {
		t.Fatalf("attempts = %d, want 2", attempts)
	}
	res := run(t, s, "two")
	if res.Reason.Kind != event.ReasonError || res.Reason.Error.Code != "AUTH" {
		t.Fatalf("auth failure: %+v", res.Reason)
	}
	if n := len(h.prov.requests()); n != 4 {
		t.Fatalf("requests = %d; AUTH must not be retried", n)
	}
}

func TestCancelMidStream(t *testing.T) {
	started := make(chan struct{})
	var returnedAt atomic.Int64
	h := newHarness(t, func(ctx context.Context, _ *model.Request) (*model.Response, error) {
		close(started)
		<-ctx.Done()
		returnedAt.Store(time.Now().UnixNano())
		return nil, &model.Error{Class: model.ClassAborted, Message: "cancelled", Err: ctx.Err()}
	}, text("after"))
	s := h.session()
	tk, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("long")})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	t0 := time.Now()
	s.Cancel(nil)
	<-tk.Done()
	if d := time.Duration(returnedAt.Load() - t0.UnixNano()); d > 100*time.Millisecond {
		t.Fatalf("cancel reached the stream after %v", d)
	}
	if r := tk.Result().Reason; r.Kind != event.ReasonAborted || r.Reason.Kind != "user" {
		t.Fatalf("reason %+v", r)
	}
	if res := run(t, s, "again"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("session not usable after cancel: %+v", res)
	}
}

func TestCancelDuringBashGivesEveryCallAResult(t *testing.T) {
	h := newHarness(t, calls(
		model.ToolCall{ID: "b1", Name: "bash", Arguments: `{"command":"echo > started; sleep 30","description":"wait"}`},
		model.ToolCall{ID: "b2", Name: "bash", Arguments: `{"command":"echo never","description":"after"}`},
	))
	s := h.session()
	// b1 writes to a FIFO before it sleeps: reading it returns once the
	// command is running, so the cancel lands inside the call.
	fifo := filepath.Join(h.cwd, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tk, _ := s.Prompt(context.Background(), []event.ContentBlock{event.Text("go")})
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	s.Cancel(nil)
	select {
	case <-tk.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("turn did not end within 3 s of cancel")
	}
	t.Logf("turn ended %v after cancel", time.Since(t0))
	codes := map[string]string{}
	for _, e := range s.Events() {
		if e.Type == event.TypeToolResult {
			tr, _ := event.Decode[event.ToolResult](e)
			code := ""
			if tr.Error != nil {
				code = tr.Error.Code
			}
			codes[tr.Result().ToolCallID] = code
		}
	}
	if codes["b1"] != event.ToolAborted || codes["b2"] != event.ToolAbortedBeforeDispatch {
		t.Fatalf("result codes %v", codes)
	}
	if tk.Result().Reason.Kind != event.ReasonAborted {
		t.Fatalf("reason %+v", tk.Result().Reason)
	}
}

func TestQueuedPromptRunsNextTurn(t *testing.T) {
	gate, inCall := make(chan struct{}), make(chan struct{})
	h := newHarness(t, func(ctx context.Context, r *model.Request) (*model.Response, error) {
		close(inCall)
		<-gate
		return text("first")(ctx, r)
	}, text("second"))
	s := h.session()
	t1, _ := s.Prompt(context.Background(), []event.ContentBlock{event.Text("a")})
	<-inCall // turn 1 is running
	t2, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("b")})
	if err != nil {
		t.Fatal(err)
	}
	// The second receipt is committed at enqueue, while turn 1 runs.
	found := false
	for _, e := range s.Events() {
		if e.Seq == t2.ReceiptSeq && e.Type == event.TypeInboxSpliced {
			found = true
		}
	}
	if !found {
		t.Fatal("receipt of queued prompt not committed at enqueue")
	}
	close(gate)
	<-t1.Done()
	<-t2.Done()
	if t1.Result().Turn != 1 || t2.Result().Turn != 2 || t2.Result().Text != "second" {
		t.Fatalf("t1 %+v t2 %+v", t1.Result(), t2.Result())
	}
}

func TestLoopDetectionAndStepCap(t *testing.T) {
	same := model.ToolCall{ID: "", Name: "glob", Arguments: `{"pattern":"*.none"}`}
	var steps []stepFunc
	for i := 0; i < 20; i++ {
		steps = append(steps, calls(same))
	}
	h := newHarness(t, steps...)
	s := h.session()
	res := run(t, s, "loop")
	if res.Reason.Kind != event.ReasonBlocked || !strings.Contains(res.Reason.Detail, "loop") {
		t.Fatalf("reason %+v", res.Reason)
	}
	if n := len(h.prov.requests()); n != DefaultLoopStopAt {
		t.Fatalf("stopped after %d steps, want %d", n, DefaultLoopStopAt)
	}

	h2 := newHarness(t)
	for i := 0; i < 10; i++ {
		h2.prov.steps = append(h2.prov.steps, calls(model.ToolCall{Name: "glob", Arguments: fmt.Sprintf(`{"pattern":"x%d"}`, i)}))
	}
	rt, _ := New(Config{Store: store.New(h2.root), NewProvider: func(string) (model.Provider, error) { return h2.prov, nil },
		Defaults: event.Config{Provider: "test", Model: "m"}, PermissionMode: permission.ModeFull, Tools: tool.Builtins(), StepCap: 3})
	defer rt.Close(context.Background())
	s2, _ := rt.Create(context.Background(), SessionOptions{Cwd: h2.cwd})
	if res := run(t, s2, "cap"); res.Reason.Kind != event.ReasonBlocked || !strings.Contains(res.Reason.Detail, "step cap") {
		t.Fatalf("step cap: %+v", res.Reason)
	}
}

func TestSubscriptionDeliversEveryEventInOrder(t *testing.T) {
	var steps []stepFunc
	for i := 0; i < 20; i++ {
		steps = append(steps, text(fmt.Sprint(i)))
	}
	h := newHarness(t, steps...)
	sub := h.rt.Subscribe()
	defer sub.Close()
	done := make(chan struct{})
	counts := map[string][]int64{}
	var mu sync.Mutex
	// The subscriber stops once it has every event; it learns how many
	// there are when the turns are over.
	totalc := make(chan int)
	go func() {
		defer close(done)
		received, total := 0, -1
		for total < 0 || received < total {
			select {
			case n := <-sub.C():
				if n.Kind != NoticeEvent {
					continue
				}
				time.Sleep(100 * time.Microsecond) // a slow subscriber
				mu.Lock()
				counts[n.SessionID] = append(counts[n.SessionID], n.Event.Seq)
				mu.Unlock()
				received++
			case total = <-totalc:
			}
		}
	}()
	var wg sync.WaitGroup
	var sessions []*Session
	for i := 0; i < 4; i++ {
		s := h.session()
		sessions = append(sessions, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				run(t, s, "p")
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, s := range sessions {
		total += len(s.Events())
	}
	totalc <- total
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the subscriber did not get all %d events: %v", total, counts)
	}
	for _, s := range sessions {
		mu.Lock()
		seqs := counts[s.ID()]
		mu.Unlock()
		if len(seqs) != len(s.Events()) {
			t.Fatalf("session %s: delivered %d of %d events", s.ID(), len(seqs), len(s.Events()))
		}
		for i, q := range seqs {
			if q != int64(i) {
				t.Fatalf("session %s: seq %d at %d", s.ID(), q, i)
			}
		}
	}
}

func TestResumeKeepsRequestsPrefixStable(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	h := newHarness(t,
		calls(model.ToolCall{ID: "r1", Name: "read", Arguments: fmt.Sprintf(`{"file_path":%q}`, filepath.Join(dir, "a.txt"))}),
		text("read it"), text("second turn"), text("after resume"))
	s := h.session()
	run(t, s, "first")
	run(t, s, "again")
	s2 := reopen(t, s, h.newRuntime())
	run(t, s2, "third")
	reqs := h.prov.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := marshalMsgs(reqs[i-1].Messages), marshalMsgs(reqs[i].Messages)
		if len(cur) < len(prev) {
			t.Fatalf("request %d shorter than %d", i, i-1)
		}
		for j := range prev {
			if prev[j] != cur[j] {
				t.Fatalf("request %d message %d changed:\n%s\n%s", i, j, prev[j], cur[j])
			}
		}
	}
}

func marshalMsgs(ms []model.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		b, _ := json.Marshal(m)
		out[i] = string(b)
	}
	return out
}

func TestGetOrCreateCoalesces(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	got := make([]*Session, 16)
	errs := make([]error, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = h.rt.GetOrCreate(context.Background(), "shared-id", SessionOptions{Cwd: h.cwd})
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("call %d: %v %p vs %p", i, errs[i], got[i], got[0])
		}
	}
	if _, err := h.rt.Create(context.Background(), SessionOptions{ID: "shared-id", Cwd: h.cwd}); !errors.Is(err, ErrLive) {
		t.Fatalf("create of a live id: %v", err)
	}
}

func TestPermissionRefusalIsAResultAndRecorded(t *testing.T) {
	h := newHarness(t, calls(model.ToolCall{ID: "w", Name: "write", Arguments: `{"file_path":"/etc/dsh-test-never","content":"x"}`}), text("ok"))
	rt, _ := New(Config{Store: store.New(h.root), NewProvider: func(string) (model.Provider, error) { return h.prov, nil },
		Defaults: event.Config{Provider: "test", Model: "m"}, PermissionMode: permission.ModeAuto, Tools: tool.Builtins()})
	defer rt.Close(context.Background())
	s, _ := rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if res := run(t, s, "write outside"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	var decided, denied bool
	for _, e := range s.Events() {
		switch e.Type {
		case event.TypePermissionDecision:
			d, _ := event.Decode[event.PermissionDecision](e)
			decided = d.Decision == "deny"
		case event.TypeToolResult:
			tr, _ := event.Decode[event.ToolResult](e)
			denied = tr.Error != nil && tr.Error.Code == event.ToolPermissionDenied
		}
	}
	if !decided || !denied {
		t.Fatalf("decision recorded %v, denied result %v", decided, denied)
	}
	if _, err := os.Stat("/etc/dsh-test-never"); err == nil {
		t.Fatal("file written outside the workspace")
	}
}

// TestCoreImportsNoDoor enforces the rule of direction (ARCHITECTURE.md §2).
func TestCoreImportsNoDoor(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/dsh-dev/dsh/core/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, bad := range []string{"github.com/dsh-dev/dsh/acp", "github.com/dsh-dev/dsh/sdkrpc", "github.com/dsh-dev/dsh/subagent",
			"github.com/dsh-dev/dsh/cmd", "github.com/coder/acp-go-sdk", "github.com/sourcegraph/jsonrpc2"} {
			if line == bad || strings.HasPrefix(line, bad+"/") {
				t.Errorf("core depends on %s", line)
			}
		}
	}
}

// BenchmarkStepOverhead measures the harness's own cost per step: turns of
// 10 steps (9 todo_write calls and a final text) against a provider that
// answers instantly. "nosync" excludes fsync (the target, under
// 1 ms per step); "fsync" is the same with the log's commit points synced.
func BenchmarkStepOverhead(b *testing.B) {
	b.Run("nosync", func(b *testing.B) { benchSteps(b, true) })
	b.Run("fsync", func(b *testing.B) { benchSteps(b, false) })
}

func benchSteps(b *testing.B, noSync bool) {
	root, cwd := b.TempDir(), b.TempDir()
	prov := &loopingProvider{}
	st := store.New(root)
	if noSync {
		st = st.WithoutSync()
	}
	rt, _ := New(Config{Store: st, NewProvider: func(string) (model.Provider, error) { return prov, nil },
		Defaults: event.Config{Provider: "test", Model: "m"}, PermissionMode: permission.ModeFull, Tools: tool.Builtins()})
	defer rt.Close(context.Background())
	s, _ := rt.Create(context.Background(), SessionOptions{Cwd: cwd})
	b.ResetTimer()
	steps := 0
	for i := 0; i < b.N; i++ {
		tk, _ := s.Prompt(context.Background(), []event.ContentBlock{event.Text("go")})
		<-tk.Done()
		steps += 10
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps)/1e3, "µs/step")
}

type loopingProvider struct{ n atomic.Int64 }

func (p *loopingProvider) Name() string           { return "test" }
func (p *loopingProvider) Caps(string) model.Caps { return model.Caps{} }
func (p *loopingProvider) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	n := p.n.Add(1)
	if n%10 == 0 {
		return &model.Response{Text: "done", FinishReason: "stop"}, nil
	}
	return &model.Response{FinishReason: "tool_calls", ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("c%d", n), Name: "todo_write",
		Arguments: fmt.Sprintf(`{"todos":[{"content":"step %d","status":"in_progress"}]}`, n)}}}, nil
}

// TestResumeRequeuesUnclaimedPrompts: a prompt whose receipt was committed
// but that no turn claimed before a crash is neither lost nor run unasked:
// the next prompt's turn claims it first.
func TestResumeRequeuesUnclaimedPrompts(t *testing.T) {
	h := newHarness(t, text("both"))
	st := store.New(h.root)
	lg, err := st.Create(store.Header{ID: "queued", Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	ev := event.New(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Inserted: []event.Message{
		{ID: "m1", Role: "user", Content: []event.ContentBlock{event.Text("queued before the crash")}, Source: event.Source{Kind: "user"}}}})
	if err := lg.Append(ev); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	s, err := h.rt.Resume(context.Background(), "queued", SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Running() || len(s.Events()) != 1 || len(h.prov.requests()) != 0 {
		t.Fatal("the unclaimed prompt was run on resume")
	}
	res := run(t, s, "new prompt")
	if res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	var users []string
	for _, m := range h.prov.requests()[0].Messages {
		if m.Role == "user" && !model.IsContext(m) {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, "|") != "queued before the crash|new prompt" {
		t.Fatalf("user messages of the turn: %q", users)
	}
}

// TestConfigChangesRaceFree changes model and mode while turns run and
// readers read them (run with -race).
func TestConfigChangesRaceFree(t *testing.T) {
	var steps []stepFunc
	for i := 0; i < 20; i++ {
		steps = append(steps, text("ok"))
	}
	h := newHarness(t, steps...)
	s := h.session()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			_ = s.SetConfig(event.Config{Provider: "test", Model: fmt.Sprint("m", i)})
			_ = s.SetMode(permission.ModeAsk)
		}
	}()
	for i := 0; i < 5; i++ {
		run(t, s, "go")
		_ = s.Config()
		_ = s.Mode()
	}
	<-done
	if got := s.Config().Model; got != "m19" {
		t.Fatalf("model %q after the changes", got)
	}
}

// TestResumeRequeuesClaimedButUnrecordedPrompt: a crash between a turn's
// claim and its user/message must not lose the prompt either.
func TestResumeRequeuesClaimedButUnrecordedPrompt(t *testing.T) {
	h := newHarness(t, text("answer"))
	st := store.New(h.root)
	lg, err := st.Create(store.Header{ID: "claimed", Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	for i, ev := range []event.Event{
		event.New(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Inserted: []event.Message{
			{ID: "m1", Role: "user", Content: []event.ContentBlock{event.Text("lost in the crash?")}, Source: event.Source{Kind: "user"}}}}),
		event.New(event.TypeTurnStart, event.TurnStart{Turn: 1}),
		event.New(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", RemovedCount: &one, Inserted: []event.Message{}}),
	} {
		ev.Seq = int64(i)
		if err := lg.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	lg.Close()
	s, err := h.rt.Resume(context.Background(), "claimed", SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "next")
	var users []string
	for _, m := range h.prov.requests()[0].Messages {
		if m.Role == "user" && !model.IsContext(m) {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, "|") != "lost in the crash?|next" {
		t.Fatalf("user messages: %q", users)
	}
}
