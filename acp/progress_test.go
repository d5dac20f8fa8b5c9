package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/tool"
)

// remoteTool plays the subagent gateway with an out-of-process child: it
// commits subagent/start, the child's progress, waits at its gate, then
// commits the last progress and subagent/end and answers.
type remoteTool struct {
	atGate  chan struct{}
	release chan struct{}
}

func (remoteTool) Name() string            { return "subagent" }
func (remoteTool) Description() string     { return "delegate" }
func (remoteTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (remoteTool) Kind() tool.Kind         { return tool.KindExecute }
func (remoteTool) ParallelSafe() bool      { return true }
func (remoteTool) Inspect(json.RawMessage, *tool.Env) (tool.Access, error) {
	return tool.Access{Title: "Subagent (remote): gate"}, nil
}

func (r remoteTool) Run(ctx context.Context, _ json.RawMessage, env *tool.Env) tool.Result {
	rec := func(typ string, data any) {
		if err := env.Record(event.New(typ, data)); err != nil {
			panic(err)
		}
	}
	kid := "remote-kid"
	rec(event.TypeSubagentStart, event.SubagentStart{CallID: env.CallID, Provider: "remote", ChildSessionID: kid})
	rec(event.TypeSubagentProgress, event.SubagentProgress{CallID: env.CallID, ChildSessionID: kid, Kind: event.ProgressMessage, Text: "looking at the gate"})
	rec(event.TypeSubagentProgress, event.SubagentProgress{CallID: env.CallID, ChildSessionID: kid, Kind: event.ProgressToolCall, Title: "Read the gate", Skipped: 2})
	close(r.atGate)
	select {
	case <-r.release:
	case <-ctx.Done():
		return tool.ErrorResult("cancelled")
	}
	rec(event.TypeSubagentProgress, event.SubagentProgress{CallID: env.CallID, ChildSessionID: kid, Kind: event.ProgressMessage, Text: "through the gate"})
	rec(event.TypeSubagentEnd, event.SubagentEnd{CallID: env.CallID, Provider: "remote", ChildSessionID: kid, StopReason: event.ReasonCompleted})
	return tool.TextResult("through the gate")
}

// progressText is the content text of a tool call update for callID.
func progressText(u sdk.SessionUpdate, callID string) (string, bool) {
	var content []sdk.ToolCallContent
	switch {
	case u.ToolCallUpdate != nil && string(u.ToolCallUpdate.ToolCallId) == callID:
		content = u.ToolCallUpdate.Content
	case u.ToolCall != nil && string(u.ToolCall.ToolCallId) == callID: // a replay's final state
		content = u.ToolCall.Content
	default:
		return "", false
	}
	var b strings.Builder
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
		}
	}
	return b.String(), true
}

// A remote child's subagent/progress shows in the parent's tool call while
// the call runs, rendered as an in-process child's progress; its result
// then replaces it. A session/load replays the progress before the result.
func TestRemoteSubagentProgress(t *testing.T) {
	const callID = "call_sub"
	h := start(t, hopts{script: script(
		step("toolCalls", calls(map[string]any{"id": callID, "name": "subagent", "arguments": map[string]any{}})),
		step("text", "parent done"))})
	rt := remoteTool{atGate: make(chan struct{}), release: make(chan struct{})}
	h.rt.RegisterTool(rt)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession().SessionId
	done := make(chan sdk.PromptResponse, 1)
	go func() { done <- h.promptText(id, "delegate") }()

	wantLive := "Subagent working (2 earlier calls not shown):\n▸ Read the gate\n\nLatest: looking at the gate"
	<-rt.atGate
	h.cl.waitFor(t, "the child's progress in the call", func() bool {
		for _, u := range h.cl.updates[id] {
			if txt, ok := progressText(u, callID); ok && txt == wantLive {
				return true
			}
		}
		return false
	})
	for _, u := range h.cl.got(id) {
		if tu := u.ToolCallUpdate; tu != nil && tu.Status != nil && *tu.Status == sdk.ToolCallStatusCompleted {
			t.Fatalf("the call completed while its child was at the gate")
		}
	}
	close(rt.release)
	if r := <-done; r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v", r)
	}
	live := callTexts(h.cl.got(id), callID)
	if n := len(live); n < 2 || live[n-1] != "through the gate" ||
		live[n-2] != "Subagent working (2 earlier calls not shown):\n▸ Read the gate\n\nLatest: through the gate" {
		t.Fatalf("the call showed %q, want the last progress, then the result", live)
	}

	h.cl.reset(id)
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	// The replay shows the call once, in its final state.
	if replayed := callTexts(h.cl.got(id), callID); strings.Join(replayed, "|") != live[len(live)-1] {
		t.Errorf("replay showed\n%q\nwant the last of live\n%q", replayed, live)
	}
}

// callTexts is the content of each of callID's updates that has some.
func callTexts(us []sdk.SessionUpdate, callID string) []string {
	var out []string
	for _, u := range us {
		if txt, ok := progressText(u, callID); ok && txt != "" {
			out = append(out, txt)
		}
	}
	return out
}

// A reader follows an in-process child from its subagent/start to the
// call's subagent/end (another call's end keeps it), and lets the children
// it still follows go when it ends: a long session does not accumulate
// them, and no waker goroutine outlives its reader.
func TestChildLinksPruned(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), script(step("text", "ok")), permission.ModeAuto)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	ctx := context.Background()
	session := func() *core.Session {
		s, err := rt.Create(ctx, core.SessionOptions{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := newAgent(rt, Options{Logger: testLogger(t)})
	parent := session()
	st := newSessState(a, parent.ID(), parent.Cwd())
	st.attach(a, parent)
	r := newReader(a, st, -1, false)
	startOf := func(call, kid string) event.Event {
		return event.New(event.TypeSubagentStart, event.SubagentStart{CallID: call, Provider: "inproc", ChildSessionID: kid})
	}
	endOf := func(call, kid string) event.Event {
		return event.New(event.TypeSubagentEnd, event.SubagentEnd{CallID: call, Provider: "inproc", ChildSessionID: kid, Local: true})
	}
	k1, k2 := session().ID(), session().ID()
	r.noteChild(startOf("c1", k1))
	r.noteChild(startOf("c2", k2))
	if len(r.kids) != 2 {
		t.Fatalf("%d children followed, want 2", len(r.kids))
	}
	r.noteChild(endOf("c9", k1)) // another call's end: kept
	r.noteChild(endOf("c1", k1))
	if _, ok := r.kids[k1]; ok || len(r.kids) != 1 {
		t.Fatalf("k1 still followed after its end (%d followed)", len(r.kids))
	}
	r.noteChild(startOf("c3", "session-gone")) // not live: nothing to follow
	if len(r.kids) != 1 {
		t.Fatalf("%d children followed, want 1", len(r.kids))
	}
	for id := range r.kids { // what the reader's finish does
		r.dropKid(id)
	}
	a.readers.Wait() // every waker ended
}
