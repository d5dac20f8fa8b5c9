package acp

import (
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
)

// While the parent's subagent call runs, the child's tool calls and its
// latest message are shown in that call's content, so the editor's card
// says what the delegated agent is doing; the call's result replaces that
// content when it lands. The progress comes from two sources, rendered
// alike (childProgress):
//   - an in-process child (the inproc provider) is a child session of the
//     same runtime: its committed events reach the door's subscription like
//     the parent's, routed by subagent/start's child session id;
//   - an out-of-process child (dsh-sdk, ACP agents) reports through the
//     gateway, which commits subagent/progress to the parent's log. Those
//     events replay with the rest on session/load: the log says what the
//     editor saw, the result that follows them replaces their content as it
//     did live, and a call that never got its result still shows how far
//     its child came.

// maxProgressLines bounds the child tool calls listed in one update.
const maxProgressLines = 12

// childLink is where a child session's progress is shown.
type childLink struct {
	st     *sessState
	callID string
}

// childProgress is what has been shown of one child, pump goroutine only.
type childProgress struct {
	lines   []string
	latest  string
	dropped int
}

// noteChild follows a parent's subagent calls, so the events of an
// in-process child are routed to the parent's call: subagent/start links
// the child, subagent/end (after the child's last event) unlinks it.
// Called by the subscription goroutine, which sees the start before any
// event of the child. Links of parent sessions closed since (a call whose
// end was never committed) are dropped when the next child is linked.
func (a *agent) noteChild(st *sessState, ev event.Event) {
	switch ev.Type {
	case event.TypeSubagentStart:
		d, err := event.Decode[event.SubagentStart](ev)
		if err != nil || d.ChildSessionID == "" {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.children == nil {
			a.children = map[string]childLink{}
		}
		for id, l := range a.children {
			if l.st.closed {
				delete(a.children, id)
			}
		}
		a.children[d.ChildSessionID] = childLink{st: st, callID: d.CallID}
	case event.TypeSubagentEnd:
		d, err := event.Decode[event.SubagentEnd](ev)
		if err != nil {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if l, ok := a.children[d.ChildSessionID]; ok && l.st == st && l.callID == d.CallID {
			delete(a.children, d.ChildSessionID)
		}
	}
}

func (a *agent) childOf(id string) (childLink, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.children[id]
	return l, ok
}

// childCount is how many child sessions are routed (tests).
func (a *agent) childCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.children)
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
