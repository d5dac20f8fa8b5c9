package acp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// agent serves one ACP connection: it is the wire.Handler the door
// dispatches to (dispatch.go).
type agent struct {
	rt   *core.Runtime
	conn *peer
	opts Options
	log  *slog.Logger
	pump *pump

	mu       sync.Mutex
	closing  bool
	client   sdk.ClientCapabilities
	sessions map[string]*sessState

	// handlers counts running request handlers, so Serve returns only
	// after the last one.
	handlers sync.WaitGroup
}

var _ wire.Handler = (*agent)(nil)

func newAgent(rt *core.Runtime, opts Options) *agent {
	a := &agent{rt: rt, opts: opts, log: opts.Logger, sessions: map[string]*sessState{}}
	a.pump = newPump(a)
	return a
}

var errShuttingDown = errors.New("the agent is shutting down")

// enter registers a running handler; false once the connection is closing.
func (a *agent) enter() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return false
	}
	a.handlers.Add(1)
	return true
}

func (a *agent) leave() { a.handlers.Done() }

func (a *agent) clientCaps() sdk.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client
}

// session returns the open session of this connection with that id.
func (a *agent) session(id string) *sessState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.sessions[id]
	if st == nil || st.closed {
		return nil
	}
	return st
}

// tracked returns the state of a session whose events are projected
// (open, or closed with updates still draining).
func (a *agent) tracked(id string) *sessState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// adopt makes st the session's state. A session registered while the
// connection closes is closed at once.
func (a *agent) adopt(st *sessState) error {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		_ = st.s.Close(context.Background())
		return errShuttingDown
	}
	a.sessions[st.id] = st
	a.mu.Unlock()
	return nil
}

// sessState is what the connection knows of one session it opened.
type sessState struct {
	id  string
	s   *core.Session
	cwd string

	// Guarded by agent.mu.
	closed bool

	// Prompt bookkeeping, guarded by pmu.
	pmu             sync.Mutex
	prompting       bool
	cancelRequested bool

	// proj is used by the pump goroutine only.
	proj *projector
	// replayPending holds live updates back while a replay is queued.
	replayPending atomic.Bool

	// Progress of the pump on this session, guarded by progMu: sent is the
	// seq of the last event projected; calls are the tool calls whose
	// tool_call update is on the wire, with whether their result is too.
	progMu   sync.Mutex
	sent     int64
	calls    map[string]bool
	execs    []execCall // bash calls sent and not finished, in order
	progress chan struct{}
}

func newSessState(a *agent, id, cwd string) *sessState {
	return &sessState{id: id, cwd: cwd, sent: -1, calls: map[string]bool{}, progress: make(chan struct{})}
}

// attach binds the state to its runtime session, before the state is
// adopted (the pump reads s and proj only after that).
func (st *sessState) attach(a *agent, s *core.Session) {
	st.s = s
	st.cwd = s.Cwd()
	st.proj = newProjector(a, st)
}

// advance publishes the pump's progress to waiters.
func (st *sessState) advance(fn func()) {
	st.progMu.Lock()
	fn()
	close(st.progress)
	st.progress = make(chan struct{})
	st.progMu.Unlock()
}

// waitFor blocks until cond holds (checked under progMu), ctx ends or the
// pump stops.
func (st *sessState) waitFor(ctx context.Context, stopped <-chan struct{}, cond func() bool) error {
	for {
		st.progMu.Lock()
		ok := cond()
		ch := st.progress
		st.progMu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-stopped:
			return errShuttingDown
		}
	}
}

// subscribe feeds the pump with the committed events of this connection's
// sessions. It never blocks on the pump (the queue is unbounded), so the
// sessions publishing to it are slowed by nothing but the hand-over.
func (a *agent) subscribe(sub *core.Subscription) {
	for {
		select {
		case n := <-sub.C():
			if n.Kind != core.NoticeEvent {
				continue
			}
			// The state is bound now: a session closed and loaded again
			// gets a new state, and this event belongs to the old one.
			if st := a.tracked(n.SessionID); st != nil {
				a.pump.push(item{st: st, event: &n.Event})
			}
		case <-sub.Done():
			return
		}
	}
}

// execCall is a bash call whose tool_call is out and whose result is not;
// allowed once its permission was granted (it is running).
type execCall struct {
	id      string
	allowed bool
}

// item is one unit of work of the pump.
type item struct {
	st *sessState
	// event is a committed event to project.
	event *event.Event
	// replay projects the whole history of the session, then closes done.
	replay bool
	// update is sent as is (available commands, a terminal embedded in a
	// running tool call).
	update *sdk.SessionUpdate
	// done, when set, is closed once the item is processed.
	done chan struct{}
}

// pump is the single sender of session/update notifications: live events,
// replays and door-made updates go through one ordered queue, so a client
// sees every session's updates in commit order and a replay never
// interleaves with live updates.
type pump struct {
	a       *agent
	mu      sync.Mutex
	queue   []item
	wake    chan struct{}
	stopped chan struct{}
	stopReq bool
}

func newPump(a *agent) *pump {
	return &pump{a: a, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

func (p *pump) push(it item) {
	p.mu.Lock()
	if p.stopReq {
		p.mu.Unlock()
		if it.done != nil {
			close(it.done)
		}
		return
	}
	p.queue = append(p.queue, it)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// stop ends run after the queue drains.
func (p *pump) stop() {
	p.mu.Lock()
	p.stopReq = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pump) run() {
	defer close(p.stopped)
	for {
		p.mu.Lock()
		batch := p.queue
		p.queue = nil
		stop := p.stopReq
		p.mu.Unlock()
		for _, it := range batch {
			p.process(it)
		}
		if len(batch) > 0 {
			continue
		}
		if stop {
			return
		}
		<-p.wake
	}
}

func (p *pump) process(it item) {
	st := it.st
	switch {
	case it.event != nil:
		st.proj.live(*it.event)
	case it.replay:
		st.proj.replay()
	case it.update != nil:
		p.send(st.id, *it.update)
	}
	if it.done != nil {
		close(it.done)
	}
}

// send writes one update. A failed write (the client left) is logged at
// debug level: the connection is ending.
func (p *pump) send(sessionID string, u sdk.SessionUpdate) {
	err := p.a.conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: sdk.SessionId(sessionID), Update: u})
	if err != nil {
		p.a.log.Debug("acp: session/update not sent", "session", sessionID, "err", err)
	}
}

// enqueueWait queues it and waits until the pump has processed it.
func (p *pump) enqueueWait(ctx context.Context, it item) error {
	it.done = make(chan struct{})
	p.push(it)
	select {
	case <-it.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.stopped:
		return errShuttingDown
	}
}
