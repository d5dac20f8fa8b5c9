package headless

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// TestProgressNamesTheRunningCallAndItsOwnTime: the calls of a step are
// committed together and then run one batch after another; the spinner
// names the call that is running (not the last one announced), and each
// call is timed by its own recorded run time, not from the batch's start.
func TestProgressNamesTheRunningCallAndItsOwnTime(t *testing.T) {
	var out strings.Builder
	clock := time.Unix(0, 0)
	p := NewProgress(&out, ProgressOptions{TTY: true, Now: func() time.Time { return clock }})
	call := func(id, name, args string) event.Event {
		return event.New(event.TypeToolCall, event.ToolCall{CallID: id, Name: name, Arguments: args})
	}
	allow := func(id, name string) event.Event {
		return event.New(event.TypePermissionDecision, event.PermissionDecision{CallID: id, Tool: name, Decision: "allow", By: "mode"})
	}
	result := func(id string, ms int64) event.Event {
		return event.New(event.TypeToolResult, event.ToolResult{DurationMs: ms, Message: event.Message{Role: "user",
			Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: id, Content: []event.ContentBlock{event.Text("ok")}}}}})
	}
	spinner := func() string {
		s := out.String()
		i := strings.LastIndex(s, "\r")
		return s[i:]
	}

	p.Event(call("c1", "bash", `{"command":"sleep 3"}`))
	p.Event(call("c2", "read", `{"file_path":"a.go"}`))
	p.Event(allow("c1", "bash"))
	if s := spinner(); !strings.Contains(s, "running bash ·") {
		t.Errorf("while bash runs the spinner says %q", s)
	}
	clock = clock.Add(3 * time.Second)
	p.Event(result("c1", 3000))
	p.Event(allow("c2", "read"))
	if s := spinner(); !strings.Contains(s, "running read ·") {
		t.Errorf("while read runs the spinner says %q", s)
	}
	p.Event(result("c2", 1))
	got := out.String()
	for _, want := range []string{"✓ bash · 3.0s", "✓ read · 0.0s"} {
		if !strings.Contains(got, want) {
			t.Errorf("the view lacks %q:\n%q", want, got)
		}
	}
	if p.spin.label != "thinking" {
		t.Errorf("after the last result the spinner's label is %q", p.spin.label)
	}
}
