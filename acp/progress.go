package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// While the parent's subagent call runs, the child's tool calls and its
// latest message are shown in that call's content, so the editor's card
// says what the delegated agent is doing; the call's result replaces that
// content when it lands. The progress comes from two sources, rendered
// alike (childProgress):
//   - an in-process child (the inproc provider) is a child session of the
//     same runtime: when the parent's reader meets subagent/start, it
//     follows the child's cursor too (reader.noteChild), until
//     subagent/end;
//   - an out-of-process child (dsh-sdk, ACP agents) reports through the
//     gateway, which commits subagent/progress to the parent's log. Those
//     events replay with the rest on session/load: the log says what the
//     editor saw, the result that follows them replaces their content as it
//     did live, and a call that never got its result still shows how far
//     its child came.

// maxProgressLines bounds the child tool calls listed in one update.
const maxProgressLines = 12

// childProgress is what has been shown of one child, reader goroutine only.
type childProgress struct {
	lines   []string
	latest  string
	dropped int
}

// kid is an in-process child the reader follows: its cursor, read by the
// reader itself, and the waker that tells the reader the child committed.
type kid struct {
	callID string
	cur    *core.Cursor
	stop   context.CancelFunc
}

// noteChild follows a parent's subagent calls, so the events of an
// in-process child are shown in the parent's call: subagent/start starts
// following the child (from its first event: the child is created just
// before), subagent/end — committed after the child's last event of the
// call — reads what is left of the child and lets it go. Live events only.
func (r *reader) noteChild(ev event.Event) {
	switch ev.Type {
	case event.TypeSubagentStart:
		d, err := event.Decode[event.SubagentStart](ev)
		if err != nil || d.ChildSessionID == "" {
			return
		}
		child := r.a.rt.Get(d.ChildSessionID)
		if child == nil {
			return // gone already: its call's result shows what it did
		}
		r.dropKid(d.ChildSessionID)
		ctx, stop := context.WithCancel(context.Background())
		k := &kid{callID: d.CallID, cur: child.Follow(-1), stop: stop}
		if r.kids == nil {
			r.kids = map[string]*kid{}
		}
		r.kids[d.ChildSessionID] = k
		from := child.LastSeq() // read below; the waker kicks for what comes after
		r.a.readers.Add(1)      // this reader is counted: never zero here
		go func() {
			defer r.a.readers.Done()
			r.wake(ctx, child, from)
		}()
		r.readKid(k)
	case event.TypeSubagentEnd:
		d, err := event.Decode[event.SubagentEnd](ev)
		if err != nil {
			return
		}
		if k := r.kids[d.ChildSessionID]; k != nil && k.callID == d.CallID {
			r.readKid(k)
			r.dropKid(d.ChildSessionID)
		}
	}
}

// dropKid stops following a child.
func (r *reader) dropKid(id string) {
	if k := r.kids[id]; k != nil {
		k.stop()
		delete(r.kids, id)
	}
}

// wake kicks the reader each time the child commits after from, until ctx
// ends or the child has closed. It reads a cursor of its own only to learn of the
// commits; the reader reads the events.
func (r *reader) wake(ctx context.Context, child *core.Session, from int64) {
	c := child.Follow(from)
	for {
		if _, err := c.Next(ctx, 1<<16); err != nil {
			return
		}
		select {
		case r.kick <- struct{}{}:
		default: // a kick is pending: the reader reads every child then
		}
	}
}

// readKids shows what the followed children committed since last read.
func (r *reader) readKids() {
	for _, k := range r.kids {
		r.readKid(k)
	}
}

// readKid projects the child's committed events not read yet into its
// parent call.
func (r *reader) readKid(k *kid) {
	st := r.st
	for {
		evs, _, err := k.cur.Read(readBatch)
		if err != nil || len(evs) == 0 {
			return
		}
		for _, ev := range evs {
			if u, ok := st.proj.childEvent(k.callID, ev); ok {
				r.a.out.put(st.id, u)
			}
		}
	}
}

// childEvent projects one event of an in-process child into its parent
// call's content.
func (p *projector) childEvent(callID string, ev event.Event) (sdk.SessionUpdate, bool) {
	d := event.SubagentProgress{CallID: callID}
	switch ev.Type {
	case event.TypeToolCall:
		tc, err := event.Decode[event.ToolCall](ev)
		if err != nil {
			return sdk.SessionUpdate{}, false
		}
		d.Kind, d.Title = event.ProgressToolCall, p.st.s.ToolFacts(tc).Title
	case event.TypeAssistantMessage:
		am, err := event.Decode[event.AssistantMessage](ev)
		if err != nil {
			return sdk.SessionUpdate{}, false
		}
		d.Kind, d.Text = event.ProgressMessage, event.ProgressText(am.Message.Content)
	default:
		return sdk.SessionUpdate{}, false
	}
	return p.showProgress(d)
}

// subagentProgress projects a subagent/progress of the parent's log.
func (p *projector) subagentProgress(ev event.Event) ([]sdk.SessionUpdate, func()) {
	d, err := event.Decode[event.SubagentProgress](ev)
	if err != nil {
		return p.bad(ev, err)
	}
	if u, ok := p.showProgress(d); ok {
		return []sdk.SessionUpdate{u}, nil
	}
	return nil, nil
}

// subagentEnd forgets what was shown of the call's child: its result
// follows.
func (p *projector) subagentEnd(ev event.Event) ([]sdk.SessionUpdate, func()) {
	if d, err := event.Decode[event.SubagentEnd](ev); err == nil {
		delete(p.progress, d.CallID)
	}
	return nil, nil
}

// showProgress adds one step of a child to what its parent call shows and
// renders the call's content anew.
func (p *projector) showProgress(d event.SubagentProgress) (sdk.SessionUpdate, bool) {
	if d.CallID == "" {
		return sdk.SessionUpdate{}, false
	}
	if p.progress == nil {
		p.progress = map[string]*childProgress{}
	}
	cp := p.progress[d.CallID]
	if cp == nil {
		cp = &childProgress{}
		p.progress[d.CallID] = cp
	}
	switch d.Kind {
	case event.ProgressToolCall:
		cp.dropped += d.Skipped
		cp.lines = append(cp.lines, "▸ "+d.Title)
		if len(cp.lines) > maxProgressLines {
			cp.lines = cp.lines[1:]
			cp.dropped++
		}
	case event.ProgressMessage:
		if d.Text == "" {
			return sdk.SessionUpdate{}, false
		}
		cp.latest = d.Text
	default:
		return sdk.SessionUpdate{}, false
	}
	return sdk.UpdateToolCall(sdk.ToolCallId(d.CallID), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(cp.render()))})), true
}

// render is the call's content: the child's recent tool calls and its
// latest message.
func (cp *childProgress) render() string {
	var b strings.Builder
	b.WriteString("Subagent working")
	if cp.dropped > 0 {
		fmt.Fprintf(&b, " (%d earlier calls not shown)", cp.dropped)
	}
	b.WriteString(":\n")
	for _, l := range cp.lines {
		b.WriteString(l + "\n")
	}
	if cp.latest != "" {
		b.WriteString("\nLatest: " + cp.latest)
	}
	return b.String()
}
