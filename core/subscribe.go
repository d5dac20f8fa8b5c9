package core

import (
	"context"
	"errors"
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
// commit order per session, with no loss. It is a reader, not a queue: it
// holds a cursor over each session's history and reads the next events
// when its owner has taken the last ones, so a slow subscriber never slows
// a commit and holds no copy of what it has not read. Notices that are not
// events (status, created, closed) come in the order they were published,
// each after the events its session had committed when it was published.
type Subscription struct {
	rt   *Runtime
	ch   chan Notice
	done chan struct{}
	once sync.Once
	// fed is closed when the feeding goroutine has returned.
	fed chan struct{}

	mu sync.Mutex
	// wake (capacity 1) tells the feeder a followed session committed or
	// a notice was published.
	wake    chan struct{}
	follows map[*Session]*follow
	marks   []mark
	// draining: end once everything published so far is delivered.
	draining bool
}

// follow is a subscription's cursor over one session.
type follow struct {
	cur   *Cursor
	dirty bool // events may wait after the cursor
}

// mark is a notice that is not an event, delivered once its session's
// events up to seq have been.
type mark struct {
	n   Notice
	s   *Session
	seq int64
}

// subscriptionMarks bounds the status notices a subscription holds for a
// reader that does not read: beyond it the oldest status of a session is
// dropped (a status is a state; the newer one says what holds now).
const subscriptionMarks = 4096

// subscriptionBatch is how many events the feeder reads from a session at a
// time before it serves another session.
const subscriptionBatch = 64

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

// Close stops delivery and waits for the feeder to return.
func (s *Subscription) Close() {
	s.once.Do(func() {
		close(s.done)
		s.rt.unsubscribe(s)
	})
	<-s.fed
}

// Drain ends the subscription once every notice published before the call
// is in C (Done then closes; what is in C stays readable), so a reader
// that must see a process's last events, such as its log, reads to the end
// before it stops. It does not wait; Close still stops at once.
func (s *Subscription) Drain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.poke()
}

func (s *Subscription) drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Subscribe returns a subscription to every session of the runtime, present
// and future. Events committed before the call are not delivered: read a
// session's Events (or Follow it) for history.
func (r *Runtime) Subscribe() *Subscription {
	s := &Subscription{rt: r, ch: make(chan Notice, subscriptionBatch), done: make(chan struct{}), fed: make(chan struct{}),
		wake: make(chan struct{}, 1), follows: map[*Session]*follow{}}
	r.subMu.Lock()
	r.subs = append(r.subs, s)
	r.subMu.Unlock()
	// Sessions open now are followed from their last event; a session
	// that commits later and is not followed yet is followed from the
	// event that signalled it (see signal).
	for _, ss := range r.Sessions() {
		s.followFrom(ss, ss.LastSeq())
	}
	go s.feed()
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

func (r *Runtime) subscriptions() []*Subscription {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	return r.subs
}

// signal tells every subscriber that s committed events from seq first on.
// It never waits for a subscriber.
func (r *Runtime) signal(s *Session, first int64) {
	for _, sub := range r.subscriptions() {
		sub.mu.Lock()
		f := sub.follows[s]
		if f == nil {
			f = &follow{cur: s.Follow(first - 1)}
			sub.follows[s] = f
		}
		f.dirty = true
		sub.mu.Unlock()
		sub.poke()
	}
}

// publish records a notice that is not an event for every subscriber, to
// be delivered after the events s had committed by now. It never waits for
// a subscriber.
func (r *Runtime) publish(s *Session, n Notice) {
	seq := s.lg.NextSeq() - 1
	for _, sub := range r.subscriptions() {
		sub.mu.Lock()
		if sub.follows[s] == nil {
			sub.follows[s] = &follow{cur: s.Follow(seq)}
		}
		if len(sub.marks) >= subscriptionMarks {
			sub.dropStatus()
		}
		sub.marks = append(sub.marks, mark{n: n, s: s, seq: seq})
		sub.mu.Unlock()
		sub.poke()
	}
}

func (s *Subscription) followFrom(ss *Session, after int64) {
	s.mu.Lock()
	if s.follows[ss] == nil {
		s.follows[ss] = &follow{cur: ss.Follow(after)}
	}
	s.mu.Unlock()
}

// dropStatus drops the oldest status notice. Called with mu held.
func (s *Subscription) dropStatus() {
	for i, m := range s.marks {
		if m.n.Kind == NoticeStatus {
			s.marks = append(s.marks[:i:i], s.marks[i+1:]...)
			return
		}
	}
}

func (s *Subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// feed delivers notices to ch until the subscription is closed: the mark at
// the head once its session's events up to it are out, else the events of
// the followed sessions, a batch of one session at a time in turn.
func (s *Subscription) feed() {
	defer close(s.fed)
	var batch []Notice
	for {
		if len(batch) == 0 {
			batch = s.nextBatch()
		}
		if len(batch) == 0 && s.drained() {
			s.once.Do(func() {
				close(s.done)
				s.rt.unsubscribe(s)
			})
			return
		}
		if len(batch) == 0 {
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			}
		}
		select {
		case s.ch <- batch[0]:
			batch = batch[1:]
		case <-s.done:
			return
		}
	}
}

// nextBatch returns the next notices to deliver, or none when everything
// published so far is out.
func (s *Subscription) nextBatch() []Notice {
	for {
		s.mu.Lock()
		if len(s.marks) > 0 {
			m := s.marks[0]
			f := s.follows[m.s]
			if f == nil || f.cur.After() >= m.seq {
				s.marks = s.marks[1:]
				if m.n.Kind == NoticeClosed && f != nil && !f.dirty {
					delete(s.follows, m.s)
				}
				s.mu.Unlock()
				return []Notice{m.n}
			}
			// The head waits for its session's events: read those first.
			s.mu.Unlock()
			if evs := s.read(m.s, f, m.seq); len(evs) > 0 {
				return evs
			}
			continue
		}
		ss, f := s.pickDirty()
		s.mu.Unlock()
		if f == nil {
			return nil
		}
		if evs := s.read(ss, f, -1); len(evs) > 0 {
			return evs
		}
	}
}

// pickDirty returns a followed session with events waiting (nil if none),
// taking its dirty flag. Called with mu held. Map order varies from call to
// call, which spreads the feeder over sessions that all have events.
func (s *Subscription) pickDirty() (*Session, *follow) {
	for ss, f := range s.follows {
		if f.dirty {
			f.dirty = false
			return ss, f
		}
	}
	return nil, nil
}

// read reads the next events of ss as notices (up to seq until, when it is
// not -1), flagging the session again when more may wait.
func (s *Subscription) read(ss *Session, f *follow, until int64) []Notice {
	max := subscriptionBatch
	if until >= 0 {
		max = int(min(until-f.cur.After(), subscriptionBatch))
	}
	evs, _, err := f.cur.Read(max)
	if err != nil && until >= 0 {
		// The events the mark waits for cannot be read: deliver it.
		s.mu.Lock()
		f.cur.after = until
		s.mu.Unlock()
		s.rt.log.Warn("subscription: events not delivered", "session", ss.id, "err", err)
		return nil
	}
	if errors.Is(err, ErrClosed) {
		// Closed and read to its end: nothing more will come.
		s.mu.Lock()
		if !f.dirty {
			delete(s.follows, ss)
		}
		s.mu.Unlock()
		return nil
	}
	if len(evs) == 0 {
		return nil
	}
	// More may wait even after a short read: a cursor behind a checkpoint
	// serves the part read from the log, up to the checkpoint, on its own.
	s.mu.Lock()
	f.dirty = true
	s.mu.Unlock()
	out := make([]Notice, len(evs))
	for i, ev := range evs {
		out[i] = Notice{Kind: NoticeEvent, SessionID: ss.id, Event: ev}
	}
	return out
}
