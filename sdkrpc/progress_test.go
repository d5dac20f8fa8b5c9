package sdkrpc

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// A remote child's progress, committed to the parent's log by the subagent
// gateway, goes out as a session.event like every committed event, marked
// ignorable for clients that do not know the type.
func TestServer_SubagentProgressForwarded(t *testing.T) {
	p := newPeer(t, helloScript)
	p.initialize("")
	parent, err := p.rt.Create(context.Background(), core.SessionOptions{ID: "parent", Cwd: p.cwd})
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Record(event.New(event.TypeSubagentProgress, event.SubagentProgress{CallID: "c", ChildSessionID: "remote",
		Kind: event.ProgressToolCall, Title: "Read main.go"})); err != nil {
		t.Fatal(err)
	}
	f := p.next(func(f frame) bool {
		return f.Method == "session.event" && strings.Contains(string(f.Params), `"subagent/progress"`)
	})
	want := `"data":{"callId":"c","childSessionId":"remote","kind":"tool_call","title":"Read main.go"},"ignorable":true}`
	if !strings.Contains(string(f.Params), `"sessionId":"parent"`) || !strings.Contains(string(f.Params), want) {
		t.Fatalf("session.event %s, want the parent's event with %s", f.Params, want)
	}
}
