package core

import (
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// This file keeps the conversation's size and the operations that shrink
// it: restoring a compaction checkpoint, dropping the oldest messages, and
// cutting a single message too big for the window.

const (
	// bytesPerToken is the estimate where no provider count exists (crush
	// and codex assume the same).
	bytesPerToken = 4
	// imageTokens is what one attached image is counted as.
	imageTokens = 1500
	// msgOverhead is what one message costs beyond its text (role, keys).
	msgOverhead = 16
)

// CompactedPrefix starts every message a compaction or trim puts in the
// history (the summary and the note on dropped messages), so the model,
// a reader of the requests and the fake model server (modeltest) can tell
// them from the conversation.
const CompactedPrefix = "[context compacted] "

// historySize tracks the size of the model-facing history: its bytes, and
// the token count the provider reported for the latest step, which is far
// better than an estimate.
type historySize struct {
	bytes int64
	// anchorTokens is the provider's prompt + completion count of the
	// latest step; anchorBytes the history's bytes right after that step's
	// message was folded. Growth since then is estimated from bytes.
	anchorTokens, anchorBytes int64
	anchored                  bool
}

func (h *historySize) observe(u *event.Usage) {
	if u == nil {
		return
	}
	t := u.InputTokens + u.OutputTokens
	if u.CacheReadTokens != nil {
		t += *u.CacheReadTokens
	}
	if u.CacheWriteTokens != nil {
		t += *u.CacheWriteTokens
	}
	if t <= 0 {
		return
	}
	h.anchorTokens, h.anchorBytes, h.anchored = t, h.bytes, true
}

// tokens estimates the prompt of the next request; fixed is the bytes of
// what the history does not hold (system prompt, tools).
func (h *historySize) tokens(fixed int64) int64 {
	if h.anchored {
		return h.anchorTokens + max(h.bytes-h.anchorBytes, 0)/bytesPerToken
	}
	return (h.bytes + fixed + bytesPerToken - 1) / bytesPerToken
}

func msgBytes(m *model.Message) int64 { return msgBytesCapped(m, 0) }

// msgBytesCapped is msgBytes of the message as sent: content longer than
// capBytes (when positive) is cut to it.
func msgBytesCapped(m *model.Message, capBytes int) int64 {
	content := len(m.Content)
	if capBytes > 0 && content > capBytes {
		content = capBytes
	}
	n := int64(content + len(m.Reasoning) + len(m.ToolCallID) + msgOverhead)
	for _, tc := range m.ToolCalls {
		n += int64(len(tc.ID) + len(tc.Name) + len(tc.Arguments) + msgOverhead)
	}
	for _, f := range m.ServerFields {
		n += int64(len(f.Name) + len(f.Value))
	}
	return n
}

// push appends a message to the history, keeping its size.
func (c *conversation) push(m model.Message) {
	c.msgs = append(c.msgs, m)
	c.size.bytes += msgBytesCapped(&m, c.itemCap)
}

// setItemCap changes the most bytes one message may send, recounting the
// size; the provider's count stays valid for the part it covered.
func (c *conversation) setItemCap(capBytes int) {
	if capBytes == c.itemCap {
		return
	}
	c.itemCap = capBytes
	old := c.size
	var b int64
	for i := range c.msgs {
		b += msgBytesCapped(&c.msgs[i], capBytes)
	}
	for _, atts := range c.atts {
		b += int64(len(atts)) * imageTokens * bytesPerToken
	}
	c.size.bytes = b
	if old.anchored {
		c.size.anchorBytes = max(old.anchorBytes+b-old.bytes, 0)
	}
}

// resize recounts the history's bytes after it was rewritten; the
// provider's count no longer applies.
func (c *conversation) resize() {
	c.size = historySize{}
	for i := range c.msgs {
		c.size.bytes += msgBytesCapped(&c.msgs[i], c.itemCap)
	}
	for _, atts := range c.atts {
		c.size.bytes += int64(len(atts)) * imageTokens * bytesPerToken
	}
}

// restore replaces the history with a checkpoint's.
func (c *conversation) restore(history []event.CheckpointMessage) {
	c.msgs = make([]model.Message, 0, len(history)+16)
	c.atts = nil
	c.pending = c.pending[:0]
	c.dropped, c.droppedReplies = 0, 0
	for _, h := range history {
		m := model.Message{Kind: h.Kind, Role: h.Role, Content: h.Content, Reasoning: h.Reasoning, ToolCallID: h.ToolCallID}
		for _, tc := range h.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		for _, f := range h.ServerFields {
			m.ServerFields = append(m.ServerFields, model.ServerField{Name: f.Name, Value: []byte(f.Value)})
		}
		if len(h.Attachments) > 0 {
			if c.atts == nil {
				c.atts = map[int][]*event.Attachment{}
			}
			c.atts[len(c.msgs)] = h.Attachments
		}
		c.msgs = append(c.msgs, m)
	}
	c.resize()
}

// checkpointServerFields are a kept message's server blocks as a
// checkpoint records them.
func checkpointServerFields(fs []model.ServerField) []event.CheckpointServerField {
	var out []event.CheckpointServerField
	for _, f := range fs {
		out = append(out, event.CheckpointServerField{Name: f.Name, Value: string(f.Value)})
	}
	return out
}

// pinned reports whether a trim must keep the message.
func pinned(m *model.Message) bool {
	switch m.Kind {
	case model.KindContext, model.KindSummary, model.KindNote:
		return true
	}
	return false
}

// trimUnits returns how many droppable messages, oldest first, must go to
// bring the history to at most limit tokens (fixed as in tokens), and the
// tokens that frees, never splitting a tool call from its results and
// never dropping the newest message. It may return less than needed when
// nothing more can go.
func (c *conversation) trimUnits(limit, fixed int64) (int, int64) {
	total := c.size.tokens(fixed)
	if total <= limit {
		return 0, 0
	}
	var drop int
	var freed int64
	last := len(c.msgs) - 1
	for i := 0; i < last; i++ {
		m := &c.msgs[i]
		if pinned(m) {
			continue
		}
		// a unit: a message, or an assistant message with its tool results.
		unit := msgBytesCapped(m, c.itemCap)
		n := 1
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			for i+n <= last && c.msgs[i+n].Role == "tool" {
				unit += msgBytesCapped(&c.msgs[i+n], c.itemCap)
				n++
			}
		}
		if i+n > last { // the unit holds the newest message
			break
		}
		drop += n
		freed += unit / bytesPerToken
		i += n - 1
		if total-freed <= limit {
			break
		}
	}
	return drop, freed
}

// trim drops the oldest n droppable messages and says so in a note where
// they were. Replaying the same trims on the same history drops the same
// messages, so a resumed session agrees with the one that trimmed.
func (c *conversation) trim(n int) {
	if n <= 0 {
		return
	}
	kept := make([]model.Message, 0, len(c.msgs)-n+1)
	keptAtts := map[int][]*event.Attachment{}
	notePos := -1
	for i := range c.msgs {
		m := c.msgs[i]
		if m.Kind == model.KindNote {
			continue // replaced by the new note
		}
		if n > 0 && !pinned(&m) {
			n--
			c.dropped++
			if m.Role == "assistant" {
				c.droppedReplies++
			}
			if notePos < 0 {
				notePos = len(kept)
			}
			continue
		}
		if a := c.atts[i]; a != nil {
			keptAtts[len(kept)] = a
		}
		kept = append(kept, m)
	}
	if notePos < 0 {
		notePos = 0
	}
	note := model.Message{Kind: model.KindNote, Role: "user", Content: fmt.Sprintf(
		"%s%d earlier messages (%d of them your replies) were dropped from this conversation to fit the context window.",
		CompactedPrefix, c.dropped, c.droppedReplies)}
	kept = append(kept, model.Message{})
	copy(kept[notePos+1:], kept[notePos:])
	kept[notePos] = note
	c.atts = nil
	for i, a := range keptAtts {
		if c.atts == nil {
			c.atts = map[int][]*event.Attachment{}
		}
		if i >= notePos {
			i++
		}
		c.atts[i] = a
	}
	c.msgs = kept
	c.resize()
}

// cutToFit cuts text to at most max bytes, head and tail kept on rune
// boundaries, saying what was cut and why.
func cutToFit(text string, max int) string {
	if len(text) <= max {
		return text
	}
	const note = "\n[... %d bytes cut here so this message fits the model's context window ...]\n"
	room := max - len(note) - 12
	if room < 0 {
		room = 0
	}
	head := room * 2 / 3
	tail := room - head
	h := strings.ToValidUTF8(text[:head], "")
	t := strings.ToValidUTF8(text[len(text)-tail:], "")
	return h + fmt.Sprintf(note, len(text)-len(h)-len(t)) + t
}
