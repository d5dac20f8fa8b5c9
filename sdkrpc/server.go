// Package sdkrpc is the SDK JSON-RPC door: `dsh sdk` serves the original
// DeepSeek Harness SDK protocol (spec dsh-protocols.md §1–3) on stdio so the
// original's TypeScript and Python clients drive it unchanged, plus a few
// optional extensions of ours (cancel, close, host-answered permissions).
package sdkrpc

import (
	"bytes"
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
	"github.com/dsh-dev/dsh/core/permission"
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
type Server struct {
	rt     *core.Runtime
	opts   Options
	log    *slog.Logger
	conn   *jsonrpc2.Conn
	ready  chan struct{} // closed once conn is set: handlers may use it
	stream *ndjson.Stream
	out    *barrierWriter

	mu          sync.Mutex
	initialized bool
	initPending bool
	sessCfg     core.SessionOptions
	hostAsks    bool
	shutting    bool
	shutdownIDs map[jsonrpc2.ID]bool
	// shutdownRead is set when a shutdown request has been read; prompts
	// read after it are late and refused, whatever order their handlers
	// run in (the original handles lines in order).
	shutdownRead bool
	late         map[jsonrpc2.ID]bool
	exitStarted  bool
	done         chan int // exit code, once

	// written[sessionID] is the seq of the last session.event written, so a
	// prompt's response never overtakes its receipt.
	wmu     sync.Mutex
	wcond   *sync.Cond
	written map[string]int64
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
	s := &Server{rt: rt, opts: opts, log: opts.Logger, out: &barrierWriter{w: out},
		shutdownIDs: map[jsonrpc2.ID]bool{}, late: map[jsonrpc2.ID]bool{}, done: make(chan int, 1), written: map[string]int64{}}
	s.wcond = sync.NewCond(&s.wmu)

	sub := rt.Subscribe()
	stream := ndjson.NewSplit(in, s.out, nil, ndjson.Options{MaxLineBytes: opts.MaxLineBytes, Logger: opts.Logger})
	s.stream = stream
	h := dispatch.New(s.handle, dispatch.Options{Logger: opts.Logger})
	connCtx, cancelConn := context.WithCancel(ctx)
	defer cancelConn()
	s.ready = make(chan struct{})
	s.conn = jsonrpc2.NewConn(connCtx, stream, h, jsonrpc2.OnRecv(s.onRecv), jsonrpc2.OnSend(s.onSend))
	close(s.ready)

	fwdDone := make(chan struct{})
	go func() {
		defer close(fwdDone)
		s.forward(connCtx, sub)
	}()

	code := 0
	select {
	case code = <-s.done:
	case <-s.conn.DisconnectNotify():
		s.log.Debug("sdk: input closed; disposing sessions")
		s.dispose()
	case <-ctx.Done():
		s.dispose()
	}
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

// shutdownLinger is the least time between a shutdown and the exit, so
// shutdowns racing it are read and answered too.
const shutdownLinger = 25 * time.Millisecond

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
		add(protocol.NotifySessionEvent, protocol.SessionEventParams{SessionID: n.SessionID, Event: n.Event})
		if n.Event.Type == event.TypeSubagentEnd {
			if p, ok := s.subagentFinished(n); ok {
				add(protocol.NotifySubagentFinished, p)
			}
		}
		seqs[n.SessionID] = n.Event.Seq
	case core.NoticeStatus:
		add(protocol.NotifySessionStatus, protocol.SessionStatusParams{SessionID: n.SessionID, Status: n.Status})
	case core.NoticeCreated:
		if n.Header.ParentSession != "" && !n.Resumed {
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
		return s.initialize(ctx, c.Params)
	case protocol.MethodSessionPrompt:
		s.mu.Lock()
		late := s.late[c.ID]
		delete(s.late, c.ID)
		s.mu.Unlock()
		if late {
			return nil, protocol.ErrShuttingDown
		}
		return s.prompt(ctx, c.Params)
	case protocol.MethodShutdown:
		return s.shutdown(c.ID)
	case protocol.MethodSessionCancel:
		return s.cancel(c.Params)
	case protocol.MethodSessionClose:
		return s.closeSession(ctx, c.Params)
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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sessCfg = core.SessionOptions{Cwd: cwd, Config: cfg, Origin: "sdk"}
	s.hostAsks = p.Capabilities != nil && p.Capabilities.Permissions
	s.initialized = true
	s.mu.Unlock()
	return protocol.InitializeResult{
		ServerInfo:      protocol.ServerInfo{Name: protocol.ServerName, Version: s.opts.Version},
		ProtocolVersion: protocol.ProtocolVersion,
		Capabilities:    &protocol.ServerCapabilities{Cancel: true, Close: true, Permissions: true},
	}, nil
}

func (s *Server) prompt(ctx context.Context, raw json.RawMessage) (any, error) {
	s.mu.Lock()
	shutting, initialized, opts, hostAsks := s.shutting, s.initialized, s.sessCfg, s.hostAsks
	s.mu.Unlock()
	if shutting {
		return nil, protocol.ErrShuttingDown
	}
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
	if hostAsks {
		opts.Asker = &hostAsker{s: s}
	}
	sess, err := s.rt.GetOrCreate(ctx, p.SessionID, opts)
	if err != nil {
		if errors.Is(err, core.ErrClosed) {
			return nil, protocol.ErrShuttingDown
		}
		return nil, err
	}
	if sess.Closed() {
		return nil, protocol.DisposedOutsideError(p.SessionID)
	}
	content := make([]event.ContentBlock, 0, len(blocks))
	for _, b := range blocks {
		if b.Image == nil {
			content = append(content, b.Block)
			continue
		}
		att, err := sess.SaveAttachment(b.Image.MimeType, b.Image.Data)
		if err != nil {
			return nil, err
		}
		content = append(content, event.ContentBlock{Type: event.BlockImage, Attachment: att})
	}
	if sess.Closed() {
		return nil, protocol.DisposedOutsideError(p.SessionID)
	}
	t, err := sess.Prompt(ctx, content)
	if err != nil {
		if errors.Is(err, core.ErrClosed) {
			return nil, protocol.DisposedOutsideError(p.SessionID)
		}
		return nil, err
	}
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

// shutdown answers {} and, once every shutdown answer is on the wire,
// disposes every session and ends Serve with exit code 0 — once, however
// many shutdowns race.
func (s *Server) shutdown(id jsonrpc2.ID) (any, error) {
	s.mu.Lock()
	s.shutting = true
	start := !s.exitStarted
	s.exitStarted = true
	s.mu.Unlock()
	if start {
		go s.exitAfterShutdown()
	}
	return protocol.Empty{}, nil
}

func (s *Server) exitAfterShutdown() {
	// The original writes the {} response before tearing anything down,
	// and answers every shutdown that raced the first; a shutdown read
	// while sessions are disposed is answered before the exit too.
	start := time.Now()
	s.waitShutdownAnswers()
	s.dispose()
	// A shutdown sent in the same write as this one may not have been read
	// yet (the original handles a whole chunk before it exits); give the
	// reader a moment, then answer whatever arrived.
	if d := shutdownLinger - time.Since(start); d > 0 {
		time.Sleep(d)
	}
	s.waitShutdownAnswers()
	select {
	case s.done <- 0:
	default:
	}
}

// waitShutdownAnswers waits (boundedly) until every shutdown request
// received so far has been answered on the wire.
func (s *Server) waitShutdownAnswers() {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		pending := len(s.shutdownIDs)
		s.mu.Unlock()
		if pending == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// onRecv notes shutdown requests as they are read, before they are
// dispatched, so the exit waits for their answers.
func (s *Server) onRecv(req *jsonrpc2.Request, _ *jsonrpc2.Response) {
	if req == nil || req.Notif {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch req.Method {
	case protocol.MethodShutdown:
		s.shutdownIDs[req.ID] = true
		s.shutdownRead = true
	case protocol.MethodSessionPrompt:
		if s.shutdownRead {
			s.late[req.ID] = true
		}
	}
}

// onSend notes the shutdown responses as they go out.
func (s *Server) onSend(_ *jsonrpc2.Request, resp *jsonrpc2.Response) {
	if resp == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdownIDs[resp.ID] {
		// onSend runs just before the response is written; forget the id
		// once the line that answers it has been written (notifications
		// may be written in between by the forwarder).
		id := resp.ID
		idJSON, _ := json.Marshal(id)
		prefix := append(append([]byte(`{"id":`), idJSON...), ',')
		s.out.afterWriteOf(prefix, func() {
			s.mu.Lock()
			delete(s.shutdownIDs, id)
			s.mu.Unlock()
		})
	}
}

// dispose cancels and closes every session, flushing their logs.
func (s *Server) dispose() {
	s.mu.Lock()
	s.shutting = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if err := s.rt.Close(ctx); err != nil {
		s.log.Warn("sdk: teardown", "err", err)
	}
}

// hostAsker asks the host through our session/request_permission request.
type hostAsker struct{ s *Server }

func (a *hostAsker) Ask(ctx context.Context, req permission.Request) (permission.Answer, error) {
	var res protocol.RequestPermissionResult
	if err := a.s.conn.Call(ctx, protocol.MethodRequestPermission, protocol.NewRequestPermissionParams(req), &res); err != nil {
		if ctx.Err() != nil {
			return permission.Cancelled, nil
		}
		return "", fmt.Errorf("%w: host did not answer: %v", permission.ErrNoAsker, err)
	}
	if res.Outcome.Outcome == protocol.OutcomeCancelled {
		return permission.Cancelled, nil
	}
	switch ans := permission.Answer(res.Outcome.OptionID); ans {
	case permission.AllowOnce, permission.AllowAlways, permission.RejectOnce, permission.RejectAlways:
		return ans, nil
	}
	return permission.RejectOnce, nil
}

// barrierWriter runs a callback once a line starting with a given prefix
// has been written; the stream writes each message with one Write.
type barrierWriter struct {
	mu    sync.Mutex
	w     io.Writer
	after []barrier
}

type barrier struct {
	prefix []byte
	fn     func()
}

func (b *barrierWriter) afterWriteOf(prefix []byte, fn func()) {
	b.mu.Lock()
	b.after = append(b.after, barrier{prefix, fn})
	b.mu.Unlock()
}

func (b *barrierWriter) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	b.mu.Lock()
	var fire []func()
	kept := b.after[:0]
	for _, x := range b.after {
		if bytes.HasPrefix(p, x.prefix) {
			fire = append(fire, x.fn)
		} else {
			kept = append(kept, x)
		}
	}
	b.after = kept
	b.mu.Unlock()
	for _, fn := range fire {
		fn()
	}
	return n, err
}
