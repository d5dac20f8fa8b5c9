// Package sdkrpc is the SDK JSON-RPC door: `dsh sdk` serves the original
// DeepSeek Harness SDK protocol (spec dsh-protocols.md §1–3) on stdio so the
// original's TypeScript and Python clients drive it unchanged, plus a few
// optional extensions of ours (cancel, close, host-answered permissions).
package sdkrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/internal/outpipe"
	"github.com/dsh-dev/dsh/sdkrpc/dispatch"
	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// Options configure the SDK server.
type Options struct {
	// Version is reported as serverInfo.version.
	Version string
	Logger  *slog.Logger
	// DefaultCwd is the working directory when initialize names none
	// (the original's launchers set DSH_CWD).
	DefaultCwd string
	// MaxTokensAsSuccess reports a child that hit its token cap as ok in
	// subagent.finished (the original's server option; default false).
	MaxTokensAsSuccess bool
	// MaxLineBytes caps one incoming frame (default 64 MiB).
	MaxLineBytes int
	// ShutdownTimeout bounds session disposal on shutdown (default 10 s).
	ShutdownTimeout time.Duration
}

// Server serves one connection.
//
// Every request read is answered before the process exits. The read
// goroutine owns the order of things: dispatch's OnRead hook (onRead) sees
// each request in wire order, counts it as pending, notes a shutdown and
// marks the requests read after it late, and chains each session/prompt
// behind the initialize and the prompt for the same session read before
// it, so requests sent in one write are handled in the order they were
// written. OnReplied (onReplied) counts a request answered once its
// response is on the wire. The input is wrapped (inputGate) so the server
// knows when the reader has consumed every byte it was given — it is
// blocked waiting for more, or at EOF. The exit after shutdown, and the end
// of input, wait for "drained and nothing pending" on a condition variable:
// no timer, no polling, no matching of written bytes.
type Server struct {
	rt     *core.Runtime
	opts   Options
	log    *slog.Logger
	conn   *jsonrpc2.Conn
	ready  chan struct{} // closed once conn is set: handlers may use it
	stream *ndjson.Stream

	mu          sync.Mutex
	initialized bool
	initPending bool
	sessCfg     core.SessionOptions
	hostAsks    bool
	shutting    bool
	disposeOnce sync.Once
	done        chan int // exit code, once

	// Owned by the read goroutine (written under mu by onRead and
	// inputGate, read by the waiters).
	settled      *sync.Cond // on mu: pending, drained or stopped changed
	pending      int        // requests read whose response is not yet written
	drained      bool       // the reader is waiting for input or saw its end
	stopped      bool       // Serve is returning: waiters give up
	shutdownRead bool
	lastInit     chan struct{}            // closed when the last initialize read has been handled
	lastPrompt   map[string]chan struct{} // per session: closed when the last prompt read for it is admitted

	// written[sessionID] is the seq of the last session.event written, so a
	// prompt's response never overtakes its receipt.
	wmu     sync.Mutex
	wcond   *sync.Cond
	written map[string]int64
}

// readOrder is what onRead attaches to a request: whether it came after a
// shutdown, and what it must wait for to be handled in wire order.
type readOrder struct {
	late      bool
	initDone  <-chan struct{} // prompt, shutdown: the last initialize read before it
	prevAdmit <-chan struct{} // prompt: the last prompt for its session read before it
	own       chan struct{}   // initialize: handled; prompt: admitted
	sessionID string
}

// Serve runs the SDK door on in/out until shutdown, input EOF or ctx ends.
// It returns the exit code the process should end with: 0 after shutdown
// or EOF. Every session is disposed and its log flushed before it returns.
func Serve(ctx context.Context, rt *core.Runtime, in io.Reader, out io.Writer, opts Options) int {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	s := &Server{rt: rt, opts: opts, log: opts.Logger, done: make(chan int, 1), written: map[string]int64{},
		lastPrompt: map[string]chan struct{}{}}
	s.wcond = sync.NewCond(&s.wmu)
	s.settled = sync.NewCond(&s.mu)

	sub := rt.Subscribe()
	// Every write to the host goes through w, which teardown abandons
	// after a grace: a host that stopped reading cannot keep the door
	// from exiting.
	w := outpipe.New(out)
	defer w.Abandon()
	stream := ndjson.NewSplit(&inputGate{r: in, s: s}, w, nil, ndjson.Options{MaxLineBytes: opts.MaxLineBytes, Logger: opts.Logger})
	s.stream = stream
	h := dispatch.New(s.handle, dispatch.Options{Logger: opts.Logger, OnRead: s.onRead, OnReplied: s.onReplied})
	connCtx, cancelConn := context.WithCancel(ctx)
	defer cancelConn()
	s.ready = make(chan struct{})
	s.conn = jsonrpc2.NewConn(connCtx, &answeringStream{Stream: stream, s: s}, h)
	close(s.ready)

	fwdDone := make(chan struct{})
	go func() {
		defer close(fwdDone)
		s.forward(connCtx, sub)
	}()

	code := 0
	var abandon *time.Timer
	select {
	case code = <-s.done:
	case <-s.conn.DisconnectNotify():
		s.log.Debug("sdk: input closed; disposing sessions")
		abandon = time.AfterFunc(writeGrace, w.Abandon)
		s.dispose()
	case <-ctx.Done():
		abandon = time.AfterFunc(writeGrace, w.Abandon)
		s.dispose()
	}
	if abandon != nil {
		defer abandon.Stop()
	}
	s.mu.Lock()
	s.stopped = true
	s.settled.Broadcast()
	s.mu.Unlock()
	sub.Close()
	cancelConn()
	_ = s.conn.Close()
	h.Close()
	<-fwdDone
	s.wmu.Lock()
	s.wcond.Broadcast()
	s.wmu.Unlock()
	return code
}

// writeGrace is how long, after input EOF or a signal, writes to the host
// may still wait for it to read before they are abandoned.
const writeGrace = time.Second

// maxBatch bounds how many notifications one write carries.
const maxBatch = 128

// forward turns runtime notices into notifications, in order. Notices that
// are already waiting are written together with one write: under load the
// write syscall per notification was a fair share of the door's cost.
func (s *Server) forward(ctx context.Context, sub *core.Subscription) {
	var buf []byte
	seqs := map[string]int64{}
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			return
		}
		buf = buf[:0]
		clear(seqs)
		buf = s.appendNotice(buf, n, seqs)
	batch:
		for i := 1; i < maxBatch; i++ {
			select {
			case n = <-sub.C():
				buf = s.appendNotice(buf, n, seqs)
			default:
				break batch
			}
		}
		select {
		case <-s.conn.DisconnectNotify():
			return
		default:
		}
		if len(buf) > 0 {
			if err := s.stream.WriteLines(buf); err != nil {
				s.log.Warn("sdk: notifications not sent", "err", err)
			}
		}
		if len(seqs) > 0 {
			s.wmu.Lock()
			for id, seq := range seqs {
				s.written[id] = seq
			}
			s.wcond.Broadcast()
			s.wmu.Unlock()
		}
	}
}

// appendNotice appends the notifications of one notice to buf, noting the
// seq of each session's last event in seqs.
func (s *Server) appendNotice(buf []byte, n core.Notice, seqs map[string]int64) []byte {
	add := func(method string, params any) {
		out, err := ndjson.AppendNotification(buf, method, params)
		if err != nil {
			s.log.Warn("sdk: notification not encoded", "method", method, "err", err)
			return
		}
		buf = out
	}
	switch n.Kind {
	case core.NoticeEvent:
		add(protocol.NotifySessionEvent, protocol.SessionEventParams{SessionID: n.SessionID, Event: boundEvent(n.Event)})
		if n.Event.Type == event.TypeSubagentEnd {
			if p, ok := s.subagentFinished(n); ok {
				add(protocol.NotifySubagentFinished, p)
			}
		}
		seqs[n.SessionID] = n.Event.Seq
	case core.NoticeStatus:
		add(protocol.NotifySessionStatus, protocol.SessionStatusParams{SessionID: n.SessionID, Status: n.Status})
	case core.NoticeCreated:
		// In-process children only: a dsh started by another's gateway
		// records that process's session as its sessions' parent.
		if n.Header.ParentSession != "" && !n.Resumed && s.rt.Get(n.Header.ParentSession) != nil {
			add(protocol.NotifySubagentStarted, protocol.SubagentStartedParams{
				ParentSessionID: n.Header.ParentSession, ChildSessionID: n.SessionID})
		}
	}
	return buf
}

// subagentFinished is the notification of an in-process child run, as the
// original (remote runs are not reported).
func (s *Server) subagentFinished(n core.Notice) (protocol.SubagentFinishedParams, bool) {
	d, err := event.Decode[event.SubagentEnd](n.Event)
	if err != nil || !d.Local {
		return protocol.SubagentFinishedParams{}, false
	}
	status := protocol.SubagentError
	if d.StopReason == event.ReasonCompleted || (d.StopReason == event.ReasonMaxTokens && s.opts.MaxTokensAsSuccess) {
		status = protocol.SubagentOK
	}
	p := protocol.SubagentFinishedParams{Provider: d.Provider, AgentID: d.ChildSessionID, ParentSessionID: n.SessionID,
		ChildSessionID: d.ChildSessionID, Status: status, StopReason: d.StopReason}
	if d.Output != "" {
		p.LastAssistantMessage = []event.ContentBlock{event.Text(d.Output)}
	}
	return p, true
}

// waitWritten blocks until the session.event of seq was written.
func (s *Server) waitWritten(ctx context.Context, sessionID string, seq int64) {
	stop := context.AfterFunc(ctx, func() {
		s.wmu.Lock()
		s.wcond.Broadcast()
		s.wmu.Unlock()
	})
	defer stop()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for ctx.Err() == nil {
		if w, ok := s.written[sessionID]; ok && w >= seq {
			return
		}
		s.wcond.Wait()
	}
}

func (s *Server) handle(ctx context.Context, c *dispatch.Call) (any, error) {
	// The connection starts reading inside NewConn, before Serve has
	// stored it; handlers that call back through it wait for that.
	<-s.ready
	switch c.Method {
	case protocol.MethodInitialize:
		// o.own is closed by onReplied, once the answer is on the wire:
		// what waits for this initialize is answered after it.
		if o, _ := c.Value.(*readOrder); o != nil && o.late {
			return nil, protocol.ErrShuttingDown
		}
		return s.initialize(ctx, c.Params)
	case protocol.MethodSessionPrompt:
		o, _ := c.Value.(*readOrder)
		if o == nil {
			o = &readOrder{}
		}
		return s.prompt(ctx, c.Params, o)
	case protocol.MethodShutdown:
		// Answered after the initialize read before it, so a pipe that
		// writes both at once reads the answers in the order it wrote.
		if o, _ := c.Value.(*readOrder); o != nil && o.initDone != nil {
			select {
			case <-o.initDone:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return protocol.Empty{}, nil
	case protocol.MethodSessionCancel:
		if err := afterPrompts(ctx, c); err != nil {
			return nil, err
		}
		return s.cancel(c.Params)
	case protocol.MethodSessionClose:
		if err := afterPrompts(ctx, c); err != nil {
			return nil, err
		}
		return s.closeSession(ctx, c.Params)
	case protocol.MethodSessionCompact:
		if err := afterPrompts(ctx, c); err != nil {
			return nil, err
		}
		return s.compact(ctx, c.Params)
	case protocol.MethodSessionRewind:
		if err := afterPrompts(ctx, c); err != nil {
			return nil, err
		}
		return s.rewind(ctx, c.Params)
	case protocol.MethodSessionCommands:
		if err := afterPrompts(ctx, c); err != nil {
			return nil, err
		}
		return s.commands(ctx, c.Params)
	}
	if c.Notif {
		return nil, nil
	}
	return nil, protocol.UnknownMethodError(c.Method)
}

func (s *Server) initialize(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := protocol.ParseInitializeParams(raw)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	switch {
	case s.shutting:
		s.mu.Unlock()
		return nil, protocol.ErrShuttingDown
	case s.initialized:
		s.mu.Unlock()
		return nil, errors.New("SDK server is already initialized")
	case s.initPending:
		s.mu.Unlock()
		return nil, errors.New("SDK server initialization is already in progress")
	}
	s.initPending = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.initPending = false
		s.mu.Unlock()
	}()

	def := s.rt.Defaults()
	cfg := event.Config{Provider: p.Provider, Model: p.Model, ReasoningEffort: p.ReasoningEffort, MaxTokens: int(p.MaxTokens)}
	if cfg.Provider == "" {
		cfg.Provider = def.Provider
	}
	if cfg.Model == "" {
		cfg.Model = def.Model
	}
	prov, err := s.rt.Provider(cfg.Provider)
	if err != nil {
		return nil, err
	}
	caps := prov.Caps(cfg.Model)
	if cfg.ReasoningEffort != "" && !slices.Contains(caps.Efforts, cfg.ReasoningEffort) {
		return nil, protocol.UnsupportedEffortError(cfg.Provider, cfg.Model, cfg.ReasoningEffort)
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = s.opts.DefaultCwd
	}
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("initialize: no cwd given and the process cwd is unknown: %w", err)
		}
	}
	if cwd, err = filepath.Abs(cwd); err != nil {
		return nil, fmt.Errorf("initialize cwd: %w", err)
	}
	servers, err := core.ParseMCPServers(p.MCPServers)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	for i := range servers {
		servers[i].Source = "sdk"
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sessCfg = core.SessionOptions{Cwd: cwd, Config: cfg, Origin: "sdk", MCPServers: servers}
	s.hostAsks = p.Capabilities != nil && p.Capabilities.Permissions
	s.initialized = true
	s.mu.Unlock()
	return protocol.InitializeResult{
		ServerInfo:      protocol.ServerInfo{Name: protocol.ServerName, Version: s.opts.Version},
		ProtocolVersion: protocol.ProtocolVersion,
		Capabilities:    &protocol.ServerCapabilities{Cancel: true, Close: true, Permissions: true, Compact: true, Rewind: true, Commands: true},
	}, nil
}

// prompt admits a prompt in the order it was read: after the initialize
// and the prompts for its session read before it.
func (s *Server) prompt(ctx context.Context, raw json.RawMessage, o *readOrder) (any, error) {
	admitted := false
	admit := func() {
		if !admitted && o.own != nil {
			admitted = true
			close(o.own)
			s.mu.Lock()
			if s.lastPrompt[o.sessionID] == o.own {
				delete(s.lastPrompt, o.sessionID)
			}
			s.mu.Unlock()
		}
	}
	defer admit()
	if o.late {
		return nil, protocol.ErrShuttingDown
	}
	for _, gate := range []<-chan struct{}{o.initDone, o.prevAdmit} {
		if gate == nil {
			continue
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	initialized, opts := s.initialized, s.sessCfg
	s.mu.Unlock()
	if !initialized {
		return nil, protocol.ErrNotInitialized
	}
	p, err := protocol.ParseSessionPromptParams(raw)
	if err != nil {
		return nil, err
	}
	blocks, err := protocol.ParsePromptBlocks(p.ContentBlocks)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, errors.New("session/prompt contentBlocks must not be empty")
	}
	if protocol.HasEncodedImage(blocks) || hasImage(blocks) {
		prov, err := s.rt.Provider(opts.Config.Provider)
		if err != nil {
			return nil, err
		}
		if !prov.Caps(opts.Config.Model).Images {
			return nil, protocol.ImageUnsupportedError(opts.Config.Model)
		}
	}
	sess, err := s.hostSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	if sess.Closed() {
		return nil, protocol.DisposedOutsideError(p.SessionID)
	}
	content, popts, outcome, err := s.promptContent(ctx, sess, blocks)
	if err != nil {
		return nil, err
	}
	if outcome != nil {
		if outcome.Seq > 0 {
			s.waitWritten(ctx, p.SessionID, outcome.Seq)
		}
		return protocol.SessionPromptResult{Command: outcome}, nil
	}
	if sess.Closed() {
		return nil, protocol.DisposedOutsideError(p.SessionID)
	}
	t, err := sess.PromptWith(ctx, content, popts)
	if err != nil {
		if errors.Is(err, core.ErrClosed) {
			return nil, protocol.DisposedOutsideError(p.SessionID)
		}
		return nil, err
	}
	admit() // the next prompt for this session may queue behind this one
	s.waitWritten(ctx, p.SessionID, t.ReceiptSeq)
	return protocol.SessionPromptResult{MessageID: t.MessageID}, nil
}

func hasImage(blocks []protocol.PromptBlock) bool {
	for _, b := range blocks {
		if b.Block.Type == event.BlockImage {
			return true
		}
	}
	return false
}

func (s *Server) cancel(raw json.RawMessage) (any, error) {
	id, err := protocol.ParseSessionIDParams(protocol.MethodSessionCancel, raw)
	if err != nil {
		return nil, err
	}
	sess := s.rt.Get(id)
	if sess == nil {
		return nil, fmt.Errorf("unknown session: %s", id)
	}
	sess.Cancel(nil)
	return protocol.Empty{}, nil
}

func (s *Server) closeSession(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := protocol.ParseSessionIDParams(protocol.MethodSessionClose, raw)
	if err != nil {
		return nil, err
	}
	sess := s.rt.Get(id)
	if sess == nil {
		return nil, fmt.Errorf("unknown session: %s", id)
	}
	if err := sess.Close(ctx); err != nil {
		return nil, err
	}
	return protocol.Empty{}, nil
}

// onRead runs on the read goroutine for every call, in wire order (see
// Server). It must not block.
func (s *Server) onRead(c *dispatch.Call) any {
	if c.Notif {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending++
	o := &readOrder{late: s.shutdownRead}
	switch c.Method {
	case protocol.MethodShutdown:
		o.initDone = s.lastInit
		if !s.shutdownRead {
			s.shutdownRead = true
			go s.exitAfterShutdown()
		}
	case protocol.MethodInitialize:
		o.own = make(chan struct{})
		s.lastInit = o.own
	case protocol.MethodSessionPrompt:
		o.initDone = s.lastInit
		o.sessionID = sessionIDOf(c.Params)
		o.prevAdmit = s.lastPrompt[o.sessionID]
		o.own = make(chan struct{})
		s.lastPrompt[o.sessionID] = o.own
	case protocol.MethodSessionCancel, protocol.MethodSessionClose, protocol.MethodSessionCompact, protocol.MethodSessionRewind,
		protocol.MethodSessionCommands:
		// A cancel, close, compact or rewind acts on the prompts written before it.
		o.sessionID = sessionIDOf(c.Params)
		o.prevAdmit = s.lastPrompt[o.sessionID]
	}
	return o
}

// afterPrompts waits until the prompts for the call's session read before
// it have been admitted.
func afterPrompts(ctx context.Context, c *dispatch.Call) error {
	o, _ := c.Value.(*readOrder)
	if o == nil || o.prevAdmit == nil {
		return nil
	}
	select {
	case <-o.prevAdmit:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sessionIDOf is params.sessionId, found with the light walk (a prompt's
// params may hold megabytes of image data; the handler parses them).
func sessionIDOf(params json.RawMessage) string {
	id := ""
	ndjson.ObjectMembers(params, func(k string, v []byte) bool {
		if k == "sessionId" {
			id, _ = ndjson.StringValue(v)
			return false
		}
		return true
	})
	return id
}

// onReplied runs once a request's response is on the wire (or could not
// be written), once per request. An initialize's readOrder is closed here,
// not when its handler returns: dispatch writes the answer after that, so
// a shutdown waiting only for the handler could be answered first.
func (s *Server) onReplied(c *dispatch.Call) {
	if o, _ := c.Value.(*readOrder); o != nil && c.Method == protocol.MethodInitialize && o.own != nil {
		close(o.own)
	}
	s.mu.Lock()
	s.pending--
	s.settled.Broadcast()
	s.mu.Unlock()
}

// setDrained records whether the reader is waiting for input.
func (s *Server) setDrained(d bool) {
	s.mu.Lock()
	s.drained = d
	if d {
		s.settled.Broadcast()
	}
	s.mu.Unlock()
}

// waitSettled waits until the reader has consumed every byte it was given
// and every request it read has been answered, or Serve is returning, or
// ShutdownTimeout passes (a host that keeps writing, a handler that hangs).
func (s *Server) waitSettled() {
	timedOut := false
	t := time.AfterFunc(s.opts.ShutdownTimeout, func() {
		s.mu.Lock()
		timedOut = true
		s.settled.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !(s.drained && s.pending == 0) && !s.stopped && !timedOut {
		s.settled.Wait()
	}
	if timedOut {
		s.log.Warn("sdk: requests still unanswered at exit", "pending", s.pending)
	}
}

// exitAfterShutdown ends Serve with exit code 0 once the shutdown (and
// every request read before and with it) is answered and the sessions are
// disposed. The original writes the {} response before tearing anything
// down and answers every shutdown that raced the first; requests read while
// the sessions are disposed are answered too (late prompts and initializes
// with "SDK server is shutting down").
func (s *Server) exitAfterShutdown() {
	s.waitSettled()
	s.dispose()
	s.waitSettled()
	select {
	case s.done <- 0:
	default:
	}
}

// inputGate tells the server when the reader has used up its input: it
// asks for more only once every complete line it already had has been
// read and dispatched.
type inputGate struct {
	r io.Reader
	s *Server
}

func (g *inputGate) Read(p []byte) (int, error) {
	g.s.setDrained(true)
	n, err := g.r.Read(p)
	if n > 0 {
		g.s.setDrained(false)
	}
	return n, err
}

// answeringStream holds back the end of input from jsonrpc2 until every
// request read before it has been answered: jsonrpc2 closes the connection
// as soon as ReadObject fails, and a host that writes its requests and
// closes stdin at once must still get every answer.
type answeringStream struct {
	*ndjson.Stream
	s *Server
}

func (a *answeringStream) ReadObject(v any) error {
	err := a.Stream.ReadObject(v)
	if err != nil {
		a.s.setDrained(true)
		a.s.waitSettled()
	}
	return err
}

// dispose cancels and closes every session, flushing their logs.
func (s *Server) dispose() {
	s.disposeOnce.Do(func() {
		s.mu.Lock()
		s.shutting = true
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
		defer cancel()
		if err := s.rt.Close(ctx); err != nil {
			s.log.Warn("sdk: teardown", "err", err)
		}
	})
}

// hostAsker asks the host through our session/request_permission request.
type hostAsker struct{ s *Server }

func (a *hostAsker) Ask(ctx context.Context, req core.PermissionRequest) (core.PermissionAnswer, error) {
	var res protocol.RequestPermissionResult
	params := protocol.NewRequestPermissionParams(req.SessionID, req.Workspace, protocol.PermissionToolCall{
		CallID: req.CallID, Tool: req.Tool, Kind: req.Kind, Title: req.Title,
		Paths: req.Paths, Write: req.Write, Command: req.Command, RawInput: req.RawInput,
	})
	if err := a.s.conn.Call(ctx, protocol.MethodRequestPermission, params, &res); err != nil {
		if ctx.Err() != nil {
			return core.Cancelled, nil
		}
		return "", fmt.Errorf("%w: host did not answer: %v", core.ErrNoAsker, err)
	}
	ans, err := res.Answer()
	if err != nil {
		return core.RejectOnce, nil // an answer we cannot read allows nothing
	}
	return core.PermissionAnswer(ans), nil
}
