package core

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// writeTurns writes a session of about n events shaped like real turns: a
// step that reasons and runs a tool, and a step that answers.
func writeTurns(tb testing.TB, st *store.Store, id, cwd string, n int) {
	tb.Helper()
	lg, err := st.Create(store.Header{ID: id, Cwd: cwd, Config: &event.Config{Provider: "test", Model: "m"}})
	if err != nil {
		tb.Fatal(err)
	}
	var seq int64
	add := func(typ string, data any) {
		ev := event.New(typ, data)
		ev.Seq = seq
		seq++
		if err := lg.Append(ev); err != nil {
			tb.Fatal(err)
		}
	}
	src := event.Source{Kind: "model", Provider: "test", Model: "m"}
	for turn := 1; seq < int64(n); turn++ {
		user := event.Message{ID: fmt.Sprint("u", turn), Role: "user", Source: event.Source{Kind: "user"},
			Content: []event.ContentBlock{event.Text(fmt.Sprintf("Turn %d: fix the failing test in pkg/%d.", turn, turn%17))}}
		one := 1
		add(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Inserted: []event.Message{user}})
		add(event.TypeTurnStart, event.TurnStart{Turn: turn})
		add(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", RemovedCount: &one, Inserted: []event.Message{}})
		add(event.TypeStepStart, event.Step{Turn: turn, Step: 1})
		add(event.TypeUserMessage, user)
		call := fmt.Sprintf("call_%d", turn)
		args := fmt.Sprintf(`{"command":"go test ./pkg/%d/...","description":"run the tests"}`, turn%17)
		add(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 1, Message: event.Message{ID: fmt.Sprint("a", turn),
			Role: "assistant", Source: src, Content: []event.ContentBlock{event.Reasoning("Run the tests first."),
				{Type: event.BlockToolCall, ID: call, Name: "bash", Arguments: args}}}})
		add(event.TypeToolCall, event.ToolCall{Turn: turn, Step: 1, CallID: call, Name: "bash", Arguments: args})
		out := strings.Repeat(fmt.Sprintf("--- FAIL: TestThing%d (0.00s)\n    thing_test.go:42: got 1, want 2\n", turn), 4)
		add(event.TypeToolResult, event.ToolResult{Turn: turn, Step: 1, Message: event.Message{ID: fmt.Sprint("r", turn), Role: "user",
			Source: event.Source{Kind: "tool", CallID: call}, Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: call,
				Content: []event.ContentBlock{event.Text(out)}}}}})
		add(event.TypeStepEnd, event.Step{Turn: turn, Step: 1})
		add(event.TypeStepStart, event.Step{Turn: turn, Step: 2})
		add(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 2, Message: event.Message{ID: fmt.Sprint("b", turn),
			Role: "assistant", Source: src, Content: []event.ContentBlock{event.Reasoning("Compare with 2."), event.Text("Fixed it.")}}})
		add(event.TypeStepEnd, event.Step{Turn: turn, Step: 2})
		add(event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: event.TurnEndReason{Kind: event.ReasonCompleted}})
	}
	if err := lg.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkResume10k opens a 10,000-event session from the store and
// rebuilds its in-memory state (the in-process part of a headless wake).
func BenchmarkResume10k(b *testing.B) {
	root, cwd := b.TempDir(), b.TempDir()
	st := store.New(root).WithoutSync()
	writeTurns(b, st, "long", cwd, 10_000)
	rt, _ := New(Config{Store: st, NewProvider: func(string) (model.Provider, error) { return &testProvider{}, nil },
		Defaults: event.Config{Provider: "test", Model: "m"}, PermissionMode: permission.ModeFull, Tools: tool.Builtins()})
	defer rt.Close(context.Background())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := rt.Resume(context.Background(), "long", SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(s.conv.msgs) < 3000 {
			b.Fatalf("%d messages", len(s.conv.msgs))
		}
		s.Close(context.Background())
	}
}
