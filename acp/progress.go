package acp

import (
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
)

// A subagent run in this process (the inproc provider) is a child session of
// the same runtime: its committed events reach the door's subscription like
// the parent's. While the parent's subagent call runs, the child's tool
// calls and its latest message are shown in that call's content, so the
// editor's card says what the delegated agent is doing. The call's result
// replaces that content when it lands.

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

// noteChild records a parent's subagent/start, so the child's events are
// routed to the parent's call. Called by the subscription goroutine, which
// sees the start before any event of the child.
func (a *agent) noteChild(st *sessState, ev event.Event) {
	if ev.Type != event.TypeSubagentStart {
		return
	}
	d, err := event.Decode[event.SubagentStart](ev)
	if err != nil || d.ChildSessionID == "" {
		return
	}
	a.mu.Lock()
	if a.children == nil {
		a.children = map[string]childLink{}
	}
	a.children[d.ChildSessionID] = childLink{st: st, callID: d.CallID}
	a.mu.Unlock()
}

func (a *agent) childOf(id string) (childLink, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.children[id]
	return l, ok
}

// childEvent projects one event of a child into its parent call's content.
func (p *projector) childEvent(callID string, ev event.Event) (sdk.SessionUpdate, bool) {
	if p.progress == nil {
		p.progress = map[string]*childProgress{}
	}
	cp := p.progress[callID]
	if cp == nil {
		cp = &childProgress{}
		p.progress[callID] = cp
	}
	switch ev.Type {
	case event.TypeToolCall:
		tc, err := event.Decode[event.ToolCall](ev)
		if err != nil {
			return sdk.SessionUpdate{}, false
		}
		info, _ := p.a.describeCall(p.st, tc.CallID, tc.Name, tc.Arguments)
		cp.lines = append(cp.lines, "▸ "+info.title)
		if len(cp.lines) > maxProgressLines {
			cp.lines = cp.lines[1:]
			cp.dropped++
		}
	case event.TypeAssistantMessage:
		am, err := event.Decode[event.AssistantMessage](ev)
		if err != nil {
			return sdk.SessionUpdate{}, false
		}
		text := ""
		for _, b := range am.Message.Content {
			if b.Type == event.BlockText && strings.TrimSpace(b.Text) != "" {
				text = strings.TrimSpace(b.Text)
			}
		}
		if text == "" {
			return sdk.SessionUpdate{}, false
		}
		if r := []rune(text); len(r) > 300 {
			text = string(r[:300]) + "…"
		}
		cp.latest = text
	default:
		return sdk.SessionUpdate{}, false
	}
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
	return sdk.UpdateToolCall(sdk.ToolCallId(callID), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(b.String()))})), true
}
