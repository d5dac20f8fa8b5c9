package acp

import (
	"encoding/json"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
)

// The session/updates of a connection leave through one bounded, paced
// queue, the outbox:
//
//   - bounded: put waits while the queue holds outboxSize updates or
//     outboxBytes of encoded updates (a session at most half the updates),
//     so a client that reads slowly (or not at all) slows the sessions'
//     readers, which read their cursors at that pace: the commits never
//     wait, a replay paces itself, and memory stays flat;
//   - paced: notifications leave at most at the configured rate (after a
//     burst), because a client on acp-go-sdk queues notifications in 1,024
//     slots and drops the connection when its handler falls that far
//     behind, and its reader drains the pipe whatever the handler's pace,
//     so the pipe's backpressure does not reach the agent until the
//     client's process itself stalls. That stall is the one signal there
//     is: a write the pipe holds back halves the rate, which then climbs
//     back (see pacer);
//   - coalesced: while the client is held to the pace, a queued update
//     absorbs a later one that says the same thing newer — a tool call's
//     next state (ACP's tool_call_update replaces exactly the fields it
//     carries), a newer snapshot (plan, usage, modes, commands, config
//     options: each replaces the whole), the next text chunk of the same
//     message — so a slow client gets fewer frames and loses no fact.
//
// Markers ride the same queue: a marker runs its callbacks once every update
// put before it has been written, which is how a reader's progress (the last
// event on the wire, the tool calls the client knows) stays true.

// Defaults of the pacing (see Options.UpdatesPerSecond) and the bounds.
// The default serves the mainstream client: an acp-go-sdk client whose
// handler takes 100 µs per update clears about 4,000 a second on a 2-core
// machine that also runs dsh (its own decoding and scheduling included;
// measured, not 10,000), and was dropped in 6 of 6 session/loads at 6,000
// a second. 4,000 after a burst of 768 (its queue holds 1,024), which
// pipe stalls bring to 3,100-3,600 in practice, kept it connected in 6 of
// 6, and a replay of a 22k-event session (about 3,000 updates once
// coalesced) then waits about 0.45 s for the pace. A client with a slower
// handler is the edge a setting serves (DSH_ACP_UPDATES_PER_SEC=800 holds
// a 1 ms handler).
const (
	defaultUpdatesPerSecond = 4000
	updateBurst             = 768
	outboxSize              = 512
	outboxBytes             = 8 << 20
)

// outItem is one queued update, or a marker when update is nil.
type outItem struct {
	session string
	update  *sdk.SessionUpdate
	call    string // the tool call an update is about, or ""
	// line is the encoded notification's params, nil once a merge changed
	// the update (the writer encodes it again).
	line  json.RawMessage
	size  int
	after []func()
}

// outbox is the connection's queue of session/update notifications.
type outbox struct {
	conn  *wire.Conn
	pace  *pacer
	mu    sync.Mutex
	items []outItem
	bytes int // encoded size of the queued updates
	// wake signals the writer (cap 1); room signals waiting producers.
	wake   chan struct{}
	room   chan struct{}
	closed bool
	// behind: the pacer ran out of tokens (the client is being held to
	// the rate); only then are queued updates coalesced, so a client that
	// keeps up sees every state of every call.
	behind bool
	stop   chan struct{} // closed by close
	done   chan struct{} // closed when run returns
	onFull func()        // test hook: a producer waits for room
	// last is the session of the item written last (see turn); held
	// counts the queued updates of each session (see fits).
	last string
	held map[string]int
	// Coalesced counts updates merged into a queued one (for tests and
	// the benchmark).
	coalesced int
}

func newOutbox(conn *wire.Conn, perSecond float64) *outbox {
	pace := newPacer(perSecond, updateBurst)
	return &outbox{conn: conn, pace: pace, wake: make(chan struct{}, 1), held: map[string]int{},
		room: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// put queues an update of a session, merging it into a queued update when
// it can. It waits while the queue is full; once the outbox is closed it
// drops the update and runs after at once.
func (o *outbox) put(session string, u sdk.SessionUpdate, after ...func()) {
	call := ""
	switch {
	case u.ToolCall != nil:
		call = string(u.ToolCall.ToolCallId)
	case u.ToolCallUpdate != nil:
		call = string(u.ToolCallUpdate.ToolCallId)
	}
	it := outItem{session: session, update: &u, call: call, after: after}
	if line, err := json.Marshal(sdk.SessionNotification{SessionId: sdk.SessionId(session), Update: u}); err == nil {
		it.line, it.size = line, len(line)
	}
	o.add(it)
}

// mark queues a marker of a session: fn runs once everything of the
// session queued before it is written (or dropped at close).
func (o *outbox) mark(session string, fn func()) {
	o.add(outItem{session: session, after: []func(){fn}})
}

func (o *outbox) add(it outItem) {
	o.mu.Lock()
	for {
		if o.closed {
			o.mu.Unlock()
			for _, fn := range it.after {
				fn()
			}
			return
		}
		if o.behind && it.update != nil && o.absorb(it) {
			o.coalesced++
			o.mu.Unlock()
			return
		}
		if o.fits(it) {
			break
		}
		room := o.room
		o.mu.Unlock()
		if o.onFull != nil {
			o.onFull()
		}
		<-room
		o.mu.Lock()
	}
	o.items = append(o.items, it)
	o.bytes += it.size
	if it.update != nil {
		o.held[it.session]++
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// fits reports room for it: under both bounds, or an empty queue (one
// update bigger than the byte bound still goes, alone). Called with mu held.
//
// A session holds at most half the queue's updates: a replay of thousands
// waits for its own to be written, and the other half stays for the other
// sessions' live updates.
func (o *outbox) fits(it outItem) bool {
	if len(o.items) == 0 {
		return true
	}
	if it.update != nil && o.held[it.session] >= outboxSize/2 {
		return false
	}
	return len(o.items) < outboxSize && o.bytes+it.size <= outboxBytes
}

// run writes the queue until close. A failed write (the client left) is
// reported to onErr: the connection is ending, and the markers behind it
// still run.
func (o *outbox) run(onErr func(error)) {
	defer close(o.done)
	for {
		it, closed, ok := o.next()
		if !ok {
			return
		}
		if it.update != nil && !closed && !o.conn.WriteClosed() {
			o.send(it, onErr)
		}
		for _, fn := range it.after {
			fn()
		}
	}
}

// turn picks the item to write next: the head, unless the head is of the
// session written last and another session has something queued, whose
// first item goes then. Sessions take turns, each in its own order: one
// session's replay of thousands of updates delays another's live update by
// one write, not by the whole replay. Called with mu held.
func (o *outbox) turn() int {
	if o.items[0].session != o.last {
		return 0
	}
	for i := 1; i < len(o.items); i++ {
		if o.items[i].session != o.last {
			return i
		}
	}
	return 0
}

// next takes the next item of the queue (see turn), waiting for one; ok is false once the
// outbox is closed and empty.
func (o *outbox) next() (it outItem, closed, ok bool) {
	for {
		o.mu.Lock()
		if len(o.items) > 0 {
			break
		}
		if o.closed {
			o.mu.Unlock()
			return outItem{}, true, false
		}
		o.mu.Unlock()
		<-o.wake
	}
	i := o.turn()
	it = o.items[i]
	if i == 0 {
		o.items[0] = outItem{}
		o.items = o.items[1:]
	} else {
		o.items = append(o.items[:i:i], o.items[i+1:]...)
	}
	if len(o.items) == 0 {
		o.items = nil // let the backing array go
	}
	if it.update != nil {
		o.last = it.session // a marker takes no turn
	}
	o.bytes -= it.size
	if it.update != nil {
		if o.held[it.session]--; o.held[it.session] <= 0 {
			delete(o.held, it.session)
		}
	}
	closed = o.closed
	close(o.room)
	o.room = make(chan struct{})
	o.mu.Unlock()
	return it, closed, true
}

// send writes one update once the pacer allows it, and tells the pacer how
// long the pipe took to accept it.
func (o *outbox) send(it outItem, onErr func(error)) {
	if !o.pace.take() {
		o.setBehind(true)
		o.pace.wait(o.stop)
	} else if o.pace.tokens >= updateBurst/2 {
		o.setBehind(false)
	}
	line := it.line
	if line == nil {
		var err error
		if line, err = json.Marshal(sdk.SessionNotification{SessionId: sdk.SessionId(it.session), Update: *it.update}); err != nil {
			onErr(err)
			return
		}
	}
	start := time.Now()
	err := o.conn.NotifyRaw(sdk.ClientMethodSessionUpdate, line)
	o.pace.wrote(time.Since(start))
	if err != nil {
		onErr(err)
	}
}

func (o *outbox) setBehind(b bool) {
	o.mu.Lock()
	o.behind = b
	o.mu.Unlock()
}

// close stops the outbox: what is queued is dropped (its markers run), and
// later puts return at once.
func (o *outbox) close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	close(o.stop)
	close(o.room)
	o.room = make(chan struct{})
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}
