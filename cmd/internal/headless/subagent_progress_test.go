package headless

import (
	"bytes"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// A remote subagent's progress in the parent's log is outside the --json
// vocabulary: the stream writes nothing for it and goes on; the progress
// view on stderr ignores it too.
func TestSubagentProgressNotProjected(t *testing.T) {
	prog := event.New(event.TypeSubagentProgress, event.SubagentProgress{CallID: "c1", ChildSessionID: "kid",
		Kind: event.ProgressToolCall, Title: "Read main.go"})
	lines := projectEvents(t, toolCallEvent("c1", "subagent", `{"description":"d","prompt":"p"}`), prog,
		toolResultEvent("c1", "done", false))
	if len(lines) != 2 {
		t.Fatalf("the stream wrote %q, want the tool call and its result only", lines)
	}
	var stderr bytes.Buffer
	p := NewProgress(&stderr, ProgressOptions{})
	p.Event(prog)
	if stderr.Len() != 0 {
		t.Errorf("the progress view wrote %q for subagent/progress", stderr.String())
	}
}
