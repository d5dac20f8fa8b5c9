package subagent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/tool"
)

// bigAnswer is a child's answer far over MaxResultBytes, in lines.
var bigAnswer = func() string {
	var b strings.Builder
	for i := 0; b.Len() < 3*MaxResultBytes; i++ {
		fmt.Fprintf(&b, "finding %04d: something the child found in a file, with its line\n", i)
	}
	return b.String()
}()

// TestInprocResultBounded: the parent reads about 20 KB of a long answer,
// cut at a line end, told the size and where the whole is: saved in its
// own spill folder (readable without asking) and kept in the child's
// session.
func TestInprocResultBounded(t *testing.T) {
	h := newHarness(t, hopts{})
	p := h.parent(0)
	env := &tool.Env{SessionID: p.ID(), CallID: "call_big", Cwd: p.Cwd(), Record: p.Record, Spill: tool.NewSpill(t.TempDir())}
	r := h.tool.Run(context.Background(), []byte(`{"description":"big","prompt":"CHILD-BIG please"}`), env)
	got := resultText(r)
	if r.IsError || len(got) > MaxResultBytes+1024 || !strings.HasPrefix(got, bigAnswer[:1000]) {
		t.Fatalf("result: error %v, %d bytes", r.IsError, len(got))
	}
	cut := strings.Index(got, "[... the subagent's answer is ")
	if cut < 0 || got[cut-1] != '\n' || !strings.Contains(got, fmt.Sprintf("answer is %d bytes; the first %d are shown.", len(bigAnswer), cut)) {
		t.Fatalf("no cut note at a line end:\n%s", got[max(cut-200, 0):])
	}
	i := strings.Index(got, "saved in ")
	if i < 0 {
		t.Fatalf("no saved path: %s", got[cut:])
	}
	path := strings.SplitN(got[i+len("saved in "):], ":", 2)[0]
	if !env.Spill.Owns(path) {
		t.Fatalf("%s is not in the parent's spill folder %s", path, env.Spill.Dir())
	}
	if whole, err := os.ReadFile(path); err != nil || string(whole) != bigAnswer {
		t.Fatalf("saved answer: %d bytes, %v", len(whole), err)
	}
	// The child's session keeps the whole answer.
	var child string
	if j := strings.Index(got, "session session-"); j >= 0 {
		child = strings.TrimSuffix(strings.Fields(got[j+len("session "):])[0], ".]")
	}
	_, evs := h.childEvents(child)
	last := ""
	for _, ev := range evs {
		if ev.Type == event.TypeAssistantMessage {
			am, _ := event.Decode[event.AssistantMessage](ev)
			last = event.JoinText(am.Message.Content)
		}
	}
	if last != bigAnswer {
		t.Fatalf("child %q keeps %d bytes of the answer, want %d", child, len(last), len(bigAnswer))
	}
}

func TestBoundOutputShortAndNoSpill(t *testing.T) {
	if got := boundOutput("short", "c", "inproc", nil); got != "short" {
		t.Fatalf("short answer changed: %q", got)
	}
	got := boundOutput(bigAnswer, "session-x", "inproc", &tool.Env{})
	if len(got) > MaxResultBytes+512 || strings.Contains(got, "saved in") ||
		!strings.Contains(got, "It is kept whole as the last message of inproc's session session-x.]") {
		t.Fatalf("without a spill folder: %s", got[len(got)-300:])
	}
}
