package acp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// Bounds of what one update carries, so a frame stays far below the 10 MiB
// line cap of SDK-based clients and a huge diff does not freeze an editor.
const (
	maxUpdateText  = 64 << 10 // tool output shown in a tool call
	maxDiffBytes   = 2 << 20  // oldText + newText of one diff
	maxReplayImage = 6 << 20  // base64 bytes of one image replayed
)

// projector turns one session's committed events into ACP updates. It is
// used by the session's reader goroutine only (reader.go).
type projector struct {
	a  *agent
	st *sessState
	// The mode and model configuration last announced, to send
	// current_mode_update only when the mode changed.
	mode core.PermissionMode
	// The session's running cost when prices are configured, and the
	// last usage seen by a replay (sent once at its end).
	cost         float64
	costCurrency string
	lastUsage    *sdk.SessionUpdate
	// progress of subagents, by the parent call showing it (progress.go).
	progress map[string]*childProgress
}

func newProjector(a *agent, st *sessState) *projector {
	return &projector{a: a, st: st, mode: st.s.Mode()}
}

// project maps one event to updates; note, when set, records the reader's
// progress on tool calls (run under the session's progress lock once the
// updates are written).
func (p *projector) project(ev event.Event, replay bool) ([]sdk.SessionUpdate, func()) {
	switch ev.Type {
	case event.TypeUserMessage:
		if !replay {
			// The client sent it; echoing it would show it twice.
			return nil, nil
		}
		m, err := event.Decode[event.Message](ev)
		if err != nil {
			return p.bad(ev, err)
		}
		return p.userChunks(m.Content), nil

	case event.TypeAssistantMessage:
		return p.assistantMessage(ev, replay)

	case event.TypeToolCall:
		tc, err := event.Decode[event.ToolCall](ev)
		if err != nil {
			return p.bad(ev, err)
		}
		return p.toolCall(tc)

	case event.TypePermissionDecision:
		return p.permissionDecision(ev)

	case event.TypeToolResult:
		return p.toolResult(ev, replay)

	case event.TypeTodoWrite:
		return p.plan(ev)

	case event.TypeMCPServer:
		if m, err := event.Decode[event.MCPServer](ev); err == nil {
			if line := mcpNotice(m); line != "" {
				return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(line + "\n")}, nil
			}
		}
		return nil, nil

	case event.TypeHookRun:
		if h, err := event.Decode[event.HookRun](ev); err == nil {
			if line := hookNotice(h); line != "" {
				return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(line)}, nil
			}
		}
		return nil, nil

	case event.TypeSessionTitle:
		t, err := event.Decode[event.SessionTitle](ev)
		if err != nil {
			return p.bad(ev, err)
		}
		at := time.UnixMilli(ev.Time).UTC().Format(time.RFC3339Nano)
		return []sdk.SessionUpdate{{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{Title: &t.Title, UpdatedAt: &at}}}, nil

	case event.TypeSubagentStart:
		return p.subagentStart(ev)

	case event.TypeSubagentProgress:
		return p.subagentProgress(ev)

	case event.TypeSubagentEnd:
		return p.subagentEnd(ev)

	case event.TypeCompactionCheckpoint:
		cp, err := event.Decode[event.CompactionCheckpoint](ev)
		if err != nil {
			return p.bad(ev, err)
		}
		if cp.Trigger == event.CompactRewind {
			return nil, nil // the session/rewind before it is shown
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(compactionNotice(cp))}, nil

	case event.TypeRewind:
		if !replay {
			return nil, nil // /rewind answered with what it did
		}
		rw, err := event.Decode[event.Rewind](ev)
		if err != nil {
			return p.bad(ev, err)
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(rewindNotice(rw))}, nil

	case event.TypeCompactionTrim:
		tr, err := event.Decode[event.CompactionTrim](ev)
		if err != nil {
			return p.bad(ev, err)
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(trimNotice(tr))}, nil

	case event.TypeConfigChange:
		return p.configChange(ev, replay)

	}
	return nil, nil
}

// assistantMessage projects the agent's thought and message chunks of a committed message, and its usage.
func (p *projector) assistantMessage(ev event.Event, replay bool) ([]sdk.SessionUpdate, func()) {
	am, err := event.Decode[event.AssistantMessage](ev)
	if err != nil {
		return p.bad(ev, err)
	}
	var ups []sdk.SessionUpdate
	for _, b := range am.Message.Content {
		switch {
		case b.Type == event.BlockReasoning && b.Text != "":
			ups = append(ups, sdk.UpdateAgentThoughtText(b.Text))
		case b.Type == event.BlockText && b.Text != "":
			ups = append(ups, sdk.UpdateAgentMessageText(b.Text))
		}
	}
	if u, ok := p.usage(am); ok {
		if replay {
			p.lastUsage = &u // restored once, after the replay
		} else {
			ups = append(ups, u)
		}
	}
	return ups, nil
}

// permissionDecision projects an allowed call going in progress (the note marks a bash call as one the client's terminal may run).
func (p *projector) permissionDecision(ev event.Event) ([]sdk.SessionUpdate, func()) {
	d, err := event.Decode[event.PermissionDecision](ev)
	if err != nil {
		return p.bad(ev, err)
	}
	if d.Decision != "allow" {
		return nil, nil // the failed result follows
	}
	id := d.CallID
	return []sdk.SessionUpdate{sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress))}, func() {
		for i := range p.st.execs {
			if p.st.execs[i].id == id {
				p.st.execs[i].allowed = true
			}
		}
	}
}

// toolResult projects a call's final update, and a job's output on the call that started it.
func (p *projector) toolResult(ev event.Event, replay bool) ([]sdk.SessionUpdate, func()) {
	tr, err := event.Decode[event.ToolResult](ev)
	if err != nil {
		return p.bad(ev, err)
	}
	r := tr.Result()
	id := r.ToolCallID
	if id == "" {
		id = tr.Message.Source.CallID
	}
	ups := []sdk.SessionUpdate{p.result(id, r, tr.Meta, replay)}
	if u, ok := p.jobUpdate(id, r, tr.Meta); ok {
		ups = append(ups, u)
	}
	return ups, func() {
		p.st.calls[id] = true
		for i, x := range p.st.execs {
			if x.id == id {
				p.st.execs = append(p.st.execs[:i:i], p.st.execs[i+1:]...)
				break
			}
		}
	}
}

// plan projects the todo list as the plan.
func (p *projector) plan(ev event.Event) ([]sdk.SessionUpdate, func()) {
	tw, err := event.Decode[event.TodoWrite](ev)
	if err != nil {
		return p.bad(ev, err)
	}
	entries := make([]sdk.PlanEntry, 0, len(tw.Todos))
	for _, t := range tw.Todos {
		entries = append(entries, sdk.PlanEntry{Content: t.Content, Priority: sdk.PlanEntryPriorityMedium, Status: planStatus(t.Status)})
	}
	return []sdk.SessionUpdate{sdk.UpdatePlan(entries...)}, nil
}

// subagentStart projects the delegation, shown in the subagent call.
func (p *projector) subagentStart(ev event.Event) ([]sdk.SessionUpdate, func()) {
	d, err := event.Decode[event.SubagentStart](ev)
	if err != nil {
		return p.bad(ev, err)
	}
	text := fmt.Sprintf("Delegated to the %s subagent (session %s).", d.Provider, d.ChildSessionID)
	if d.Description != "" {
		text = fmt.Sprintf("Delegated to the %s subagent (session %s): %s", d.Provider, d.ChildSessionID, d.Description)
	}
	return []sdk.SessionUpdate{sdk.UpdateToolCall(sdk.ToolCallId(d.CallID),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}))}, nil
}

// configChange projects a mode or model change made elsewhere (the load response carries the current state).
func (p *projector) configChange(ev event.Event, replay bool) ([]sdk.SessionUpdate, func()) {
	if replay {
		return nil, nil // the load response carries the current state
	}
	cc, err := event.Decode[event.ConfigChange](ev)
	if err != nil {
		return p.bad(ev, err)
	}
	var ups []sdk.SessionUpdate
	if m := core.PermissionMode(cc.PermissionMode); m != "" && m != p.mode {
		p.mode = m
		ups = append(ups, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(m)}})
	}
	mode := p.mode
	ups = append(ups, sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{
		ConfigOptions: p.a.configOptions(cc.Config, mode)}})
	return ups, nil
}

func (p *projector) bad(ev event.Event, err error) ([]sdk.SessionUpdate, func()) {
	p.a.log.Warn("acp: event not projected", "session", p.st.id, "seq", ev.Seq, "type", ev.Type, "err", err)
	return nil, nil
}

// userChunks replays a user message: text as text, images re-read from the
// attachment store.
func (p *projector) userChunks(content []event.ContentBlock) []sdk.SessionUpdate {
	var ups []sdk.SessionUpdate
	for _, b := range content {
		switch b.Type {
		case event.BlockText:
			if b.Text != "" {
				ups = append(ups, sdk.UpdateUserMessageText(b.Text))
			}
		case event.BlockImage:
			if b.Attachment == nil {
				continue
			}
			data, err := p.st.s.LoadAttachment(b.Attachment)
			if err != nil || base64.StdEncoding.EncodedLen(len(data)) > maxReplayImage {
				ups = append(ups, sdk.UpdateUserMessageText(fmt.Sprintf("[image %s not shown]", b.Attachment.MediaType)))
				continue
			}
			ups = append(ups, sdk.UpdateUserMessage(sdk.ImageBlock(base64.StdEncoding.EncodeToString(data), b.Attachment.MediaType)))
		}
	}
	return ups
}

// usage turns the usage of a model call into a usage_update: tokens in
// context are what the next call will send back (input, cached input and
// this output); the size is the model's context window.
func (p *projector) usage(am event.AssistantMessage) (sdk.SessionUpdate, bool) {
	u := am.Usage
	if u == nil {
		return sdk.SessionUpdate{}, false
	}
	prov, err := p.a.rt.Provider(am.Message.Source.Provider)
	if err != nil {
		return sdk.SessionUpdate{}, false
	}
	size := prov.Caps(am.Message.Source.Model).ContextWindow
	if size <= 0 {
		return sdk.SessionUpdate{}, false
	}
	used := u.InputTokens + u.OutputTokens
	if u.CacheReadTokens != nil {
		used += *u.CacheReadTokens
	}
	upd := &sdk.SessionUsageUpdate{Used: int(used), Size: int(size)}
	if c, ok := p.spend(am); ok {
		upd.Cost = c
	}
	return sdk.SessionUpdate{UsageUpdate: upd}, true
}

// result is the final tool_call_update of a call: its status and its
// content — a diff for file changes, the client's terminal for a command
// run there (live only: after a restart that terminal is gone), else the
// bounded text the model saw.
func (p *projector) result(callID string, r event.ContentBlock, rawMeta json.RawMessage, replay bool) sdk.SessionUpdate {
	status := sdk.ToolCallStatusCompleted
	if r.IsError {
		status = sdk.ToolCallStatusFailed
	}
	opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(status)}
	var meta event.ToolMeta
	if len(rawMeta) > 0 {
		if err := json.Unmarshal(rawMeta, &meta); err != nil {
			p.a.log.Warn("acp: tool meta unreadable", "session", p.st.id, "call", callID, "err", err)
		}
	}
	text := event.ResultText(r)
	var content []sdk.ToolCallContent
	switch {
	case meta.Diff != nil && !r.IsError && !meta.Diff.Elided && diffSize(meta.Diff) <= maxDiffBytes:
		content = append(content, diffContent(meta.Diff))
	case meta.Diff != nil && !r.IsError:
		shown := text
		if d := meta.Diff.Unified; d != "" {
			shown = text + "\n" + d
		}
		content = append(content, sdk.ToolContent(sdk.TextBlock(bound(shown+"\n[the diff is too large to show in full]"))))
	case meta.Terminal != "" && !replay:
		content = append(content, sdk.ToolTerminalRef(meta.Terminal))
	case text != "":
		content = append(content, sdk.ToolContent(sdk.TextBlock(bound(text))))
	}
	if len(content) > 0 {
		opts = append(opts, sdk.WithUpdateContent(content))
	}
	if locs := locations(meta.Paths); len(locs) > 0 {
		opts = append(opts, sdk.WithUpdateLocations(locs))
	}
	return sdk.UpdateToolCall(sdk.ToolCallId(callID), opts...)
}

// jobUpdate shows a background job's output (from a job_output or
// job_kill result) on the bash call that started the job, so the editor's
// card for that call follows the job.
func (p *projector) jobUpdate(callID string, r event.ContentBlock, rawMeta json.RawMessage) (sdk.SessionUpdate, bool) {
	var meta struct {
		Job *event.JobRef `json:"job"`
	}
	if len(rawMeta) == 0 || json.Unmarshal(rawMeta, &meta) != nil || meta.Job == nil {
		return sdk.SessionUpdate{}, false
	}
	start := meta.Job.CallID
	p.st.progMu.Lock()
	_, known := p.st.calls[start]
	p.st.progMu.Unlock()
	if start == "" || start == callID || !known {
		return sdk.SessionUpdate{}, false
	}
	text := bound(event.ResultText(r))
	return sdk.UpdateToolCall(sdk.ToolCallId(start), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))})), true
}

func diffSize(d *event.Diff) int {
	n := len(d.NewText)
	if d.OldText != nil {
		n += len(*d.OldText)
	}
	return n
}

// bound keeps the head and tail of s within maxUpdateText bytes.
func bound(s string) string {
	if len(s) <= maxUpdateText {
		return s
	}
	head, tail := maxUpdateText*3/4, maxUpdateText/4
	h, t := s[:head], s[len(s)-tail:]
	for len(h) > 0 && !utf8.ValidString(h) {
		h = h[:len(h)-1]
	}
	for len(t) > 0 && !utf8.ValidString(t) {
		t = t[1:]
	}
	return fmt.Sprintf("%s\n[... %d bytes not shown ...]\n%s", h, len(s)-len(h)-len(t), t)
}

func planStatus(s string) sdk.PlanEntryStatus {
	switch s {
	case "in_progress":
		return sdk.PlanEntryStatusInProgress
	case "completed":
		return sdk.PlanEntryStatusCompleted
	}
	return sdk.PlanEntryStatusPending
}

func locations(paths []string) []sdk.ToolCallLocation {
	out := make([]sdk.ToolCallLocation, 0, len(paths))
	for _, p := range paths {
		if p != "" {
			out = append(out, sdk.ToolCallLocation{Path: p})
		}
	}
	return out
}

// toolCall is the tool_call update of a committed call: its recorded
// facts (core's; a call of an old log gets them computed on read), its
// bounded arguments. The note tracks the call, and a bash call as one the
// client's terminal may run — by the tool that ran, so a model's "Bash"
// is tracked as bash.
func (p *projector) toolCall(tc event.ToolCall) ([]sdk.SessionUpdate, func()) {
	f := p.st.s.ToolFacts(tc)
	opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(sdk.ToolKind(f.Kind)), sdk.WithStartStatus(sdk.ToolCallStatusPending),
		sdk.WithStartRawInput(rawInput(tc.Arguments, f.Paths))}
	if locs := locations(f.Paths); len(locs) > 0 {
		opts = append(opts, sdk.WithStartLocations(locs))
	}
	id, execute := tc.CallID, tc.Tool() == "bash" // the one tool that runs commands through the Executor
	return []sdk.SessionUpdate{sdk.StartToolCall(sdk.ToolCallId(tc.CallID), f.Title, opts...)}, func() {
		p.st.calls[id] = false
		if execute {
			p.st.execs = append(p.st.execs, execCall{id: id})
		}
	}
}

// hookNotice tells the user of a hook that failed (it blocked nothing) or
// of a Stop hook that kept the turn going; other outcomes show where they
// act (a refused tool call's result, a refused prompt's answer).
func hookNotice(h event.HookRun) string {
	switch {
	case h.Outcome == event.HookFailed:
		return fmt.Sprintf("\n\n*%s hook `%s` (%s) failed: %s*\n\n", h.Event, h.Command, h.Source, h.Message)
	case h.Outcome == event.HookBlocked && h.Event == "Stop":
		return fmt.Sprintf("\n\n*A Stop hook kept the turn going: %s*\n\n", h.Message)
	}
	return ""
}
