package core

import (
	"encoding/json"
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
	// toolImages are images returned by the results of the pending calls;
	// once the last call is answered they go to the model in a user
	// message (tool messages carry text only), as the original does.
	toolImages []*event.Attachment
	// size tracks how big the history is, for the compaction threshold.
	size historySize
	// dropped counts the messages trims removed since the last checkpoint,
	// droppedReplies the assistant messages among them.
	dropped, droppedReplies int
	// itemCap, when positive, is the most bytes one message may send: a
	// single item bigger than the window is cut to fit, not refused.
	itemCap int
	// compactedTo is the size the last checkpoint left (its tokensAfter),
	// so a history that stays big after compacting is not compacted again
	// at every step.
	compactedTo int64
}

// toolImagesIntro opens the user message that carries tool-result images.
const toolImagesIntro = "Attached image(s) from tool result:"

// flushToolImages appends the user message carrying the images of the
// results just folded.
func (c *conversation) flushToolImages() {
	if len(c.toolImages) == 0 {
		return
	}
	if c.atts == nil {
		c.atts = map[int][]*event.Attachment{}
	}
	c.atts[len(c.msgs)] = c.toolImages
	c.size.bytes += int64(len(c.toolImages)) * imageTokens * bytesPerToken
	c.toolImages = nil
	c.push(model.Message{Role: "user", Content: toolImagesIntro})
}

// foldBlock is the part of a content block the conversation needs, as a
// plain struct: encoding/json decodes it in one pass, where
// event.ContentBlock's own UnmarshalJSON re-scans every block (resuming a
// 10,000-event session spent most of its time there). Logs written by
// other writers that spell blocks differently (tool-result content as a
// string, arguments as an object) fail this decode and take the general
// path.
type foldBlock struct {
	Type       string            `json:"type"`
	Text       string            `json:"text"`
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Arguments  string            `json:"arguments"`
	ToolCallID string            `json:"toolCallId"`
	Content    []foldBlock       `json:"content"`
	Attachment *event.Attachment `json:"attachment"`
}

func (b foldBlock) block() event.ContentBlock {
	out := event.ContentBlock{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Arguments: b.Arguments,
		ToolCallID: b.ToolCallID, Attachment: b.Attachment}
	if b.Content != nil {
		out.Content = make([]event.ContentBlock, len(b.Content))
		for i, c := range b.Content {
			out.Content[i] = c.block()
		}
	}
	return out
}

// foldContent decodes the message content of a user/message (at the top
// level) or of an assistant/message or tool/result (under "message").
// The usage of an assistant/message comes with it.
func foldContent(ev event.Event, nested bool) ([]event.ContentBlock, *event.Usage, error) {
	var fast struct {
		Content []foldBlock `json:"content"`
		Message struct {
			Content []foldBlock `json:"content"`
		} `json:"message"`
		Usage *event.Usage `json:"usage"`
	}
	if err := json.Unmarshal(ev.Data, &fast); err == nil {
		blocks := fast.Content
		if nested {
			blocks = fast.Message.Content
		}
		out := make([]event.ContentBlock, len(blocks))
		for i, b := range blocks {
			out[i] = b.block()
		}
		return out, fast.Usage, nil
	}
	if nested {
		var m struct {
			Message event.Message `json:"message"`
			Usage   *event.Usage  `json:"usage"`
		}
		err := json.Unmarshal(ev.Data, &m)
		return m.Message.Content, m.Usage, err
	}
	m, err := event.Decode[event.Message](ev)
	return m.Content, nil, err
}

func (c *conversation) add(ev event.Event, payload any) {
	switch ev.Type {
	case event.TypeUserMessage:
		content, _, err := foldContent(ev, false)
		if m, ok := payload.(event.Message); ok {
			content, err = m.Content, nil
		}
		if err != nil {
			return
		}
		m := event.Message{Content: content}
		c.closePending()
		for _, b := range m.Content {
			if b.Type == event.BlockImage && b.Attachment != nil {
				if c.atts == nil {
					c.atts = map[int][]*event.Attachment{}
				}
				c.atts[len(c.msgs)] = append(c.atts[len(c.msgs)], b.Attachment)
				c.size.bytes += imageTokens * bytesPerToken
			}
		}
		c.push(model.Message{Role: "user", Content: event.JoinText(m.Content)})
	case event.TypeEnvironment:
		env, err := payloadOf[event.Environment](ev, payload)
		if err != nil {
			return
		}
		c.closePending()
		c.push(model.Message{Role: "user", Kind: model.KindContext, Content: event.JoinText(env.Message.Content)})
	case event.TypeAssistantMessage:
		var content []event.ContentBlock
		var err error
		var usage *event.Usage
		if am, ok := payload.(event.AssistantMessage); ok {
			content, usage = am.Message.Content, am.Usage
		} else {
			content, usage, err = foldContent(ev, true)
		}
		if err != nil {
			return
		}
		c.closePending()
		var m model.Message
		m.Role = "assistant"
		var reasoning, text strings.Builder
		for _, b := range content {
			switch b.Type {
			case event.BlockReasoning:
				reasoning.WriteString(b.Text)
			case event.BlockText:
				text.WriteString(b.Text)
			case event.BlockToolCall:
				m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Arguments})
				c.pending = append(c.pending, b.ID)
			case event.BlockServer:
				m.ServerFields = append(m.ServerFields, model.ServerField{Name: b.Name, Value: []byte(b.Text)})
			}
		}
		m.Reasoning, m.Content = reasoning.String(), text.String()
		c.push(m)
		c.size.observe(usage)
	case event.TypeToolResult:
		if !ev.IsAppend() {
			return
		}
		var content []event.ContentBlock
		var err error
		if tr, ok := payload.(event.ToolResult); ok {
			content = tr.Message.Content
		} else {
			content, _, err = foldContent(ev, true)
		}
		if err != nil {
			return
		}
		r := event.ToolResult{Message: event.Message{Content: content}}.Result()
		// A result answers a pending call; results arrive in call order
		// (the loop records them so, and crash repair appends the missing
		// ones in order), but be robust to a result for an earlier call.
		for i, id := range c.pending {
			if id == r.ToolCallID {
				c.fillPending(i)
				c.pending = append(c.pending[:0], c.pending[i+1:]...)
				c.push(model.Message{Role: "tool", ToolCallID: r.ToolCallID, Content: event.ResultText(r)})
				for _, b := range r.Content {
					if b.Type == event.BlockImage && b.Attachment != nil {
						c.toolImages = append(c.toolImages, b.Attachment)
					}
				}
				if len(c.pending) == 0 {
					c.flushToolImages()
				}
				return
			}
		}
	case event.TypeCompactionCheckpoint:
		if cp, err := payloadOf[event.CompactionCheckpoint](ev, payload); err == nil {
			c.restore(cp.History)
			c.compactedTo = cp.TokensAfter
		}
	case event.TypeCompactionTrim:
		if tr, err := payloadOf[event.CompactionTrim](ev, payload); err == nil {
			c.trim(tr.Dropped)
		}
	}
}

// fillPending gives the first n pending calls a synthetic result (their
// results were never recorded), so tool messages stay in call order.
func (c *conversation) fillPending(n int) {
	for _, id := range c.pending[:n] {
		c.push(model.Message{Role: "tool", ToolCallID: id, Content: "no result was recorded for this call"})
	}
}

// closePending answers every pending call before a new message.
func (c *conversation) closePending() {
	c.fillPending(len(c.pending))
	c.pending = c.pending[:0]
	c.flushToolImages()
}

// build returns the messages of a request: system first, then the
// history, with image bytes loaded and any call still without a result
// answered, so the request is always well formed. A model that takes no
// images gets a note in place of each.
func (c *conversation) build(s *Session, system string, images bool) []model.Message {
	out := make([]model.Message, 0, len(c.msgs)+1+len(c.pending))
	out = append(out, model.Message{Role: "system", Content: system})
	out = append(out, c.msgs...)
	if c.itemCap > 0 {
		for i := 1; i < len(out); i++ {
			if len(out[i].Content) > c.itemCap {
				out[i].Content = cutToFit(out[i].Content, c.itemCap)
			}
		}
	}
	for idx, atts := range c.atts {
		m := &out[idx+1]
		m.Images = nil
		for _, a := range atts {
			if !images {
				m.Content += "\n[image " + a.MediaType + " not shown: the model of this session cannot view images]"
				continue
			}
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
