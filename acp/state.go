package acp

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
	"github.com/dsh-dev/dsh/core"
)

// agent serves one ACP connection: it is the wire.Handler the door
// dispatches to (dispatch.go).
type agent struct {
	rt   *core.Runtime
	conn *peer
	opts Options
	log  *slog.Logger
	out  *outbox
	// stop ends the sessions' readers (teardown); readers counts them and
	// the child followers.
	stop    chan struct{}
	readers sync.WaitGroup

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
	return &agent{rt: rt, opts: opts, log: opts.Logger, sessions: map[string]*sessState{}, stop: make(chan struct{})}
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

// adopt makes st the session's state and starts its reader, after the
// last event attach saw (held: a session/load replays the history first).
// A session registered while the connection closes is closed at once.
func (a *agent) adopt(st *sessState, held bool) error {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		_ = st.s.Close(context.Background())
		return errShuttingDown
	}
	a.sessions[st.id] = st
	st.progMu.Lock() // waitFor may run on a turn's goroutine already
	st.rd = newReader(a, st, st.start, held)
	st.progMu.Unlock()
	a.readers.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.readers.Done()
		st.rd.run(a.stop)
	}()
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

	// rd is the session's reader (reader.go), set by adopt; proj is its
	// projection, used by rd's goroutine only; start is the seq rd starts
	// after.
	rd    *reader
	proj  *projector
	start int64

	// Progress of the reader on this session, guarded by progMu: sent is
	// the seq of the last event whose updates are written; calls are the
	// tool calls whose tool_call update is on the wire, with whether their
	// result is too.
	progMu   sync.Mutex
	sent     int64
	calls    map[string]bool
	execs    []execCall // bash calls sent and not finished, in order
	progress chan struct{}
}

func newSessState(a *agent, id, cwd string) *sessState {
	return &sessState{id: id, cwd: cwd, sent: -1, start: -1, calls: map[string]bool{}, progress: make(chan struct{})}
}

// attach binds the state to its runtime session, before the state is
// adopted: the running cost starts from the history, and the reader
// starts after its last event.
func (st *sessState) attach(a *agent, s *core.Session) {
	st.s = s
	st.cwd = s.Cwd()
	st.proj = newProjector(a, st)
	evs := s.Events()
	st.proj.seedCost(evs)
	if n := len(evs); n > 0 {
		st.start = evs[n-1].Seq
	}
}

// advance publishes the reader's progress to waiters.
func (st *sessState) advance(fn func()) {
	st.progMu.Lock()
	fn()
	close(st.progress)
	st.progress = make(chan struct{})
	st.progMu.Unlock()
}

// waitFor blocks until cond holds (checked under progMu), ctx ends or the
// reader has stopped and its updates are written.
func (st *sessState) waitFor(ctx context.Context, cond func() bool) error {
	for {
		var stopped <-chan struct{}
		st.progMu.Lock()
		ok := cond()
		ch := st.progress
		if st.rd != nil {
			stopped = st.rd.flushed
		}
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
