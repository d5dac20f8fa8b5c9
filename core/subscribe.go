package core

import (
	"context"
	"sync"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

// NoticeKind says what a Notice carries.
type NoticeKind int

// Notice kinds.
const (
	// NoticeEvent: a committed event of a session.
	NoticeEvent NoticeKind = iota + 1
	// NoticeStatus: a session went running or idle.
	NoticeStatus
	// NoticeCreated: a session was created or resumed in this runtime
	// (the SDK door announces sessions with a parent as subagent.started).
	NoticeCreated
	// NoticeClosed: a session was closed in this runtime, after its last
	// event; no notice of it follows unless it is opened again. A door
	// drops what it kept for the session once this is through its queue.
	NoticeClosed
)

// Status of a session's agent.
const (
	StatusRunning = "running"
	StatusIdle    = "idle"
)

// Notice is one item delivered to subscribers.
type Notice struct {
	Kind      NoticeKind
	SessionID string
	Event     event.Event  // NoticeEvent
	Status    string       // NoticeStatus
	Header    store.Header // NoticeCreated
	Resumed   bool         // NoticeCreated: opened from the store, not new
}

// Subscription receives every notice of every session of a runtime, in
// commit order per session, with no loss. Delivery blocks the publishing
// session until the subscriber takes the notice: a slow subscriber slows
// the sessions, it never loses events.
type Subscription struct {
	rt   *Runtime
	ch   chan Notice
	done chan struct{}
	once sync.Once
}

// C is the channel notices arrive on. It is never closed; select on Done
// as well.
func (s *Subscription) C() <-chan Notice { return s.ch }

// Done is closed when the subscription is closed.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Next waits for the next notice.
func (s *Subscription) Next(ctx context.Context) (Notice, error) {
	select {
	case n := <-s.ch:
		return n, nil
	case <-s.done:
		return Notice{}, ErrClosed
	case <-ctx.Done():
		return Notice{}, ctx.Err()
	}
}

// Close stops delivery; publishers blocked on this subscription move on.
func (s *Subscription) Close() {
	s.once.Do(func() {
		close(s.done)
		s.rt.unsubscribe(s)
	})
}

func (s *Subscription) deliver(n Notice) {
	select {
	case s.ch <- n:
	case <-s.done:
	}
}

// Subscribe returns a subscription to every session of the runtime, present
// and future. Notices committed before the call are not replayed: read a
// session's Events for history.
func (r *Runtime) Subscribe() *Subscription {
	s := &Subscription{rt: r, ch: make(chan Notice, 256), done: make(chan struct{})}
	r.subMu.Lock()
	r.subs = append(r.subs, s)
	r.subMu.Unlock()
	return s
}

func (r *Runtime) unsubscribe(s *Subscription) {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	for i, x := range r.subs {
		if x == s {
			r.subs = append(r.subs[:i:i], r.subs[i+1:]...)
			return
		}
	}
}

// publish delivers n to every subscriber. Callers serialise per session so
// each subscriber sees a session's notices in order.
func (r *Runtime) publish(n Notice) {
	r.subMu.Lock()
	subs := r.subs
	r.subMu.Unlock()
	for _, s := range subs {
		s.deliver(n)
	}
}
