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
	// FinishReason is how the last root turn ended ("" if none ended).
	FinishReason FinishReason
	// Events are the root session's events, from the receipt through the
	// last event before idle, the live stream included.
	Events []event.Event
	// Command is set when the input was a slash command dsh answered
	// itself (our extension): no turn ran, and FinalResponse is its reply.
	Command *protocol.CommandOutcome
	// Notifications are all notifications of the session tree, from the
	// receipt through the root's session.status idle, in wire order.
	Notifications []Notification
}

// collector folds the notifications of one run into its result.
type collector struct {
	res     *RunResult
	root    string
	opts    *runOptions
	started bool
}

// collect reads sub until the root goes idle (nil), or fails.
func (c *collector) collect(ctx context.Context, sub *Subscription) error {
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		idle, err := c.add(n)
		if err != nil || idle {
			return err
		}
	}
}

// add takes one notification; idle reports the root's session.status idle.
func (c *collector) add(n Notification) (idle bool, err error) {
	root := n.sessionID == c.root
	if !c.started {
		if !root || n.Method != protocol.NotifySessionEvent {
			return false, nil
		}
		p, err := n.Event()
		if err != nil || !protocol.IsReceipt(p.Event, c.res.MessageID) {
			return false, nil
		}
		c.started = true
	}
	c.res.Notifications = append(c.res.Notifications, n)
	if c.opts.onNotification != nil {
		c.opts.onNotification(n)
	}
	if !root {
		return false, nil
	}
	switch n.Method {
	case protocol.NotifySessionEvent:
		p, err := n.Event()
		if err != nil {
			return false, err
		}
		c.res.Events = append(c.res.Events, p.Event)
		if err := c.res.fold(p.Event); err != nil {
			return false, err
		}
		c.notify(Event{SessionID: p.SessionID, Event: p.Event})
	case protocol.NotifySessionStatus:
		st, err := n.Status()
		if err != nil {
			return false, err
		}
		return st.Status == protocol.StatusIdle, nil
	}
	return false, nil
}

func (c *collector) notify(ev Event) {
	if c.opts.onEvent != nil {
		c.opts.onEvent(ev)
	}
	if c.opts.onText != nil {
		if d, ok := ev.TextDelta(); ok {
			c.opts.onText(d)
		}
	}
	if c.opts.onReasoning != nil {
		if d, ok := ev.ReasoningDelta(); ok {
			c.opts.onReasoning(d)
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
		kind, err := turnEndKind(ev)
		if err != nil {
			return err
		}
		r.FinishReason = kind
	}
	return nil
}

func turnEndKind(ev event.Event) (FinishReason, error) {
	var d struct {
		Reason struct {
			Kind json.RawMessage `json:"kind"`
		} `json:"reason"`
	}
	var kind string
	if json.Unmarshal(ev.Data, &d) != nil || json.Unmarshal(d.Reason.Kind, &kind) != nil {
		return "", &ProtocolError{Msg: "turn/end event requires a string data.reason.kind"}
	}
	return FinishReason(kind), nil
}
