package client

import (
	"context"
	"encoding/json"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// RunResult is what one owned run produced.
type RunResult struct {
	SessionID string
	MessageID string
	// FinalResponse is the joined text blocks of the last root
	// assistant/message ("" if none).
	FinalResponse string
	// FinishReason is the reason.kind of the last root turn/end ("" if
	// none): completed, aborted, error, max-tokens, blocked, ...
	FinishReason string
	// Events are the root session's events, from the receipt through the
	// last event before idle.
	Events []event.Event
	// Notifications are all notifications of the session tree, from the
	// receipt through the root's session.status idle, in wire order.
	Notifications []Notification
}

// Run is RunBlocks with input as one text block.
func (c *Client) Run(ctx context.Context, sessionID, input string) (*RunResult, error) {
	return c.RunBlocks(ctx, sessionID, []json.RawMessage{protocol.TextBlock(input)}, nil)
}

// RunBlocks is the original clients' owned run (spec §3.1): subscribe to
// the session tree, prompt, skip notifications until the receipt (the root's
// agent/inbox/spliced inserting our message id), then collect until the
// root's session.status idle, inclusive. An empty sessionID gets a fresh
// `session-<uuid hex>`. onNotification, if set, sees every collected
// notification as it is collected, on the caller's goroutine.
//
// On error (ctx done, transport gone, protocol error) the result holds what
// was collected so far, so a caller can report partial output.
func (c *Client) RunBlocks(ctx context.Context, sessionID string, blocks []json.RawMessage, onNotification func(Notification)) (*RunResult, error) {
	if sessionID == "" {
		sessionID = NewSessionID()
	}
	res := &RunResult{SessionID: sessionID}
	sub := c.SubscribeSessionTree(sessionID)
	defer sub.Close()
	msgID, err := c.Prompt(ctx, sessionID, blocks)
	if err != nil {
		return res, err
	}
	res.MessageID = msgID
	started := false
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			return res, err
		}
		root := n.sessionID == sessionID
		if !started {
			if !root || n.Method != protocol.NotifySessionEvent {
				continue
			}
			p, err := n.Event()
			if err != nil || !protocol.IsReceipt(p.Event, msgID) {
				continue
			}
			started = true
		}
		res.Notifications = append(res.Notifications, n)
		if onNotification != nil {
			onNotification(n)
		}
		if !root {
			continue
		}
		switch n.Method {
		case protocol.NotifySessionEvent:
			p, err := n.Event()
			if err != nil {
				return res, err
			}
			res.Events = append(res.Events, p.Event)
			if err := res.fold(p.Event); err != nil {
				return res, err
			}
		case protocol.NotifySessionStatus:
			st, err := n.Status()
			if err != nil {
				return res, err
			}
			if st.Status == protocol.StatusIdle {
				return res, nil
			}
		}
	}
}

// fold updates FinalResponse and FinishReason from one root event.
func (r *RunResult) fold(ev event.Event) error {
	switch ev.Type {
	case event.TypeAssistantMessage:
		var d struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		var content []event.ContentBlock
		if json.Unmarshal(ev.Data, &d) != nil || len(d.Message.Content) == 0 || d.Message.Content[0] != '[' ||
			json.Unmarshal(d.Message.Content, &content) != nil {
			return &ProtocolError{Msg: "assistant/message event requires a content array"}
		}
		r.FinalResponse = event.JoinText(content)
	case event.TypeTurnEnd:
		var d struct {
			Reason struct {
				Kind json.RawMessage `json:"kind"`
			} `json:"reason"`
		}
		var kind string
		if json.Unmarshal(ev.Data, &d) != nil || json.Unmarshal(d.Reason.Kind, &kind) != nil {
			return &ProtocolError{Msg: "turn/end event requires a string data.reason.kind"}
		}
		r.FinishReason = kind
	}
	return nil
}
