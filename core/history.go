package core

import (
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// conversation is the model-facing history of a session, folded from its
// events as they commit so a step never re-reads or re-derives the log.
// Replaying the same events always yields the same messages, byte for byte
// once serialised: that is what keeps DeepSeek's prefix cache hitting
// across steps, turns and resumes.
type conversation struct {
	msgs []model.Message
	// atts holds the image attachments of user messages by message index;
	// their bytes are loaded only when a request is built.
	atts map[int][]*event.Attachment
	// pending are the calls of the last assistant message still without a
	// result, in call order.
	pending []string
}

func (c *conversation) add(ev event.Event) {
	switch ev.Type {
	case event.TypeUserMessage:
		m, err := event.Decode[event.Message](ev)
		if err != nil {
			return
		}
		c.closePending()
		for _, b := range m.Content {
			if b.Type == event.BlockImage && b.Attachment != nil {
				if c.atts == nil {
					c.atts = map[int][]*event.Attachment{}
				}
				c.atts[len(c.msgs)] = append(c.atts[len(c.msgs)], b.Attachment)
			}
		}
		c.msgs = append(c.msgs, model.Message{Role: "user", Content: event.JoinText(m.Content)})
	case event.TypeAssistantMessage:
		am, err := event.Decode[event.AssistantMessage](ev)
		if err != nil {
			return
		}
		c.closePending()
		var m model.Message
		m.Role = "assistant"
		var reasoning, text strings.Builder
		for _, b := range am.Message.Content {
			switch b.Type {
			case event.BlockReasoning:
				reasoning.WriteString(b.Text)
			case event.BlockText:
				text.WriteString(b.Text)
			case event.BlockToolCall:
				m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Arguments})
				c.pending = append(c.pending, b.ID)
			}
		}
		m.Reasoning, m.Content = reasoning.String(), text.String()
		c.msgs = append(c.msgs, m)
	case event.TypeToolResult:
		tr, err := event.Decode[event.ToolResult](ev)
		if err != nil || !ev.IsAppend() {
			return
		}
		r := tr.Result()
		// A result answers a pending call; results arrive in call order
		// (the loop records them so, and crash repair appends the missing
		// ones in order), but be robust to a result for an earlier call.
		for i, id := range c.pending {
			if id == r.ToolCallID {
				c.fillPending(i)
				c.pending = append(c.pending[:0], c.pending[i+1:]...)
				c.msgs = append(c.msgs, model.Message{Role: "tool", ToolCallID: r.ToolCallID, Content: toolResultText(r)})
				return
			}
		}
	}
}

// fillPending gives the first n pending calls a synthetic result (their
// results were never recorded), so tool messages stay in call order.
func (c *conversation) fillPending(n int) {
	for _, id := range c.pending[:n] {
		c.msgs = append(c.msgs, model.Message{Role: "tool", ToolCallID: id, Content: "no result was recorded for this call"})
	}
}

// closePending answers every pending call before a new message.
func (c *conversation) closePending() {
	c.fillPending(len(c.pending))
	c.pending = c.pending[:0]
}

// toolResultText renders a tool-result block for the model: its text
// blocks, with images named (chat-completion tool messages carry text).
func toolResultText(r event.ContentBlock) string {
	var b strings.Builder
	for _, c := range r.Content {
		switch c.Type {
		case event.BlockText:
			b.WriteString(c.Text)
		case event.BlockImage:
			if c.Attachment != nil {
				b.WriteString("[image " + c.Attachment.MediaType + " " + c.Attachment.AttachmentID + "]")
			}
		}
	}
	return b.String()
}

// build returns the messages of a request: system first, then the
// history, with image bytes loaded and any call still without a result
// answered, so the request is always well formed.
func (c *conversation) build(s *Session, system string) []model.Message {
	out := make([]model.Message, 0, len(c.msgs)+1+len(c.pending))
	out = append(out, model.Message{Role: "system", Content: system})
	out = append(out, c.msgs...)
	for idx, atts := range c.atts {
		m := &out[idx+1]
		m.Images = nil
		for _, a := range atts {
			data, err := s.LoadAttachment(a)
			if err != nil {
				m.Content += "\n[image " + a.AttachmentID + " is missing from the attachment store]"
				continue
			}
			m.Images = append(m.Images, model.Image{MediaType: a.MediaType, Data: data})
		}
	}
	for _, id := range c.pending {
		out = append(out, model.Message{Role: "tool", ToolCallID: id, Content: "no result was recorded for this call"})
	}
	return out
}
