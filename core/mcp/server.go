package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is where a server is in its life.
type State string

// States.
const (
	StateStarting State = "starting"
	StateReady    State = "ready"
	StateFailed   State = "failed" // never started, timed out, or died and was not restarted
	// StateRestarting is a server that died and is being started again:
	// its tools stay on offer and a call to one waits for the restart.
	StateRestarting State = "restarting"
	StateStopped    State = "stopped"
)

// maxToolsPerServer bounds what one server adds to every request.
const maxToolsPerServer = 128

// Status is a server's state, for /mcp, the log and the doors.
type Status struct {
	Name      string
	Transport Transport
	Source    string
	Describe  string
	State     State
	Tools     int
	// Error says why the server failed (start, timeout, death).
	Error string
	// Note says what was left out (tools over the cap, schemas too large).
	Note string
	// Restarts is how many restarts the server has had in this session.
	Restarts int
}

// server is one connection to one MCP server.
type server struct {
	cfg ServerConfig
	set *Set

	mu       sync.Mutex
	state    State
	err      string
	note     string
	dropped  []string // tools the stdio filter left out of the last tools/list (takeDropped)
	cs       *sdk.ClientSession
	proc     *stdioProc
	tools    []remoteTool
	closing  bool
	dirty    chan struct{} // a tools/list_changed arrived
	done     chan struct{} // closed when the server is being stopped
	settled  chan struct{} // closed once the start ended (ready or failed)
	loops    sync.WaitGroup
	listedAt time.Time
	// Restarts (restart.go): when each recent one began, how many in all,
	// and, while restarting, a channel closed when the restart ends.
	restartedAt []time.Time
	restarts    int
	waiting     chan struct{}
}

// remoteTool is a server's tool as listed, already bounded.
type remoteTool struct {
	name     string
	title    string
	desc     string
	schema   []byte
	required []string
	hints    Hints
}

func newServer(set *Set, cfg ServerConfig) *server {
	return &server{cfg: cfg, set: set, state: StateStarting, dirty: make(chan struct{}, 1),
		done: make(chan struct{}), settled: make(chan struct{})}
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Name: s.cfg.Name, Transport: s.cfg.Transport, Source: s.cfg.Source, Describe: s.cfg.Describe(),
		State: s.state, Tools: len(s.tools), Error: s.err, Note: s.note, Restarts: s.restarts}
}

// start connects, initializes and lists the tools, within the set's start
// timeout. It never returns an error: a failure is the server's state. A
// server that fails its first start is not retried (its command or URL is
// wrong, or it refuses to run); one that dies later is (restart.go).
func (s *server) start(ctx context.Context) {
	defer close(s.settled)
	if err := s.cfg.Validate(); err != nil {
		s.fail(strings.TrimPrefix(err.Error(), ErrBadConfig.Error()+": "), false)
		return
	}
	cs, tools, note, err := s.connect(ctx)
	if err != nil {
		s.fail(err.Error(), true)
		return
	}
	s.up(cs, tools, note)
}

// connect starts the process (or opens the connection), initializes and
// lists the tools, within the start timeout. The session and process are
// the server's current ones as soon as they exist, so that stop releases
// them whatever step the start is at.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, []remoteTool, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.set.opts.StartTimeout)
	defer cancel()
	transport, err := s.transport()
	if err != nil {
		return nil, nil, "", err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "dsh", Version: s.set.opts.Version}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.markDirty() },
		// Logging and progress notifications are accepted and dropped:
		// the model never sees them and a door has nowhere to put them.
	})
	if s.set.opts.Cwd != "" {
		// Roots are deprecated from protocol 2026-07-28 on, but the
		// servers people run today (filesystem, git) still scope
		// themselves by them.
		//lint:ignore SA1019 still what current servers read
		client.AddRoots(&sdk.Root{URI: (&url.URL{Scheme: "file", Path: s.set.opts.Cwd}).String(), Name: filepath.Base(s.set.opts.Cwd)})
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, "", errors.New(s.startError("connecting", ctx, err))
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = cs.Close()
		return nil, nil, "", errStopped
	}
	s.cs = cs
	s.mu.Unlock()
	tools, note, err := s.list(ctx, cs)
	if err != nil {
		return nil, nil, "", errors.New(s.startError("listing its tools", ctx, err))
	}
	return cs, tools, note, nil
}

// up makes a connected server ready (after its start or a restart) and
// starts watching it. A restarted server that lists the same tools offers
// a byte-identical list, so the request prefix does not move; one that
// lists others has them taken at the next turn, as after
// tools/list_changed, with a warning in the log.
func (s *server) up(cs *sdk.ClientSession, tools []remoteTool, note string) bool {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	if s.state == StateRestarting && !slices.EqualFunc(s.tools, tools, sameTool) {
		s.set.warn(s.cfg.Name, "the restarted server lists other tools than before; they are offered from the next turn")
	}
	s.tools = tools
	s.state, s.note, s.err, s.listedAt = StateReady, note, "", time.Now()
	waiting, p := s.waiting, s.proc
	s.waiting = nil
	gone := make(chan struct{})
	s.loops.Add(2)
	s.mu.Unlock()
	if waiting != nil {
		close(waiting)
	}
	go s.watch(cs, p, gone)
	go s.relistLoop(cs, gone)
	s.set.changed(s)
	return true
}

// startError words a failed start: a timeout says which step did not
// answer; a stdio process that died says how, with its stderr.
func (s *server) startError(step string, ctx context.Context, err error) string {
	msg := fmt.Sprintf("%s failed: %v", step, err)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg = fmt.Sprintf("did not answer within %s while %s", s.set.opts.StartTimeout, step)
	}
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		wait := time.Second
		if ctx.Err() != nil {
			wait = 0 // it timed out: it is not exiting on its own
		}
		if p.exitedWithin(wait) {
			msg += "; " + p.exitText()
		} else if t := p.stderrTail(); t != "" {
			msg += "; its stderr ends with: " + t
		}
	}
	return msg
}

// ErrNetworkOff is why an HTTP or SSE server is not connected with the
// network off.
var ErrNetworkOff = errors.New("the network is off (sandboxNetwork: false in dsh's config)")

// transport builds the SDK transport of the server's kind.
func (s *server) transport() (sdk.Transport, error) {
	if dial := s.set.opts.dial; dial != nil {
		return dial(s.cfg)
	}
	switch s.cfg.Transport {
	case TransportStdio:
		p, t, err := startStdio(s.cfg, s.set.opts.Cwd, func(msg string) { s.set.warn(s.cfg.Name, msg) }, s.noteDropped)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		closing := s.closing
		s.proc = p
		s.mu.Unlock()
		if closing {
			_ = p.kill(context.Background())
			return nil, errors.New("the session closed while the server was starting")
		}
		return t, nil
	case TransportHTTP, TransportSSE:
		if s.set.opts.NetworkOff {
			return nil, fmt.Errorf("not connected to %s: %w", s.cfg.URL, ErrNetworkOff)
		}
	}
	switch s.cfg.Transport {
	case TransportHTTP:
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient(), MaxRetries: -1}, nil
	case TransportSSE:
		return &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient(), MaxEventSize: maxFrame}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", s.cfg.Transport)
}

func (s *server) httpClient() *http.Client {
	return &http.Client{Transport: headerTransport{headers: s.cfg.Headers, next: http.DefaultTransport}}
}

// headerTransport adds the configured headers (an API token, usually) to
// every request to the server.
type headerTransport struct {
	headers []KV
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		req = req.Clone(req.Context())
		for _, kv := range h.headers {
			req.Header.Set(kv.Name, kv.Value)
		}
	}
	return h.next.RoundTrip(req)
}

// list fetches every tool (all pages) and bounds them.
func (s *server) list(ctx context.Context, cs *sdk.ClientSession) ([]remoteTool, string, error) {
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil && r.Capabilities.Tools == nil {
		return nil, "", nil // the server offers no tools (prompts or resources only)
	}
	var out []remoteTool
	var notes []string
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, "", err
		}
		if t == nil || t.Name == "" || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		rt, note := boundTool(t)
		if note != "" {
			notes = append(notes, note)
		}
		out = append(out, rt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	notes = append(notes, s.takeDropped()...)
	if len(out) > maxToolsPerServer {
		notes = append(notes, fmt.Sprintf("the server lists %d tools; only the first %d by name are offered", len(out), maxToolsPerServer))
		out = out[:maxToolsPerServer]
	}
	return out, strings.Join(notes, "; "), nil
}

// noteDropped keeps the stdio filter's note of tools it left out of a
// tools/list answer, for the status of the list it belongs to.
func (s *server) noteDropped(note string) {
	s.mu.Lock()
	s.dropped = append(s.dropped, note)
	s.mu.Unlock()
}

// takeDropped returns and forgets the notes of noteDropped.
func (s *server) takeDropped() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.dropped
	s.dropped = nil
	return out
}

func (s *server) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// relistLoop re-lists the tools after each tools/list_changed. The new list
// is taken by the session at its next turn boundary (Set.Tools). It ends
// with its connection (gone).
func (s *server) relistLoop(cs *sdk.ClientSession, gone <-chan struct{}) {
	defer s.loops.Done()
	for {
		select {
		case <-s.done:
			return
		case <-gone:
			return
		case <-s.dirty:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.set.opts.StartTimeout)
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-gone:
				cancel()
			case <-ctx.Done():
			}
		}()
		tools, note, err := s.list(ctx, cs)
		cancel()
		if err != nil {
			s.set.warn(s.cfg.Name, "re-listing tools after tools/list_changed failed: "+err.Error())
			continue
		}
		s.mu.Lock()
		if s.state != StateReady || s.cs != cs {
			s.mu.Unlock()
			return
		}
		s.tools, s.note, s.listedAt = tools, note, time.Now()
		s.mu.Unlock()
		s.set.changed(s)
	}
}

// watch notices a server that goes away: the process exits or the
// connection breaks. Closing gone ends the connection's relistLoop.
func (s *server) watch(cs *sdk.ClientSession, p *stdioProc, gone chan struct{}) {
	defer s.loops.Done()
	defer close(gone)
	connDone := make(chan error, 1)
	go func() { connDone <- cs.Wait() }()
	var why string
	select {
	case <-s.done:
		return
	case err := <-connDone:
		why = "the connection closed"
		if err != nil {
			why = "the connection broke: " + err.Error()
		}
		if p != nil && p.exitedWithin(time.Second) {
			why = p.exitText()
		}
	case <-procExited(p):
		why = p.exitText()
	}
	s.died(cs, why)
}

func procExited(p *stdioProc) <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.exited
}

// fail records the failure, reports it, and releases what the server held.
// Calls waiting for a restart see the failure.
func (s *server) fail(why string, stop bool) {
	s.mu.Lock()
	if s.closing || s.state == StateFailed {
		s.mu.Unlock()
		return
	}
	s.state, s.err, s.tools = StateFailed, why, nil
	waiting := s.waiting
	s.waiting = nil
	s.mu.Unlock()
	if waiting != nil {
		close(waiting)
	}
	if stop {
		s.release(context.Background())
	}
	s.set.changed(s)
}

// release closes the session and stops the process.
func (s *server) release(ctx context.Context) error {
	s.mu.Lock()
	cs, p := s.cs, s.proc
	s.mu.Unlock()
	return releaseConn(ctx, cs, p)
}

func releaseConn(ctx context.Context, cs *sdk.ClientSession, p *stdioProc) error {
	var errs []error
	if p != nil {
		// Stop the process first: closing the SDK session waits for the
		// connection to wind down, which a wedged server never does.
		errs = append(errs, p.kill(ctx))
	}
	if cs != nil {
		done := make(chan struct{})
		go func() {
			_ = cs.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	return errors.Join(errs...)
}

// stop ends the server for good (the session closes).
func (s *server) stop(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	if s.state != StateFailed {
		s.state = StateStopped
	}
	s.mu.Unlock()
	close(s.done)
	err := s.release(ctx)
	<-s.settled
	s.loops.Wait()
	return err
}

// session returns the live SDK session and its process (nil over HTTP),
// or why there is none. A server being restarted is waited for (within
// ctx); one whose process is found dead is restarted first, since the call
// has not reached it.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, *stdioProc, error) {
	for {
		s.mu.Lock()
		state, cs, p, waiting := s.state, s.cs, s.proc, s.waiting
		s.mu.Unlock()
		switch state {
		case StateReady:
			if p == nil || p.p.Running() {
				return cs, p, nil
			}
			s.died(cs, p.exitText())
			continue
		case StateRestarting:
			select {
			case <-waiting:
			case <-s.done:
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("%w: server %q was still being restarted: %w", errNotRunning, s.cfg.Name, ctx.Err())
			}
			continue
		}
		return nil, nil, s.notRunning(state)
	}
}

func (s *server) notRunning(state State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case StateFailed:
		return fmt.Errorf("%w: server %q failed: %s", errNotRunning, s.cfg.Name, s.err)
	case StateStarting:
		return fmt.Errorf("%w: server %q is still starting", errNotRunning, s.cfg.Name)
	}
	return fmt.Errorf("%w: server %q was stopped", errNotRunning, s.cfg.Name)
}
