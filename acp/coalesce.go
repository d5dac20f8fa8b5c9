package acp

import (
	"encoding/json"

	sdk "github.com/coder/acp-go-sdk"
)

// What the outbox may merge while the client is held to the pace: each rule
// keeps every fact the client would have had from the separate frames.

// absorb merges it into a queued update of its session that it continues
// or supersedes. Called with mu held.
func (o *outbox) absorb(it outItem) bool {
	u := it.update
	var q *outItem
	switch {
	case u.ToolCallUpdate != nil:
		q = o.queuedCall(it)
		if q != nil {
			mergeToolUpdate(q.update, u.ToolCallUpdate)
		}
	case isChunk(u):
		q = o.queuedChunk(it)
		if q != nil {
			appendChunk(q.update, u)
		}
	case snapshotKind(u) != "":
		q = o.queuedSnapshot(it)
		if q != nil {
			replaceSnapshot(q.update, u)
		}
	}
	if q == nil {
		return false
	}
	q.after = append(q.after, it.after...)
	o.reencode(q)
	return true
}

// reencode refreshes a merged item's encoding and the queue's byte count.
func (o *outbox) reencode(q *outItem) {
	line, err := json.Marshal(sdk.SessionNotification{SessionId: sdk.SessionId(q.session), Update: *q.update})
	if err != nil {
		line = nil // the writer encodes it again and reports the error
	}
	o.bytes += len(line) - q.size
	q.line, q.size = line, len(line)
}

// queuedCall finds the latest queued update of the same tool call, when
// only markers, snapshots and other calls' updates of the session lie
// between them (a message chunk between keeps the call's states apart: its
// place among tool calls is what the chat shows).
func (o *outbox) queuedCall(it outItem) *outItem {
	for i := len(o.items) - 1; i >= 0; i-- {
		q := &o.items[i]
		if q.update == nil || q.session != it.session {
			continue
		}
		if q.call == "" {
			if isChunk(q.update) {
				return nil
			}
			continue // a plan, usage or info snapshot: its order does not matter
		}
		if q.call == it.call {
			return q
		}
	}
	return nil
}

// queuedChunk finds the session's last queued update when it is a text
// chunk of the same kind and message, which the new chunk continues.
func (o *outbox) queuedChunk(it outItem) *outItem {
	for i := len(o.items) - 1; i >= 0; i-- {
		q := &o.items[i]
		if q.update == nil || q.session != it.session {
			continue
		}
		if continues(q.update, it.update) {
			return q
		}
		return nil
	}
	return nil
}

// queuedSnapshot finds a queued update of the session of the same snapshot
// kind: a plan, the usage, the modes, the commands, the config options or
// the session's info, each of which the newer one replaces or extends.
func (o *outbox) queuedSnapshot(it outItem) *outItem {
	kind := snapshotKind(it.update)
	for i := len(o.items) - 1; i >= 0; i-- {
		q := &o.items[i]
		if q.update != nil && q.session == it.session && snapshotKind(q.update) == kind {
			return q
		}
	}
	return nil
}

// isChunk reports a message chunk, whose place among tool calls is what the
// chat shows.
func isChunk(u *sdk.SessionUpdate) bool {
	return u.UserMessageChunk != nil || u.AgentMessageChunk != nil || u.AgentThoughtChunk != nil
}

// chunkParts are a chunk's kind, content and message id.
func chunkParts(u *sdk.SessionUpdate) (kind string, c *sdk.ContentBlock, id *string, meta bool) {
	switch {
	case u.UserMessageChunk != nil:
		return "user", &u.UserMessageChunk.Content, u.UserMessageChunk.MessageId, u.UserMessageChunk.Meta != nil
	case u.AgentMessageChunk != nil:
		return "agent", &u.AgentMessageChunk.Content, u.AgentMessageChunk.MessageId, u.AgentMessageChunk.Meta != nil
	case u.AgentThoughtChunk != nil:
		return "thought", &u.AgentThoughtChunk.Content, u.AgentThoughtChunk.MessageId, u.AgentThoughtChunk.Meta != nil
	}
	return "", nil, nil, false
}

// continues reports whether n is the next text of q's message: the same
// kind and message id, both plain text without _meta or annotations.
func continues(q, n *sdk.SessionUpdate) bool {
	qk, qc, qid, qm := chunkParts(q)
	nk, nc, nid, nm := chunkParts(n)
	if qk == "" || qk != nk || qm || nm || !plainText(qc) || !plainText(nc) {
		return false
	}
	if (qid == nil) != (nid == nil) || (qid != nil && *qid != *nid) {
		return false
	}
	return true
}

func plainText(c *sdk.ContentBlock) bool {
	return c.Text != nil && c.Text.Meta == nil && c.Text.Annotations == nil
}

// appendChunk appends n's text to the queued chunk q (continues holds).
func appendChunk(q, n *sdk.SessionUpdate) {
	_, qc, _, _ := chunkParts(q)
	_, nc, _, _ := chunkParts(n)
	t := *qc.Text // the queued block may be shared with its producer
	t.Text += nc.Text.Text
	qc.Text = &t
}

// snapshotKind names the updates that state the whole of something (ACP:
// a plan lists all its entries, a usage update the current totals), or ""
// for the rest.
func snapshotKind(u *sdk.SessionUpdate) string {
	switch {
	case u.Plan != nil:
		return "plan"
	case u.UsageUpdate != nil:
		return "usage"
	case u.AvailableCommandsUpdate != nil:
		return "commands"
	case u.CurrentModeUpdate != nil:
		return "mode"
	case u.ConfigOptionUpdate != nil:
		return "config"
	case u.SessionInfoUpdate != nil:
		return "info"
	}
	return ""
}

// replaceSnapshot makes the queued snapshot q say what n says; session
// info merges field by field, as the protocol applies it.
func replaceSnapshot(q, n *sdk.SessionUpdate) {
	if qi, ni := q.SessionInfoUpdate, n.SessionInfoUpdate; qi != nil {
		if ni.Title != nil {
			qi.Title = ni.Title
		}
		if ni.UpdatedAt != nil {
			qi.UpdatedAt = ni.UpdatedAt
		}
		if ni.Meta != nil {
			qi.Meta = ni.Meta
		}
		return
	}
	*q = *n
}

// mergeToolUpdate folds n into the queued update u of the same call: every
// field n carries replaces u's (ACP's own rule for tool_call_update).
func mergeToolUpdate(u *sdk.SessionUpdate, n *sdk.SessionToolCallUpdate) {
	if tc := u.ToolCall; tc != nil {
		takeValue(&tc.Status, n.Status)
		takeValue(&tc.Title, n.Title)
		takeValue(&tc.Kind, n.Kind)
		takeSet(&tc.Content, n.Content)
		takeSet(&tc.Locations, n.Locations)
		takeAny(&tc.RawInput, n.RawInput)
		takeAny(&tc.RawOutput, n.RawOutput)
		return
	}
	q := u.ToolCallUpdate
	takePtr(&q.Status, n.Status)
	takePtr(&q.Title, n.Title)
	takePtr(&q.Kind, n.Kind)
	takeSet(&q.Content, n.Content)
	takeSet(&q.Locations, n.Locations)
	takeAny(&q.RawInput, n.RawInput)
	takeAny(&q.RawOutput, n.RawOutput)
}

// The field rules of a merge: a field the newer update carries (non-nil)
// replaces the queued one's.
func takeValue[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

func takePtr[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

func takeSet[T any](dst *[]T, src []T) {
	if src != nil {
		*dst = src
	}
}

func takeAny(dst *any, src any) {
	if src != nil {
		*dst = src
	}
}

// coalesceReplay makes a replay say each thing once, in its final state: a
// tool call's later states fold into its tool_call (so a finished call is
// one update, with its status, content and locations), and of each snapshot
// (plan, usage, commands, mode, config options) only the last is kept. A
// message chunk between a call's states keeps them apart, as in the outbox:
// where a call sits among messages is what the chat shows.
func coalesceReplay(ups []sdk.SessionUpdate) []sdk.SessionUpdate {
	last := map[string]int{}
	for i := range ups {
		if k := snapshotKind(&ups[i]); k != "" && k != "info" {
			last[k] = i
		}
	}
	out := make([]sdk.SessionUpdate, 0, len(ups))
	open := map[string]int{} // call id -> its update in out
	for i := range ups {
		u := ups[i]
		if k := snapshotKind(&u); k != "" && k != "info" && last[k] != i {
			continue
		}
		if isChunk(&u) {
			clear(open)
			out = append(out, u)
			continue
		}
		switch {
		case u.ToolCallUpdate != nil:
			id := string(u.ToolCallUpdate.ToolCallId)
			if j, ok := open[id]; ok {
				mergeToolUpdate(&out[j], u.ToolCallUpdate)
				continue
			}
			open[id] = len(out)
		case u.ToolCall != nil:
			open[string(u.ToolCall.ToolCallId)] = len(out)
		}
		out = append(out, u)
	}
	return out
}
