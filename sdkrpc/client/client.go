// Package client is the Go client of the SDK JSON-RPC runtime (`dsh sdk`),
// for hosts and for the dsh-sdk subagent gateway. It follows the original
// DeepSeek Harness TypeScript/Python clients (spec dsh-protocols.md §3).
//
//	c, _, err := client.Start(ctx, client.Config{Command: []string{"dsh", "sdk"}},
//		protocol.InitializeParams{Cwd: "."})
//	defer c.Close(ctx)
//	s := c.NewSession()
//	res, err := s.Run(ctx, "list the Go packages here", client.OnText(func(d string) { fmt.Print(d) }))
//	// res.FinalResponse, res.FinishReason == client.FinishCompleted
//
// Start spawns the runtime and initializes it; Spawn and NewClient (any
// io.ReadWriteCloser) leave initialize to the caller. A Session is a handle
// on one session id: Run (prompt, then collect from the enqueue receipt
// through idle, with live text deltas on the way), Prompt (the receipt
// only), Events (an iterator of the session's events), Cancel, Close.
// Cancelling Run's ctx cancels the turn on the runtime. Prompt content is
// typed (Text, Image), and so are the reasons a turn ends (FinishReason) and
// a model call stops (StopReason).
//
// Notifications are delivered, in wire order and before the response that
// follows them, to every Subscription whose filter accepts them; each
// subscription's unread queue is bounded (see Subscription).
// SubscribeSessionTree follows subagent.started to include descendants.
// Close is the original's close ladder: shutdown (1 s), stdin EOF and 6 s,
// SIGTERM and 3 s, SIGKILL and 3 s; the process is always reaped.
//
// Requests carry string ids `req_<uuid hex>`, so they never collide with
// anything else on the wire, and an error response with id null (an answer
// to an unparseable frame) can never resolve one of ours.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-dev/dsh/sdkrpc/dispatch"
	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// Defaults of Options.
const (
	DefaultInitializeTimeout = 10 * time.Second
	DefaultShutdownTimeout   = time.Second
)

// Options configure a Client, spawned or not.
type Options struct {
	// Logger receives diagnostics (skipped frames, ladder steps). Nil
	// discards them. The client never writes to stdout or stderr itself.
	Logger *slog.Logger
	// RequestTimeout bounds every request that has no shorter ctx deadline
	// (0: none, only ctx). Initialize uses InitializeTimeout instead.
	RequestTimeout time.Duration
	// InitializeTimeout bounds initialize (0: DefaultInitializeTimeout).
	InitializeTimeout time.Duration
	// ShutdownTimeout bounds the shutdown request of Close (0:
	// DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// MaxLineBytes caps one incoming line (0: ndjson.DefaultMaxLineBytes).
	MaxLineBytes int
	// SubscriptionBufferBytes bounds the notifications one subscription
	// holds unread, counted by their params' size (0:
	// DefaultSubscriptionBufferBytes). See Subscription for the policy.
	SubscriptionBufferBytes int
}

// DefaultSubscriptionBufferBytes is the default bound of one
// subscription's unread notifications: 64 MiB, room for hundreds of
// thousands of events (a whole long turn's live stream).
const DefaultSubscriptionBufferBytes = 64 << 20

// RequestHandler serves one server → client request. Its result is the
// reply; an error is sent as -32603 with its message, or with the code,
// message and data of a *jsonrpc2.Error in its chain. ctx ends when the
// client closes.
type RequestHandler func(ctx context.Context, params json.RawMessage) (any, error)

// Client is a connection to one SDK runtime. Its methods are safe for
// concurrent use.
type Client struct {
	opts   Options
	log    *slog.Logger
	conn   *jsonrpc2.Conn
	stream *ndjson.Stream
	disp   *dispatch.Handler
	proc   *process // nil for NewClient

	subs atomic.Pointer[[]*Subscription] // copy on write

	treeMu  sync.RWMutex
	parents map[string]string // child → parent, from subagent.started

	handlersMu sync.RWMutex
	handlers   map[string]RequestHandler

	mu           sync.Mutex
	closing      bool
	closeStarted bool
	info         protocol.InitializeResult // of the last successful Initialize
	dead         error                     // *TransportClosedError once the transport is gone
	deadCh       chan struct{}             // closed once dead is set
	closeDone    chan struct{}
	closeErr     error
}

// NewClient returns a Client speaking over rwc (it takes ownership: Close
// closes it). There is no process, so Close only sends shutdown and closes
// rwc.
func NewClient(rwc io.ReadWriteCloser, opts Options) *Client {
	return newClient(rwc, rwc, rwc, nil, opts)
}

func newClient(r io.Reader, w io.Writer, closer io.Closer, proc *process, opts Options) *Client {
	if opts.InitializeTimeout <= 0 {
		opts.InitializeTimeout = DefaultInitializeTimeout
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.SubscriptionBufferBytes <= 0 {
		opts.SubscriptionBufferBytes = DefaultSubscriptionBufferBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		opts:      opts,
		log:       log,
		proc:      proc,
		parents:   map[string]string{},
		handlers:  map[string]RequestHandler{},
		deadCh:    make(chan struct{}),
		closeDone: make(chan struct{}),
	}
	c.subs.Store(&[]*Subscription{})
	c.stream = ndjson.NewSplit(r, w, closer, ndjson.Options{
		MaxLineBytes:    opts.MaxLineBytes,
		Logger:          log,
		NoOversizeReply: true,
		OnNotification:  c.onNotification,
	})
	c.disp = dispatch.New(c.serveRequest, dispatch.Options{Logger: log})
	c.conn = jsonrpc2.NewConn(context.Background(), c.stream, c.disp, jsonrpc2.SetLogger(printfLogger{log}))
	go c.watch()
	return c
}

// printfLogger routes jsonrpc2's Printf diagnostics (unmatched response
// ids, protocol errors) to slog at debug level.
type printfLogger struct{ log *slog.Logger }

func (l printfLogger) Printf(format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...))
}

// watch turns the end of the connection into the client's terminal error.
func (c *Client) watch() {
	<-c.conn.DisconnectNotify()
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	reason := "JSON-RPC input closed"
	if closing {
		reason = "JSON-RPC transport closed"
	}
	e := &TransportClosedError{Reason: reason}
	if c.proc != nil {
		if !closing {
			// The runtime usually closes stdout because it is exiting; give
			// it a moment so the error can say how it exited.
			t := time.NewTimer(500 * time.Millisecond)
			select {
			case <-c.proc.exited():
			case <-t.C:
			}
			t.Stop()
		}
		c.proc.describe(e)
	}
	c.mu.Lock()
	c.dead = e
	c.mu.Unlock()
	close(c.deadCh)
	for _, s := range *c.subs.Load() {
		s.fail(e, true)
	}
}

// Done is closed when the transport is gone (the runtime exited or closed
// its output, or Close was called).
func (c *Client) Done() <-chan struct{} { return c.deadCh }

// Err is the *TransportClosedError once Done is closed, else nil.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// Pid is the runtime's process id, 0 for a client made by NewClient.
func (c *Client) Pid() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.p.Pid()
}

// StderrTail returns the last lines the runtime wrote to stderr (nil for
// NewClient).
func (c *Client) StderrTail() []string {
	if c.proc == nil {
		return nil
	}
	return c.proc.p.StderrTail()
}

// Request sends a request and decodes its result into result (which may be
// nil). Errors: *ResponseError for an error response, *TimeoutError when
// RequestTimeout or ctx's deadline passes, *TransportClosedError when the
// runtime is gone (immediately, without writing, if it already was), and
// an error wrapping ctx's cause when ctx is canceled.
func (c *Client) Request(ctx context.Context, method string, params, result any) error {
	return c.request(ctx, method, params, result, c.opts.RequestTimeout)
}

func (c *Client) request(ctx context.Context, method string, params, result any, timeout time.Duration) error {
	if err := c.Err(); err != nil {
		return err
	}
	start := time.Now()
	if ctx.Err() != nil {
		return c.ctxError(ctx, method, start) // pre-aborted: nothing is written
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, &TimeoutError{Method: method, After: timeout})
		defer cancel()
	}
	id := jsonrpc2.ID{Str: newRequestID(), IsString: true}
	// DispatchCall writes synchronously and jsonrpc2 ignores ctx while
	// writing; a runtime that stopped reading would block us past any
	// deadline, so the write runs aside and we wait for it or ctx.
	type sent struct {
		w   jsonrpc2.Waiter
		err error
	}
	ch := make(chan sent, 1)
	go func() {
		w, err := c.conn.DispatchCall(context.Background(), method, params, jsonrpc2.PickID(id))
		ch <- sent{w, err}
	}()
	var s sent
	select {
	case s = <-ch:
	case <-ctx.Done():
		return c.ctxError(ctx, method, start)
	}
	if s.err != nil {
		return c.callError(ctx, method, start, s.err)
	}
	var raw json.RawMessage
	if err := s.w.Wait(ctx, &raw); err != nil {
		return c.callError(ctx, method, start, err)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return &ProtocolError{Msg: fmt.Sprintf("%s result is malformed: %v", method, err)}
	}
	return nil
}

func (c *Client) callError(ctx context.Context, method string, start time.Time, err error) error {
	var we *jsonrpc2.Error
	switch {
	case errors.As(err, &we):
		re := &ResponseError{Code: we.Code, Message: we.Message}
		if re.Message == "" {
			re.Message = "JSON-RPC error"
		}
		if we.Data != nil {
			re.Data = append([]byte(nil), *we.Data...)
		}
		return re
	case errors.Is(err, jsonrpc2.ErrClosed):
		<-c.deadCh // set promptly by watch
		return c.Err()
	case ctx.Err() != nil:
		return c.ctxError(ctx, method, start)
	}
	return fmt.Errorf("%s: %w", method, err)
}

func (c *Client) ctxError(ctx context.Context, method string, start time.Time) error {
	cause := context.Cause(ctx)
	var te *TimeoutError
	if errors.As(cause, &te) {
		return te
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Method: method, After: time.Since(start)}
	}
	return fmt.Errorf("%s: JSON-RPC request aborted: %w", method, cause)
}

// Initialize sends initialize. Cwd is made absolute first (empty: the
// current directory); empty Provider and Model become
// protocol.DefaultProvider and protocol.DefaultModel. The result must name
// the server.
func (c *Client) Initialize(ctx context.Context, p protocol.InitializeParams) (protocol.InitializeResult, error) {
	var res protocol.InitializeResult
	cwd := p.Cwd
	if cwd == "" {
		cwd = "."
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return res, fmt.Errorf("initialize: resolve cwd %q: %w", p.Cwd, err)
	}
	p.Cwd = abs
	if p.Provider == "" {
		p.Provider = protocol.DefaultProvider
	}
	if p.Model == "" {
		p.Model = protocol.DefaultModel
	}
	timeout := c.opts.InitializeTimeout
	var raw json.RawMessage
	if err := c.request(ctx, protocol.MethodInitialize, p, &raw, timeout); err != nil {
		return res, err
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ServerInfo.Name == "" {
		return res, &ProtocolError{Msg: "initialize result requires serverInfo.name: " + string(raw)}
	}
	c.mu.Lock()
	c.info = res
	c.mu.Unlock()
	return res, nil
}

// OnRequest installs the handler of server → client requests named method
// (nil removes it). Requests nobody handles are answered -32601
// `method not found: <m>`. Handlers run concurrently, each in its own
// goroutine.
func (c *Client) OnRequest(method string, h RequestHandler) {
	c.handlersMu.Lock()
	defer c.handlersMu.Unlock()
	if h == nil {
		delete(c.handlers, method)
		return
	}
	c.handlers[method] = h
}

// OnPermissionRequest installs a typed handler for session/request_permission.
// The runtime only asks when initialize declared Capabilities.Permissions.
func (c *Client) OnPermissionRequest(h func(ctx context.Context, p protocol.RequestPermissionParams) (protocol.RequestPermissionResult, error)) {
	if h == nil {
		c.OnRequest(protocol.MethodRequestPermission, nil)
		return
	}
	c.OnRequest(protocol.MethodRequestPermission, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p protocol.RequestPermissionParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "session/request_permission params are malformed: " + err.Error()}
		}
		return h(ctx, p)
	})
}

func (c *Client) serveRequest(ctx context.Context, call *dispatch.Call) (any, error) {
	c.handlersMu.RLock()
	h := c.handlers[call.Method]
	c.handlersMu.RUnlock()
	if h == nil {
		return nil, dispatch.MethodNotFound(call.Method)
	}
	return h(ctx, call.Params)
}

// Subscribe returns a subscription to every notification for which filter
// returns true (nil: all), from now on. Filters run on the read goroutine:
// keep them cheap; a filter that panics fails only its own subscription. A
// subscription made after the transport died is born failed.
func (c *Client) Subscribe(filter func(Notification) bool) *Subscription {
	s := &Subscription{c: c, filter: filter, wake: make(chan struct{}, 1), limit: c.opts.SubscriptionBufferBytes}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		s.err = c.dead
		return s
	}
	for {
		old := c.subs.Load()
		next := append(append(make([]*Subscription, 0, len(*old)+1), *old...), s)
		if c.subs.CompareAndSwap(old, &next) {
			return s
		}
	}
}

func (c *Client) unsubscribe(s *Subscription) {
	for {
		old := c.subs.Load()
		next := make([]*Subscription, 0, len(*old))
		for _, o := range *old {
			if o != s {
				next = append(next, o)
			}
		}
		if c.subs.CompareAndSwap(old, &next) {
			return
		}
	}
}

// SubscribeSessionTree subscribes to the notifications of rootID and its
// descendant sessions (spec §3.1 "Tree filter"): session.* notifications
// whose sessionId is rootID or a descendant, and subagent.* whose parent is
// rootID or a descendant, or whose child is rootID. Descendants are known
// from every subagent.started the client has seen, kept for its lifetime.
func (c *Client) SubscribeSessionTree(rootID string) *Subscription {
	return c.Subscribe(func(n Notification) bool { return c.inTree(rootID, n) })
}

// inTree reports whether n belongs to the session tree rooted at rootID.
func (c *Client) inTree(rootID string, n Notification) bool {
	switch n.Method {
	case protocol.NotifySubagentStarted, protocol.NotifySubagentFinished:
		return n.childID == rootID || c.descendsFrom(n.parentID, rootID)
	}
	return c.descendsFrom(n.sessionID, rootID)
}

// descendsFrom reports whether id is root or a descendant of it.
func (c *Client) descendsFrom(id, root string) bool {
	if id == "" || root == "" {
		return false
	}
	c.treeMu.RLock()
	defer c.treeMu.RUnlock()
	for hops := 0; hops <= len(c.parents); hops++ {
		if id == root {
			return true
		}
		p, ok := c.parents[id]
		if !ok {
			return false
		}
		id = p
	}
	return false // a cycle: refuse rather than loop
}

// onNotification is the ndjson hook: it runs on the read goroutine, in wire
// order, before any later response is processed.
func (c *Client) onNotification(method string, params json.RawMessage) {
	n := newNotification(method, params)
	if method == protocol.NotifySubagentStarted && n.parentID != "" && n.childID != "" && n.parentID != n.childID {
		c.treeMu.Lock()
		if _, ok := c.parents[n.childID]; !ok {
			c.parents[n.childID] = n.parentID
		}
		c.treeMu.Unlock()
	}
	for _, s := range *c.subs.Load() {
		s.offer(n)
	}
}

// Close ends the client: the close ladder for a spawned runtime (see
// Config), or shutdown then close for NewClient. It is idempotent;
// concurrent calls wait for the first. A done ctx skips the remaining grace
// periods (a spawned runtime is then killed and still reaped). Subscriptions
// fail with a *TransportClosedError; server → client handlers see their ctx
// end and are waited for.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closeStarted {
		c.mu.Unlock()
		select {
		case <-c.closeDone:
			return c.closeErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.closeStarted = true
	c.mu.Unlock()

	c.closeErr = c.close(ctx)
	close(c.closeDone)
	return c.closeErr
}

func (c *Client) close(ctx context.Context) error {
	// From here on the end of the transport is ours, not the runtime's:
	// the runtime exiting after shutdown reports "transport closed".
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	if c.Err() == nil && ctx.Err() == nil {
		if err := c.request(ctx, protocol.MethodShutdown, nil, nil, c.opts.ShutdownTimeout); err != nil {
			c.log.Debug("sdk client: shutdown request failed", "err", err)
		}
	}
	var err error
	if c.proc != nil {
		err = c.proc.stop(ctx)
	}
	_ = c.conn.Close()
	<-c.deadCh
	c.disp.Close()
	closed := &TransportClosedError{Reason: "JSON-RPC transport closed"}
	if c.proc != nil {
		c.proc.describe(closed)
	}
	for _, s := range *c.subs.Load() {
		s.fail(closed, false)
	}
	return err
}

// Ensure the stream satisfies jsonrpc2's interface.
var _ jsonrpc2.ObjectStream = (*ndjson.Stream)(nil)
