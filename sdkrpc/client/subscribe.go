package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// Notification is one server → client notification. Params is the raw
// params object as it came off the wire.
type Notification struct {
	Method string
	Params json.RawMessage

	// Parsed once on the read goroutine for filters.
	sessionID, parentID, childID string
}

// SessionID is params.sessionId (session.event and session.status; empty
// for subagent.*).
func (n Notification) SessionID() string { return n.sessionID }

// ParentSessionID is params.parentSessionId (subagent.*).
func (n Notification) ParentSessionID() string { return n.parentID }

// ChildSessionID is params.childSessionId (subagent.*).
func (n Notification) ChildSessionID() string { return n.childID }

// Decode unmarshals Params into v.
func (n Notification) Decode(v any) error {
	if err := json.Unmarshal(n.Params, v); err != nil {
		return &ProtocolError{Msg: fmt.Sprintf("%s notification has malformed params: %v", n.Method, err)}
	}
	return nil
}

// Event decodes a session.event notification. The event must be a JSON
// object (the original client's check).
func (n Notification) Event() (protocol.SessionEventParams, error) {
	var raw struct {
		SessionID string          `json:"sessionId"`
		Event     json.RawMessage `json:"event"`
	}
	if n.Method != protocol.NotifySessionEvent {
		return protocol.SessionEventParams{}, &ProtocolError{Msg: n.Method + " is not a session.event notification"}
	}
	if err := n.Decode(&raw); err != nil {
		return protocol.SessionEventParams{}, err
	}
	if len(raw.Event) == 0 || raw.Event[0] != '{' {
		return protocol.SessionEventParams{}, &ProtocolError{Msg: "session.event notification requires an object event"}
	}
	var ev event.Event
	if err := json.Unmarshal(raw.Event, &ev); err != nil {
		return protocol.SessionEventParams{}, &ProtocolError{Msg: "session.event notification has a malformed event: " + err.Error()}
	}
	return protocol.SessionEventParams{SessionID: raw.SessionID, Event: ev}, nil
}

// Status decodes a session.status notification.
func (n Notification) Status() (protocol.SessionStatusParams, error) {
	var p protocol.SessionStatusParams
	return p, n.Decode(&p)
}

// SubagentStarted decodes a subagent.started notification.
func (n Notification) SubagentStarted() (protocol.SubagentStartedParams, error) {
	var p protocol.SubagentStartedParams
	return p, n.Decode(&p)
}

// SubagentFinished decodes a subagent.finished notification.
func (n Notification) SubagentFinished() (protocol.SubagentFinishedParams, error) {
	var p protocol.SubagentFinishedParams
	return p, n.Decode(&p)
}

func newNotification(method string, params json.RawMessage) Notification {
	n := Notification{Method: method, Params: params}
	// params comes from a line the stream validated, so the light walk
	// applies. A member of the wrong type leaves its id empty: the
	// notification then matches no session filter.
	ndjson.ObjectMembers(params, func(k string, v []byte) bool {
		switch k {
		case "sessionId":
			n.sessionID, _ = ndjson.StringValue(v)
		case "parentSessionId":
			n.parentID, _ = ndjson.StringValue(v)
		case "childSessionId":
			n.childID, _ = ndjson.StringValue(v)
		}
		return true
	})
	return n
}

// Subscription is an ordered queue of the notifications that passed its
// filter since it was created.
//
// The policy for a slow subscriber: the read goroutine only appends, so a
// subscriber that reads slowly delays only its own delivery — never the
// connection, the responses of requests, or other subscribers. Its unread
// notifications are bounded (Options.SubscriptionBufferBytes, by the size
// of their params; one notification is always accepted into an empty
// queue): a subscriber that falls that far behind is failed with an
// *OverflowError instead of growing memory without end. What it had queued
// stays readable; Next returns the error after it. Only that subscription
// ends: the client and every other subscription go on.
//
// When the transport dies the queue stays drainable and Next then returns
// the *TransportClosedError; Close (of the subscription or the client)
// drops it.
type Subscription struct {
	c      *Client
	filter func(Notification) bool
	limit  int // bytes of unread params

	mu     sync.Mutex
	q      []Notification
	head   int
	bytes  int   // params bytes queued unread
	err    error // terminal: returned once the queue is drained
	closed bool
	wake   chan struct{}
}

// Next returns the next notification, waiting until one arrives, the
// subscription fails, or ctx ends.
func (s *Subscription) Next(ctx context.Context) (Notification, error) {
	for {
		if n, ok, err := s.pop(); ok || err != nil {
			return n, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return Notification{}, ctx.Err()
		}
	}
}

// TryNext returns the next queued notification without waiting. ok is
// false when none is queued; err is the subscription's terminal error once
// the queue is drained.
func (s *Subscription) TryNext() (n Notification, ok bool, err error) {
	return s.pop()
}

func (s *Subscription) pop() (Notification, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Notification{}, false, ErrSubscriptionClosed
	}
	if s.head < len(s.q) {
		n := s.q[s.head]
		s.q[s.head] = Notification{}
		s.head++
		s.bytes -= len(n.Params)
		if s.head == len(s.q) {
			s.q, s.head = s.q[:0], 0
		}
		return n, true, nil
	}
	return Notification{}, false, s.err
}

// Close stops the subscription and drops its queue. Idempotent.
func (s *Subscription) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.q, s.head, s.bytes = nil, 0, 0
	s.mu.Unlock()
	s.signal()
	if s.c != nil {
		s.c.unsubscribe(s)
	}
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// offer runs the filter and queues n. It is called on the read goroutine.
func (s *Subscription) offer(n Notification) {
	if s.filter != nil && !s.match(n) {
		return
	}
	s.mu.Lock()
	if s.closed || s.err != nil {
		s.mu.Unlock()
		return
	}
	if s.limit > 0 && s.head < len(s.q) && s.bytes+len(n.Params) > s.limit {
		queued := len(s.q) - s.head
		if s.err == nil {
			s.err = &OverflowError{Queued: queued, Bytes: s.bytes, Limit: s.limit}
		}
		s.mu.Unlock()
		s.signal()
		return
	}
	if s.head > 1024 && s.head > len(s.q)/2 {
		m := copy(s.q, s.q[s.head:])
		clear(s.q[m:])
		s.q, s.head = s.q[:m], 0
	}
	s.q = append(s.q, n)
	s.bytes += len(n.Params)
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) match(n Notification) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			s.fail(&FilterPanicError{Value: p}, false)
		}
	}()
	return s.filter(n)
}

// fail makes err terminal. With drainable the queue is kept for Next.
func (s *Subscription) fail(err error, drainable bool) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	if !drainable {
		s.q, s.head, s.bytes = nil, 0, 0
	}
	s.mu.Unlock()
	s.signal()
}
