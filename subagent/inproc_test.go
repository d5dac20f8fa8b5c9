package subagent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
)

func TestToolBadArguments(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	env := toolEnv(p)
	cases := []struct{ args, want string }{
		{`[]`, "expected a JSON object"},
		{`{"prompt": "x"}`, "description is required"},
		{`{"description": "d"}`, "prompt is required"},
		{`{"description": "d", "prompt": "  "}`, "prompt is required"},
		{`{"description": 3, "prompt": "x"}`, "description must be a string"},
		{`{"description": "d", "prompt": "x", "agent": "ghost"}`, `unknown agent "ghost"; available: dsh-acp, dsh-sdk, inproc`},
	}
	for _, c := range cases {
		if _, err := h.tool.Inspect(json.RawMessage(c.args), env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("inspect %s: err = %v, want %q", c.args, err, c.want)
		}
		r := h.tool.Run(context.Background(), json.RawMessage(c.args), env)
		if !r.IsError || !strings.Contains(resultText(r), c.want) {
			t.Errorf("run %s: %q", c.args, resultText(r))
		}
	}
	if len(h.rt.Sessions()) != 1 {
		t.Fatalf("a bad call created sessions: %d live", len(h.rt.Sessions()))
	}
}

func TestToolShape(t *testing.T) {
	h := newHarness(t, hopts{config: `{"ext": {"protocol": "acp", "command": ["my-agent"]}}`})
	if h.tool.Name() != "subagent" || h.tool.Kind() != "execute" || !h.tool.ParallelSafe() {
		t.Fatal("tool identity")
	}
	var s struct {
		Required   []string `json:"required"`
		Properties struct {
			Agent struct {
				Enum []string `json:"enum"`
			} `json:"agent"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(h.tool.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Required, ",") != "description,prompt" || strings.Join(s.Properties.Agent.Enum, ",") != "dsh-acp,dsh-sdk,ext,inproc" {
		t.Fatalf("schema %s", h.tool.Schema())
	}
	if d := h.tool.Description(); !strings.Contains(d, "- inproc: a child session in this process (default)") ||
		!strings.Contains(d, "- ext: an ACP agent (my-agent)") {
		t.Fatalf("description:\n%s", d)
	}
	if string(h.tool.Schema()) != string(NewTool(h.rt, h.reg).Schema()) {
		t.Fatal("schema is not byte-stable")
	}
}

func TestInprocSuccess(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	rec := newRecorder()
	r := h.call(context.Background(), p, rec, map[string]any{"description": "answer", "prompt": "CHILD-OK please"})
	if r.IsError || resultText(r) != "child result: 42" {
		t.Fatalf("result %v %q", r.IsError, resultText(r))
	}
	starts, ends := rec.of(event.TypeSubagentStart), rec.of(event.TypeSubagentEnd)
	if len(starts) != 1 || len(ends) != 1 {
		t.Fatalf("starts %d ends %d", len(starts), len(ends))
	}
	st, _ := event.Decode[event.SubagentStart](starts[0])
	en, _ := event.Decode[event.SubagentEnd](ends[0])
	if st.Provider != "inproc" || st.CallID != "call_test" || st.Description != "answer" || st.ChildSessionID == "" {
		t.Fatalf("start %+v", st)
	}
	if en.ChildSessionID != st.ChildSessionID || !en.Local || en.StopReason != "completed" || en.Output != "child result: 42" {
		t.Fatalf("end %+v", en)
	}
	hd, evs := h.childEvents(st.ChildSessionID)
	if hd.ParentSession != p.ID() || hd.DelegationDepth != 1 || hd.Origin != "subagent" || hd.Cwd != p.Cwd() {
		t.Fatalf("child header %+v", hd)
	}
	if lastTurnEnd(evs).Kind != "completed" {
		t.Fatalf("child turn end %+v", lastTurnEnd(evs))
	}
	if h.rt.Get(st.ChildSessionID) != nil {
		t.Fatal("the child session is still live after the call")
	}
	// Both events are in the parent's durable log too.
	if _, pevs := h.childEvents(p.ID()); countType(pevs, event.TypeSubagentStart) != 1 || countType(pevs, event.TypeSubagentEnd) != 1 {
		t.Fatal("parent log lacks the subagent events")
	}
}

// TestInprocChildCompacts: a child whose work outgrows the window compacts
// in its own log, and only its final answer reaches the parent.
func TestInprocChildCompacts(t *testing.T) {
	h := newHarness(t, hopts{window: 12000})
	p := h.parent(0)
	rec := newRecorder()
	r := h.call(context.Background(), p, rec, map[string]any{"description": "long", "prompt": "CHILD-COMPACT go"})
	if r.IsError || resultText(r) != "child compacted answer" {
		t.Fatalf("result %v %q", r.IsError, resultText(r))
	}
	st, _ := event.Decode[event.SubagentStart](rec.of(event.TypeSubagentStart)[0])
	_, cevs := h.childEvents(st.ChildSessionID)
	if countType(cevs, event.TypeCompactionCheckpoint) == 0 {
		t.Fatal("the child did not compact")
	}
	_, pevs := h.childEvents(p.ID())
	if countType(pevs, event.TypeCompactionCheckpoint) != 0 || countType(pevs, event.TypeCompactionStart) != 0 {
		t.Fatal("the parent's log holds a compaction")
	}
	for _, ev := range pevs {
		if strings.Contains(string(ev.Data), "context compacted") {
			t.Fatalf("the child's summary reached the parent: %s", ev.Data)
		}
	}
}

func countType(evs []event.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func TestInprocFailures(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	cases := []struct{ prompt, want string }{
		{"CHILD-ERR", "subagent run failed\nDiagnostic: AUTH: bad key"},
		{"CHILD-MAX", "subagent run hit its token limit before finishing\nDiagnostic: the child's turn ended max-tokens\nPartial output before the run ended:\npartial answ"},
		{"CHILD-REFUSE", "subagent declined the task\nDiagnostic: the child's turn ended refusal\nPartial output before the run ended:\nno"},
	}
	for _, c := range cases {
		rec := newRecorder()
		r := h.call(context.Background(), p, rec, map[string]any{"description": "fail", "prompt": c.prompt})
		if !r.IsError || resultText(r) != c.want {
			t.Errorf("%s: %v %q, want %q", c.prompt, r.IsError, resultText(r), c.want)
		}
		if len(rec.of(event.TypeSubagentEnd)) != 1 {
			t.Errorf("%s: no subagent/end", c.prompt)
		}
	}
}

func TestInprocCancelMidChild(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the child has streamed its second text delta: the child
	// forwards a delta after committing its chunk, so by then the first
	// delta ("one ") has reached the call's partial output.
	sub := h.rt.Subscribe()
	defer sub.Close()
	var cancelledAt time.Time
	go func() {
		texts := 0
		for {
			n, err := sub.Next(context.Background())
			if err != nil {
				return
			}
			if n.Kind != core.NoticeEvent || n.SessionID == p.ID() || n.Event.Type != event.TypeAssistantChunk {
				continue
			}
			if c, err := event.Decode[event.AssistantChunk](n.Event); err == nil && c.Chunk.Type == event.ChunkTextDelta {
				if texts++; texts == 2 {
					cancelledAt = time.Now()
					cancel()
				}
			}
		}
	}()
	r := h.call(ctx, p, rec, map[string]any{"description": "slow", "prompt": "CHILD-SLOW go"})
	if took := time.Since(cancelledAt); took > 2*time.Second {
		t.Errorf("the call returned %v after the cancel", took)
	}
	text := resultText(r)
	if !r.IsError || !strings.HasPrefix(text, "subagent run was cancelled\nDiagnostic: the parent's turn was cancelled\nPartial output before the run ended:\none ") {
		t.Fatalf("result %v %q", r.IsError, text)
	}
	en, _ := event.Decode[event.SubagentEnd](rec.of(event.TypeSubagentEnd)[0])
	_, evs := h.childEvents(en.ChildSessionID)
	if te := lastTurnEnd(evs); te.Kind != "aborted" || te.Reason == nil || te.Reason.Kind != "parent" {
		t.Fatalf("child turn end %+v", te)
	}
}

func TestInprocDepthCap(t *testing.T) {
	h := newHarness(t, hopts{maxDepth: 2})
	p := h.parent(2)
	rec := newRecorder()
	r := h.call(context.Background(), p, rec, map[string]any{"description": "too deep", "prompt": "CHILD-OK"})
	if !r.IsError || !strings.HasPrefix(resultText(r), "delegation depth limit reached: this session runs at delegation depth 2 and subagents may nest at most 2 deep") {
		t.Fatalf("result %q", resultText(r))
	}
	if len(rec.events) != 0 || len(h.rt.Sessions()) != 1 {
		t.Fatalf("something was started: %d events, %d sessions", len(rec.events), len(h.rt.Sessions()))
	}

	// One level allowed: the child's own delegation is refused, the child
	// reads that and answers.
	h1 := newHarness(t, hopts{maxDepth: 1})
	p1 := h1.parent(0)
	rec1 := newRecorder()
	r1 := h1.call(context.Background(), p1, rec1, map[string]any{"description": "nest", "prompt": "CHILD-NEST"})
	if r1.IsError || resultText(r1) != "nested done" {
		t.Fatalf("result %v %q", r1.IsError, resultText(r1))
	}
	en, _ := event.Decode[event.SubagentEnd](rec1.of(event.TypeSubagentEnd)[0])
	_, evs := h1.childEvents(en.ChildSessionID)
	found := false
	for _, ev := range evs {
		if ev.Type == event.TypeToolResult && strings.Contains(string(ev.Data), "delegation depth limit reached") {
			found = true
		}
	}
	if !found {
		t.Fatal("the child's nested call was not refused")
	}
}

// The whole loop: the parent model asks for two subagents in one step;
// they run concurrently (both start before either ends).
func TestInprocParallelThroughLoop(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	tk, err := p.Prompt(context.Background(), []event.ContentBlock{event.Text("PARENT-PAR go")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tk.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("parent turn did not end")
	}
	if res := tk.Result(); res.Reason.Kind != "completed" || res.Text != "parent done" {
		t.Fatalf("parent result %+v", res)
	}
	var order []string
	results := 0
	for _, ev := range p.Events() {
		switch ev.Type {
		case event.TypeSubagentStart:
			order = append(order, "start")
		case event.TypeSubagentEnd:
			order = append(order, "end")
		case event.TypeToolResult:
			if strings.Contains(string(ev.Data), "brisk answer") {
				results++
			}
		}
	}
	if strings.Join(order, ",") != "start,start,end,end" {
		t.Fatalf("subagent events %v: the calls did not overlap", order)
	}
	if results != 2 {
		t.Fatalf("%d tool results carry the children's answers", results)
	}
}

// asker records what it is asked: it allows the subagent tool and rejects
// everything else.
type testAsker struct {
	mu   sync.Mutex
	reqs []permission.Request
}

func (a *testAsker) Ask(_ context.Context, req permission.Request) (permission.Answer, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	if req.Tool == ToolName {
		return permission.AllowOnce, nil
	}
	return permission.RejectOnce, nil
}

func (a *testAsker) asked(tool string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.reqs {
		if r.Tool == tool {
			return true
		}
	}
	return false
}

func TestInprocPermissionsGoToParentGate(t *testing.T) {
	asker := &testAsker{}
	h := newHarness(t, hopts{mode: permission.ModeAsk, asker: asker})
	p := h.parent(0)
	r := h.call(context.Background(), p, nil, map[string]any{"description": "write", "prompt": "CHILD-WRITE"})
	if r.IsError || resultText(r) != "write attempted" {
		t.Fatalf("result %v %q", r.IsError, resultText(r))
	}
	if !asker.asked("write") {
		t.Fatal("the child's write was not put to the parent's asker")
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "out.txt")); !os.IsNotExist(err) {
		t.Fatalf("the rejected write happened: %v", err)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := newRecorder()
	r := h.call(ctx, p, rec, map[string]any{"description": "never", "prompt": "CHILD-OK"})
	if !r.IsError || !strings.HasPrefix(resultText(r), "subagent run was cancelled\nDiagnostic: the parent's turn was cancelled before the subagent started") {
		t.Fatalf("result %q", resultText(r))
	}
	if len(h.rt.Sessions()) != 1 {
		t.Fatal("a child was created")
	}
}

// An in-process child works in its parent's workspace roots: the parent's
// additional directories are the child's too (recorded in its log).
func TestInprocChildGetsParentRoots(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	extra := t.TempDir()
	if err := p.SetAdditionalDirs([]string{extra}); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if r := h.call(context.Background(), p, rec, map[string]any{"description": "answer", "prompt": "CHILD-OK please"}); r.IsError {
		t.Fatalf("result %q", resultText(r))
	}
	st, _ := event.Decode[event.SubagentStart](rec.of(event.TypeSubagentStart)[0])
	_, evs := h.childEvents(st.ChildSessionID)
	var got []string
	for _, ev := range evs {
		if ev.Type == event.TypeSessionDirs {
			d, _ := event.Decode[event.SessionDirs](ev)
			got = d.AdditionalDirectories
		}
	}
	if len(got) != 1 || got[0] != extra {
		t.Fatalf("the child's roots are %v, want the parent's %v", got, extra)
	}
}
