package store

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// turnEvents returns the events of one realistic turn, numbered from seq:
// a user prompt, a step with reasoning, text and one tool call with its
// result, then a final answer step. The payload sizes resemble real ones
// (a tool result of about 1 KiB).
func turnEvents(turn int, seq int64) []event.Event {
	callID := fmt.Sprintf("call_%d", turn)
	out := strings.Repeat("line of tool output with some text in it\n", 24)
	evs := []event.Event{
		event.New(event.TypeTurnStart, event.TurnStart{Turn: turn}),
		event.New(event.TypeStepStart, event.Step{Turn: turn, Step: 1}),
		event.New(event.TypeUserMessage, event.Message{ID: fmt.Sprintf("u%d", turn), Role: "user",
			Content: []event.ContentBlock{event.Text("please read the file main.go and tell me <what> it does & why")},
			Source:  event.Source{Kind: "user"}}),
		event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 1, Message: event.Message{
			ID: fmt.Sprintf("a%d.1", turn), Role: "assistant",
			Content: []event.ContentBlock{
				event.Reasoning("The user wants me to read main.go. I will call the read tool first and then explain."),
				event.Text("Let me read it."),
				{Type: event.BlockToolCall, ID: callID, Name: "read", Arguments: `{"file_path":"/src/main.go"}`},
			},
			Source: event.Source{Kind: "model", Provider: "deepseek-official", Model: "deepseek-flash"}},
			Usage: &event.Usage{InputTokens: 1200, OutputTokens: 80}}),
		event.New(event.TypeToolCall, event.ToolCall{Turn: turn, Step: 1, CallID: callID, Name: "read",
			Arguments: `{"file_path":"/src/main.go"}`}),
		event.New(event.TypeToolResult, event.ToolResult{Turn: turn, Step: 1, Message: event.Message{
			ID: fmt.Sprintf("t%d", turn), Role: "user",
			Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: callID,
				Content: []event.ContentBlock{event.Text(out)}}},
			Source: event.Source{Kind: "tool", CallID: callID}}}),
		event.New(event.TypeStepEnd, event.Step{Turn: turn, Step: 1}),
		event.New(event.TypeStepStart, event.Step{Turn: turn, Step: 2}),
		event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 2, Message: event.Message{
			ID: fmt.Sprintf("a%d.2", turn), Role: "assistant",
			Content: []event.ContentBlock{event.Text("It is the entry point of the program; it parses flags and runs the server.")},
			Source:  event.Source{Kind: "model", Provider: "deepseek-official", Model: "deepseek-flash"}}}),
		event.New(event.TypeStepEnd, event.Step{Turn: turn, Step: 2}),
		event.New(event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: event.TurnEndReason{Kind: event.ReasonCompleted}}),
	}
	for i := range evs {
		evs[i].Seq = seq + int64(i)
		evs[i].Time = 1_700_000_000_000 + evs[i].Seq
	}
	return evs
}

// sessionEvents returns at least n events made of whole turns.
func sessionEvents(n int) []event.Event {
	var evs []event.Event
	for turn := 1; len(evs) < n; turn++ {
		evs = append(evs, turnEvents(turn, int64(len(evs)))...)
	}
	return evs
}

// seqd numbers evs from seq onwards (in place) and returns them.
func seqd(seq int64, evs ...event.Event) []event.Event {
	for i := range evs {
		evs[i].Seq = seq + int64(i)
	}
	return evs
}

// createWith creates session id in a new store and appends evs.
func createWith(t testing.TB, id string, evs []event.Event) (*Store, string) {
	t.Helper()
	s := New(filepath.Join(t.TempDir(), "sessions"))
	l, err := s.Create(Header{ID: id, Cwd: "/work/project"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for _, ev := range evs {
		if err := l.Append(ev); err != nil {
			t.Fatalf("Append seq %d: %v", ev.Seq, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return s, filepath.Join(l.Dir(), logFile)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equalEvents(t testing.TB, got, want []event.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("event %d differs:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func types(evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}
