package headless

import (
	"bytes"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// A remote subagent's progress in the parent's log is outside the --json
// vocabulary: the stream writes nothing for it and goes on; the progress
// view on stderr shows the child's tool call under the subagent call, as it
// shows an in-process child's own tool calls.
func TestSubagentProgressOnStderrNotInJSON(t *testing.T) {
	prog := event.New(event.TypeSubagentProgress, event.SubagentProgress{CallID: "c1", ChildSessionID: "kid",
		Kind: event.ProgressToolCall, Title: "Read main.go"})
	lines := projectEvents(t, toolCallEvent("c1", "subagent", `{"description":"d","prompt":"p"}`), prog,
		toolResultEvent("c1", "done", false))
	if len(lines) != 2 {
		t.Fatalf("the stream wrote %q, want the tool call and its result only", lines)
	}
	var stderr bytes.Buffer
	p := NewProgress(&stderr, ProgressOptions{})
	p.Event(toolCallEvent("c1", "subagent", `{"description":"look","prompt":"p"}`))
	stderr.Reset()
	p.Event(prog)
	p.Event(event.New(event.TypeSubagentProgress, event.SubagentProgress{CallID: "c1", Kind: event.ProgressMessage, Text: "thinking aloud"}))
	p.ChildEvent("c1", toolCallEvent("k1", "read", `{"path":"go.mod"}`))
	p.ChildEvent("c1", toolResultEvent("k1", "module x", false))
	want := "dsh:   ↳ Read main.go · look\ndsh:   ↳ read: go.mod · look\n"
	if got := stderr.String(); got != want {
		t.Errorf("the progress view wrote %q, want %q", got, want)
	}
}
