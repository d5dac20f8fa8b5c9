package acp

import (
	"context"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
)

// The session/updates of a connection leave through one bounded, paced
// queue, the outbox:
//
//   - bounded: put waits while the queue is full, so a client that reads
//     slowly (or not at all) slows the pump, the pump slows the runtime's
//     subscription, and the subscription slows the sessions' commits — a
//     turn slows down, a replay paces itself, and memory stays flat;
//   - paced: notifications leave at most at the configured rate (after a
//     burst), because a client on acp-go-sdk queues notifications in 1,024
//     slots and drops the connection when its handler falls that far
//     behind: the pipe's backpressure never reaches the agent. The default
//     rate keeps a client whose handler takes 1 ms per update connected;
//   - coalesced: a tool call's update that is still queued absorbs the
//     call's next update (pending → in progress → completed becomes one
//     frame with the final state), so a slow client gets fewer frames and
//     loses no fact: ACP's tool_call_update replaces exactly the fields it
//     carries, and the merged frame carries the latest of each.
//
// Markers ride the same queue: a marker runs its callbacks once every update
// put before it has been written, which is how the pump's progress (the last
// event on the wire, the tool calls the client knows) stays true.

// Defaults of the pacing (see Options.UpdatesPerSecond).
const (
	defaultUpdatesPerSecond = 600
	updateBurst             = 256
	outboxSize              = 512
)

// outItem is one queued update, or a marker when update is nil.
type outItem struct {
	session string
	update  *sdk.SessionUpdate
	call    string // the tool call an update is about, or ""
	after   []func()
}

// outbox is the connection's queue of session/update notifications.
type outbox struct {
	conn  *wire.Conn
	pace  *pacer
	mu    sync.Mutex
	items []outItem
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
	// Coalesced counts updates merged into a queued one (for tests and
	// the benchmark).
	coalesced int
}

func newOutbox(conn *wire.Conn, perSecond float64) *outbox {
	return &outbox{conn: conn, pace: newPacer(perSecond, updateBurst), wake: make(chan struct{}, 1),
		room: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// put queues an update of a session, merging it into a queued update of the
// same tool call when it can. It waits while the queue is full; once the
// outbox is closed it drops the update and runs after at once.
func (o *outbox) put(session string, u sdk.SessionUpdate, after ...func()) {
	call := ""
	switch {
	case u.ToolCall != nil:
		call = string(u.ToolCall.ToolCallId)
	case u.ToolCallUpdate != nil:
		call = string(u.ToolCallUpdate.ToolCallId)
	}
	o.add(outItem{session: session, update: &u, call: call, after: after})
}

// mark queues a marker: fn runs once everything queued before it is
// written (or dropped at close).
func (o *outbox) mark(fn func()) { o.add(outItem{after: []func(){fn}}) }

// markWait queues a marker and waits for it, or for ctx.
func (o *outbox) markWait(ctx context.Context) error {
	ch := make(chan struct{})
	o.mark(func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
		if o.behind && it.update != nil && it.update.ToolCallUpdate != nil && o.coalesce(it) {
			o.coalesced++
			o.mu.Unlock()
			return
		}
		if len(o.items) < outboxSize {
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
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// coalesce merges a tool_call_update into the latest queued update of the
// same call, when only markers and other calls' updates of the session lie
// between them (any other update of the session — a message, a plan —
// keeps its order relative to the call's states). Called with mu held.
func (o *outbox) coalesce(it outItem) bool {
	for i := len(o.items) - 1; i >= 0; i-- {
		q := &o.items[i]
		if q.update == nil || q.session != it.session {
			continue
		}
		if q.call == "" {
			if isChunk(q.update) {
				return false
			}
			continue // a plan, usage or info snapshot: its order does not matter
		}
		if q.call != it.call {
			continue
		}
		mergeToolUpdate(q.update, it.update.ToolCallUpdate)
		q.after = append(q.after, it.after...)
		return true
	}
	return false
}

// isChunk reports a message chunk, whose place among tool calls is what the
// chat shows.
func isChunk(u *sdk.SessionUpdate) bool {
	return u.UserMessageChunk != nil || u.AgentMessageChunk != nil || u.AgentThoughtChunk != nil
}

// mergeToolUpdate folds n into the queued update u of the same call: every
// field n carries replaces u's (ACP's own rule for tool_call_update).
func mergeToolUpdate(u *sdk.SessionUpdate, n *sdk.SessionToolCallUpdate) {
	if tc := u.ToolCall; tc != nil {
		if n.Status != nil {
			tc.Status = *n.Status
		}
		if n.Title != nil {
			tc.Title = *n.Title
		}
		if n.Kind != nil {
			tc.Kind = *n.Kind
		}
		if n.Content != nil {
			tc.Content = n.Content
		}
		if n.Locations != nil {
			tc.Locations = n.Locations
		}
		if n.RawInput != nil {
			tc.RawInput = n.RawInput
		}
		if n.RawOutput != nil {
			tc.RawOutput = n.RawOutput
		}
		return
	}
	q := u.ToolCallUpdate
	if n.Status != nil {
		q.Status = n.Status
	}
	if n.Title != nil {
		q.Title = n.Title
	}
	if n.Kind != nil {
		q.Kind = n.Kind
	}
	if n.Content != nil {
		q.Content = n.Content
	}
	if n.Locations != nil {
		q.Locations = n.Locations
	}
	if n.RawInput != nil {
		q.RawInput = n.RawInput
	}
	if n.RawOutput != nil {
		q.RawOutput = n.RawOutput
	}
}

// run writes the queue until close. A failed write (the client left) is
// logged by the caller's logger at debug level only: the connection is
// ending, and the markers behind it still run.
func (o *outbox) run(onErr func(error)) {
	defer close(o.done)
	for {
		o.mu.Lock()
		if len(o.items) == 0 {
			if o.closed {
				o.mu.Unlock()
				return
			}
			o.mu.Unlock()
			<-o.wake
			continue
		}
		it := o.items[0]
		o.items[0] = outItem{}
		o.items = o.items[1:]
		if len(o.items) == 0 {
			o.items = nil // let the backing array go
		}
		closed := o.closed
		close(o.room)
		o.room = make(chan struct{})
		o.mu.Unlock()
		if it.update != nil && !closed && !o.conn.WriteClosed() {
			if !o.pace.take() {
				o.setBehind(true)
				o.pace.wait(o.stop)
			} else if o.pace.tokens >= updateBurst/2 {
				o.setBehind(false)
			}
			if err := o.conn.Notify(sdk.ClientMethodSessionUpdate, sdk.SessionNotification{SessionId: sdk.SessionId(it.session), Update: *it.update}); err != nil {
				onErr(err)
			}
		}
		for _, fn := range it.after {
			fn()
		}
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

// pacer is a token bucket: burst frames at once, then rate per second.
type pacer struct {
	rate   float64 // tokens per second; <= 0 = unpaced
	burst  float64
	tokens float64
	last   time.Time
}

func newPacer(rate float64, burst int) *pacer {
	return &pacer{rate: rate, burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

// take takes a token if one is there. Only the outbox's writer calls the
// pacer.
func (p *pacer) take() bool {
	if p.rate <= 0 {
		return true
	}
	now := time.Now()
	p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	p.last = now
	if p.tokens >= 1 {
		p.tokens--
		return true
	}
	return false
}

// wait waits for the next token to accrue and takes it (a timer, not a
// poll), unless stop closes first. Call it after take failed.
func (p *pacer) wait(stop <-chan struct{}) {
	need := time.Duration((1 - p.tokens) / p.rate * float64(time.Second))
	t := time.NewTimer(need)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
	p.last = time.Now()
	p.tokens = 0
}
