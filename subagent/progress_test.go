package subagent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/tool"
)

// gateName is the FIFO a CHILD-GATE child's bash reads (in the harness's
// cwd): the child's run waits at it until the test opens it.
const gateName = "gate.fifo"

// gate is a FIFO a child blocks on until the test releases it.
type gate struct{ path string }

func newGate(t *testing.T, dir string) gate {
	t.Helper()
	g := gate{path: filepath.Join(dir, gateName)}
	if err := syscall.Mkfifo(g.path, 0o600); err != nil {
		t.Fatal(err)
	}
	return g
}

// release lets the reader through: the write end opened and closed. It
// blocks until a reader opens the FIFO, so it is only called once the
// child is known to be at the gate (or from cleanup, non-blocking).
func (g gate) release(t *testing.T) {
	t.Helper()
	w, err := os.OpenFile(g.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}

// unblock releases a reader if there is one, without waiting.
func (g gate) unblock() {
	if w, err := os.OpenFile(g.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}

// progressOf collects the subagent/progress events the parent session
// commits, as they are committed.
type progressOf struct {
	sub    *core.Subscription
	parent string
	got    []event.SubagentProgress
}

func watchProgress(t *testing.T, h *harness, parent string) *progressOf {
	w := &progressOf{sub: h.rt.Subscribe(), parent: parent}
	t.Cleanup(w.sub.Close)
	return w
}

// await waits until a progress event matching want has been committed.
func (w *progressOf) await(t *testing.T, what string, want func(event.SubagentProgress) bool) event.SubagentProgress {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		n, err := w.sub.Next(ctx)
		if err != nil {
			t.Fatalf("no subagent/progress %s while the child runs (%v); got %+v", what, err, w.got)
		}
		if n.Kind != core.NoticeEvent || n.SessionID != w.parent || n.Event.Type != event.TypeSubagentProgress {
			continue
		}
		d, err := event.Decode[event.SubagentProgress](n.Event)
		if err != nil {
			t.Fatal(err)
		}
		w.got = append(w.got, d)
		if want(d) {
			return d
		}
	}
}

// While a remote child runs, its tool calls and completed messages are
// committed to the parent's log as subagent/progress: the child is held at
// a gate until the parent's log shows both, then finishes.
func TestProgressWhileRunning(t *testing.T) {
	cases := map[string]struct {
		agent, prompt string
		title         string // the tool call's title in the progress
		dsh           bool
	}{
		"sdk":  {agent: ProviderDshSDK, prompt: "CHILD-GATE", title: "wait at the gate", dsh: true},
		"acp":  {agent: ProviderDshACP, prompt: "CHILD-GATE", title: "wait at the gate", dsh: true},
		"fake": {agent: "fake", prompt: "ACP-GATE ", title: "Read the gate"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, hopts{config: fakeConfig()})
			if c.dsh {
				needDoor(t, h, c.agent)
			}
			g := newGate(t, h.cwd)
			t.Cleanup(g.unblock)
			prompt := c.prompt
			if !c.dsh {
				prompt += g.path
			}
			p := h.parent(0)
			w := watchProgress(t, h, p.ID())
			done := make(chan tool.Result, 1)
			go func() {
				raw := []byte(`{"description":"gate task","prompt":` + jsonString(prompt) + `,"agent":` + jsonString(c.agent) + `}`)
				done <- h.tool.Run(context.Background(), raw, toolEnv(p))
			}()
			msg := w.await(t, "message", func(d event.SubagentProgress) bool { return d.Kind == event.ProgressMessage })
			call := w.await(t, "tool call", func(d event.SubagentProgress) bool { return d.Kind == event.ProgressToolCall })
			if msg.Text != "looking at the gate" || call.Title != c.title || call.CallID != "call_test" || call.ChildSessionID == "" ||
				msg.ChildSessionID != call.ChildSessionID {
				t.Errorf("progress while at the gate: %+v then %+v, want the message, then the call %q", msg, call, c.title)
			}
			g.release(t)
			r := <-done
			// (An ACP child's answer is all its message text.)
			if r.IsError || !strings.HasSuffix(resultText(r), "through the gate") {
				t.Fatalf("result %v %q", r.IsError, resultText(r))
			}
			checkProgressLog(t, p, call.ChildSessionID)
		})
	}
}

// checkProgressLog checks the parent's log: the progress of the call lies
// between its subagent/start and subagent/end, and its last message is the
// child's answer.
func checkProgressLog(t *testing.T, p *core.Session, child string) {
	t.Helper()
	var started, ended bool
	var last event.SubagentProgress
	for _, ev := range p.Events() {
		switch ev.Type {
		case event.TypeSubagentStart:
			started = true
		case event.TypeSubagentEnd:
			ended = true
		case event.TypeSubagentProgress:
			d, _ := event.Decode[event.SubagentProgress](ev)
			if !started || ended || d.ChildSessionID != child {
				t.Errorf("progress %+v outside its call's start and end (child %s)", d, child)
			}
			if d.Kind == event.ProgressMessage {
				last = d
			}
		}
	}
	if last.Text != "through the gate" {
		t.Errorf("the last message progress %+v, want the child's answer", last)
	}
}

// The reporter never makes the child wait for the parent's log: while a
// record is stuck, reports queue up to the bound, the oldest go (counted
// in the next event's Skipped) and a queued message is replaced by the
// next one.
func TestReporterBounds(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var got []event.SubagentProgress
	record := func(ev event.Event) {
		d, err := event.Decode[event.SubagentProgress](ev)
		if err != nil {
			t.Error(err)
		}
		got = append(got, d)
		if len(got) == 1 {
			entered <- struct{}{}
			<-release
		}
	}
	title := func(name, args string) string { return name + " " + args }
	r := newReporter(event.SubagentProgress{CallID: "c1", ChildSessionID: "kid"}, record, title)
	r.toolCall("", "bash", "0")
	<-entered // the writer is stuck in its first record
	const more = 100
	for i := 1; i <= more; i++ {
		r.toolCall("", "bash", strconv.Itoa(i))
	}
	r.message([]event.ContentBlock{event.Text("first")})
	r.message([]event.ContentBlock{event.Text("  " + strings.Repeat("é", 400) + " ")})
	close(release)
	r.close()
	r.toolCall("late", "", "") // after close: dropped

	kept := maxQueuedProgress - 1 // the message took one slot
	if len(got) != 1+kept+1 {
		t.Fatalf("%d events recorded, want %d", len(got), 1+kept+1)
	}
	first := got[1]
	if wantSkip := more - kept; first.Skipped != wantSkip || first.Title != "bash "+strconv.Itoa(wantSkip+1) {
		t.Errorf("first event after the stall %+v, want bash %d with %d skipped", first, wantSkip+1, wantSkip)
	}
	last := got[len(got)-1]
	if last.Kind != event.ProgressMessage || last.Text != strings.Repeat("é", 300)+"…" || last.CallID != "c1" || last.ChildSessionID != "kid" {
		t.Errorf("last event %+v, want the second message, cut to 300 runes", last)
	}
	if got[len(got)-2].Title != "bash "+strconv.Itoa(more) {
		t.Errorf("the last tool call is %+v", got[len(got)-2])
	}
}
