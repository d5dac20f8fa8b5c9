package acp

import (
	"context"
	"errors"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// Each session of the connection has one reader: a goroutine that follows
// the session's cursor (core.Session.Follow) and owns the session's
// projection. It projects every committed event, in seq order, into the
// outbox, and waits there when the session holds its share of the queue:
// a client that reads slowly slows this session's reader, never the
// session's commits nor another session's reader.
//
// A session/load is the same loop started earlier: the reader projects the
// history up to the seq the load began at, coalesced (coalesceReplay), then
// goes on live from that seq, so an event committed while the replay is on
// its way out is shown once, after it.
//
// The door's own updates (the slash commands, a terminal embedded in a
// running call, a command's reply) reach the reader through a small
// channel, so they take their place in the session's order. An in-process
// child's events, shown in the parent's call, are read by the parent's
// reader from the child's cursor (progress.go).

// readBatch is how many events the reader takes from its cursor at once.
const readBatch = 64

// doorQueue bounds the items waiting for a reader (a producer waits).
const doorQueue = 16

// reader follows one session's cursor.
type reader struct {
	a    *agent
	st   *sessState
	cur  *core.Cursor
	door chan item
	// held: the state was opened by a session/load, whose replay comes
	// first; no live event is projected before it.
	held bool
	// done is closed when run returns; flushed once, after that, every
	// update the reader queued is written (or dropped).
	done    chan struct{}
	flushed chan struct{}
	// kids are the in-process children shown in this session's calls, by
	// child session id; kick (capacity 1) says one of them committed
	// (progress.go).
	kids map[string]*kid
	kick chan struct{}
}

// item is one unit of work the door hands a reader.
type item struct {
	// update is sent as is (available commands, a terminal embedded in a
	// running tool call, a command's reply).
	update *sdk.SessionUpdate
	// replay asks for the session's history (session/load); the reader
	// sends the result of the replay, once its updates are written.
	replay chan error
	// release lets a held reader go live without a replay (the load that
	// held it failed).
	release bool
	// done, when set, is closed once the item's updates are on the wire.
	done chan struct{}
}

func newReader(a *agent, st *sessState, after int64, held bool) *reader {
	return &reader{a: a, st: st, cur: st.s.Follow(after), door: make(chan item, doorQueue), held: held,
		done: make(chan struct{}), flushed: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// push hands it to the reader, waiting while its queue is full. Once the
// reader has stopped it is dropped (its done closed, a replay refused).
func (r *reader) push(it item) {
	select {
	case r.door <- it:
	case <-r.done:
		r.drop(it)
	}
}

func (r *reader) drop(it item) {
	if it.done != nil {
		close(it.done)
	}
	if it.replay != nil {
		it.replay <- errShuttingDown
	}
}

// pushWait hands it to the reader and waits until its updates are on the
// wire.
func (r *reader) pushWait(ctx context.Context, it item) error {
	it.done = make(chan struct{})
	r.push(it)
	select {
	case <-it.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.flushed:
		return errShuttingDown
	}
}

// replay asks the reader for the session's history and waits until it is
// on the wire.
func (r *reader) replay(ctx context.Context) error {
	ch := make(chan error, 1)
	r.push(item{replay: ch})
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.flushed:
		return errShuttingDown
	}
}

// run is the reader's loop, until the session has closed and its last
// event is projected, or the connection ends (stop).
func (r *reader) run(stop <-chan struct{}) {
	defer r.finish()
	if r.held && !r.awaitReplay(stop) {
		return
	}
	for {
		evs, wait, err := r.cur.Read(readBatch)
		if err != nil {
			if !errors.Is(err, core.ErrClosed) {
				r.a.log.Warn("acp: reading the session's events failed; its updates stop", "session", r.st.id, "err", err)
			}
			return
		}
		if len(evs) > 0 {
			r.live(evs)
			if !r.serveReady(stop) {
				return
			}
			continue
		}
		select {
		case <-wait:
		case it := <-r.door:
			r.process(it)
		case <-r.kick:
			r.readKids()
		case <-stop:
			return
		}
	}
}

// awaitReplay serves door items until the replay a held reader waits for
// is done; false when the connection ended first.
func (r *reader) awaitReplay(stop <-chan struct{}) bool {
	for r.held {
		select {
		case it := <-r.door:
			r.process(it)
		case <-stop:
			return false
		}
	}
	return true
}

// serveReady handles the door items already waiting, without blocking.
func (r *reader) serveReady(stop <-chan struct{}) bool {
	for {
		select {
		case it := <-r.door:
			r.process(it)
		case <-r.kick:
			r.readKids()
		case <-stop:
			return false
		default:
			return true
		}
	}
}

// finish ends the reader: items still queued are dropped, the children it
// followed are let go, and once its updates are written the state is
// forgotten when its session has closed.
func (r *reader) finish() {
	close(r.done)
	for {
		select {
		case it := <-r.door:
			r.drop(it)
			continue
		default:
		}
		break
	}
	for id := range r.kids {
		r.dropKid(id)
	}
	st, closed := r.st, r.st.s.Closed()
	r.a.out.mark(st.id, func() {
		close(r.flushed)
		if closed {
			r.a.forget(st)
		}
	})
}

func (r *reader) process(it item) {
	st := r.st
	switch {
	case it.release:
		r.held = false
	case it.replay != nil:
		err := r.replayHistory(it.replay)
		if err != nil {
			it.replay <- err
		}
	case it.update != nil:
		r.a.out.put(st.id, *it.update)
	}
	if it.done != nil {
		r.a.out.mark(st.id, func() { close(it.done) })
	}
}

// live projects committed events as they come, and marks the session's
// progress once their updates are written.
func (r *reader) live(evs []event.Event) {
	st, p := r.st, r.st.proj
	var notes []func()
	for _, ev := range evs {
		if ev.Type == event.TypeSubagentEnd {
			r.noteChild(ev) // the child's last steps go before the call's end
		}
		ups, note := p.project(ev, false)
		for _, u := range ups {
			r.a.out.put(st.id, u)
		}
		if ev.Type == event.TypeSubagentStart {
			r.noteChild(ev) // the child's steps go after the delegation
		}
		if note != nil {
			notes = append(notes, note)
		}
	}
	seq := evs[len(evs)-1].Seq
	r.a.out.mark(st.id, func() {
		st.advance(func() {
			st.sent = max(st.sent, seq)
			for _, fn := range notes {
				fn()
			}
		})
	})
}

// replayHistory sends the session's history up to its last committed
// event, then the slash commands, and moves the cursor there: what is
// committed from now on follows live. done gets nil once the replay is on
// the wire; an error is returned (the replay did not start).
func (r *reader) replayHistory(done chan<- error) error {
	st, p := r.st, r.st.proj
	r.held = false // a failed replay goes on live from where the reader was
	// The mode before the last event replayed: a change committed after it
	// is announced live; one before it the load's response carries.
	p.mode = st.s.Mode()
	until := st.s.LastSeq()
	evs, err := r.history(until)
	if err != nil {
		return err
	}
	r.cur = st.s.Follow(until)
	var notes []func()
	p.cost, p.costCurrency, p.lastUsage = 0, "", nil // recomputed from the whole history
	var all []sdk.SessionUpdate
	rewound := core.Rewound(evs) // a load shows the conversation as rewound
	for _, ev := range evs {
		if rewound.Hidden(ev.Seq) {
			continue
		}
		ups, note := p.project(ev, true)
		all = append(all, ups...)
		if note != nil {
			notes = append(notes, note)
		}
	}
	evs = nil
	for _, u := range coalesceReplay(all) {
		r.a.out.put(st.id, u)
	}
	if p.lastUsage != nil {
		r.a.out.put(st.id, *p.lastUsage)
	}
	r.a.out.put(st.id, st.commands())
	if n := r.a.sandboxNotice(); n != nil {
		r.a.out.put(st.id, *n)
	}
	r.a.out.mark(st.id, func() {
		st.advance(func() {
			st.sent = max(st.sent, until)
			for _, fn := range notes {
				fn()
			}
		})
		done <- nil
	})
	return nil
}

// history reads the session's committed events up to seq until through a
// cursor of its own, from the first (a part before the last checkpoint is
// read back from the log), without the live stream, which a replay does
// not show and need not decode.
func (r *reader) history(until int64) ([]event.Event, error) {
	c := r.st.s.Follow(-1).SkipStream()
	var evs []event.Event
	for c.After() < until {
		batch, _, err := c.Read(max(readBatch, int(until-c.After())))
		if err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			break
		}
		evs = append(evs, batch...)
	}
	for len(evs) > 0 && evs[len(evs)-1].Seq > until {
		evs = evs[:len(evs)-1]
	}
	return evs, nil
}
