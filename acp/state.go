package acp

import (
	"context"
	"errors"
	"log/slog"
	"sync"

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
	out  *outbox

	mu       sync.Mutex
	closing  bool
	client   sdk.ClientCapabilities
	sessions map[string]*sessState
	// children maps an in-process subagent's session to the parent call
	// that shows its progress.
	children map[string]childLink

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
	// cmds is the slash-command list last announced (its JSON), so a
	// prompt re-announces it when a command file changed.
	cmds string

	// proj is used under projMu: by the pump for live events, by a
	// session/load for its replay.
	projMu sync.Mutex
	proj   *projector

	// Progress of the pump on this session, guarded by progMu: sent is the
	// seq of the last event projected; calls are the tool calls whose
	// tool_call update is on the wire, with whether their result is too.
	progMu sync.Mutex
	sent   int64
	// queued is the seq of the last event handed to the outbox (guarded
	// by projMu); sent trails it until the outbox has written it.
	queued int64
	// replaying: a session/load will replay the history, so live events
	// are skipped (skipped is the last one), guarded by projMu.
	replaying bool
	skipped   int64
	calls     map[string]bool
	execs     []execCall // bash calls sent and not finished, in order
	progress  chan struct{}
}

func newSessState(a *agent, id, cwd string) *sessState {
	return &sessState{id: id, cwd: cwd, sent: -1, queued: -1, skipped: -1, calls: map[string]bool{}, progress: make(chan struct{})}
}

// attach binds the state to its runtime session, before the state is
// adopted (the pump reads s and proj only after that).
func (st *sessState) attach(a *agent, s *core.Session) {
	st.s = s
	st.cwd = s.Cwd()
	st.proj = newProjector(a, st)
	st.proj.seedCost(s.Events())
}

// expectReplay makes live projection wait for a replay (session/load).
func (st *sessState) expectReplay() {
	st.projMu.Lock()
	st.replaying = true
	st.projMu.Unlock()
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
// sessions. It waits when the pump's queue is full: a slow client slows the
// sessions publishing to it, and nothing queues without bound.
func (a *agent) subscribe(sub *core.Subscription) {
	for {
		select {
		case n := <-sub.C():
			if n.Kind == core.NoticeClosed {
				a.sessionClosed(n.SessionID)
			}
			if n.Kind != core.NoticeEvent {
				continue
			}
			// The state is bound now: a session closed and loaded again
			// gets a new state, and this event belongs to the old one.
			if st := a.tracked(n.SessionID); st != nil {
				a.noteChild(st, n.Event)
				a.pump.push(item{st: st, event: &n.Event})
			} else if l, ok := a.childOf(n.SessionID); ok {
				a.pump.push(item{st: l.st, event: &n.Event, childCall: l.callID})
			}
		case <-sub.Done():
			return
		}
	}
}

// sessionClosed queues the forgetting of a session's state once its core session
// has closed: the state goes when every update queued before it is on the
// wire. A state that a later session/load replaced (a new core session)
// stays.
func (a *agent) sessionClosed(id string) {
	st := a.tracked(id)
	if st == nil || !st.s.Closed() {
		return
	}
	a.pump.push(item{st: st, forget: true})
}

// forget drops st, unless the session's state is another one by now.
func (a *agent) forget(st *sessState) {
	a.mu.Lock()
	gone := a.sessions[st.id] == st
	if gone {
		delete(a.sessions, st.id)
	}
	a.mu.Unlock()
	if gone && a.opts.onForget != nil {
		a.opts.onForget(st.id)
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
	// event is a committed event to project; with childCall, an event of
	// a child session shown in that call of st.
	event     *event.Event
	childCall string
	// update is sent as is (available commands, a terminal embedded in a
	// running tool call).
	update *sdk.SessionUpdate
	// done, when set, is closed once the item's updates are on the wire.
	done chan struct{}
	// forget: the session closed; its state goes once the outbox has
	// written what came before.
	forget bool
}

// pumpQueue bounds the pump's queue (events and door-made updates).
const pumpQueue = 1024

// pump turns live events into updates, in commit order, into the outbox.
// Replays do not go through it: a session/load projects its snapshot on
// its own goroutine, holding the session's projection lock (see
// projector.replay).
type pump struct {
	a       *agent
	ch      chan item
	stopReq chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newPump(a *agent) *pump {
	return &pump{a: a, ch: make(chan item, pumpQueue), stopReq: make(chan struct{}), stopped: make(chan struct{})}
}

// push queues it, waiting while the queue is full. After stop it is
// dropped (its done closed).
func (p *pump) push(it item) {
	select {
	case <-p.stopReq:
		if it.done != nil {
			close(it.done)
		}
		return
	default:
	}
	select {
	case p.ch <- it:
	case <-p.stopReq:
		if it.done != nil {
			close(it.done)
		}
	}
}

// stop ends run after what is queued has been processed.
func (p *pump) stop() { p.once.Do(func() { close(p.stopReq) }) }

func (p *pump) run() {
	defer close(p.stopped)
	for {
		select {
		case it := <-p.ch:
			p.process(it)
		case <-p.stopReq:
			for {
				select {
				case it := <-p.ch:
					p.process(it)
				default:
					return
				}
			}
		}
	}
}

func (p *pump) process(it item) {
	st := it.st
	switch {
	case it.event != nil && it.childCall != "":
		st.projMu.Lock()
		if u, ok := st.proj.childEvent(it.childCall, *it.event); ok {
			p.a.out.put(st.id, u)
		}
		st.projMu.Unlock()
	case it.event != nil:
		st.proj.live(*it.event)
	case it.update != nil:
		p.a.out.put(st.id, *it.update)
	case it.forget:
		p.a.out.mark(st.id, func() { p.a.forget(st) })
	}
	if it.done != nil {
		p.a.out.mark(st.id, func() { close(it.done) })
	}
}

// enqueueWait queues it and waits until its updates are on the wire.
func (p *pump) enqueueWait(ctx context.Context, it item) error {
	it.done = make(chan struct{})
	p.push(it)
	select {
	case <-it.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.a.out.done:
		return errShuttingDown
	}
}
