// Package dispatch is the jsonrpc2.Handler both SDK wire ends use: it gives
// sourcegraph/jsonrpc2 the dispatch semantics of the original transport
// (spec dsh-protocols.md §1.1) without its pitfalls (spec
// go-libraries-and-style.md §1):
//
//   - jsonrpc2 runs Handle inline in its read loop, so a handler that waits
//     for anything (a Call to the peer, a slow turn) would stall every other
//     message. Here each request runs in its own goroutine; requests are
//     served concurrently and may be answered out of order, as the original.
//   - notifications run one at a time, in arrival order, on one worker, so
//     their order is kept without blocking the read loop. Their queue is
//     bounded (Options.MaxQueuedNotifications): when it is full, Handle
//     waits for room, so a peer flooding notifications faster than they are
//     handled is slowed by the pipe instead of growing memory.
//   - the door can follow every call from the moment it is read to the
//     moment its reply is on the wire: Options.OnRead runs on the read
//     goroutine in wire order before the call is served, and
//     Options.OnReplied runs once the reply has been written (the stream
//     writes synchronously), so nothing needs to match bytes or wait on a
//     timer to know a response went out.
//   - params that are absent, null, an array or a scalar are handed to the
//     handler as `{}`, as the original does for non-object params.
//   - errors become wire errors through WireError: a *jsonrpc2.Error anywhere
//     in the chain (errors.As, unlike jsonrpc2.HandlerWithError's type
//     assertion) keeps its code, message and data; any other error is -32603
//     with its message; the code is never 0. A handler panic is -32603 too.
//   - a nil HandlerFunc answers every request -32601 `method not found: <m>`.
package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// Call is one incoming request or notification.
type Call struct {
	Method string
	// Params is always a JSON object.
	Params json.RawMessage
	ID     jsonrpc2.ID
	Notif  bool
	Conn   *jsonrpc2.Conn
	// Value is what Options.OnRead returned for this call (nil without
	// the hook): state the door attached when the call was read.
	Value any
}

// HandlerFunc serves one call. For a request the result (or error) is the
// reply; for a notification the result is dropped and an error logged.
type HandlerFunc func(ctx context.Context, c *Call) (any, error)

// Options configure a Handler.
type Options struct {
	// Logger receives handler failures on notifications, panics and reply
	// write failures. Nil discards them.
	Logger *slog.Logger
	// OnRead, when set, runs on the read goroutine for every call, in wire
	// order, before the call is served; its result becomes Call.Value. It
	// must not block.
	OnRead func(c *Call) any
	// OnReplied, when set, runs after the reply to a request has been
	// written, or its write failed, or the Handler was closed before it
	// could be written: once per request OnRead saw, never for
	// notifications.
	OnReplied func(c *Call)
	// MaxQueuedNotifications bounds the notifications waiting for the
	// worker (0: DefaultMaxQueuedNotifications).
	MaxQueuedNotifications int
}

// DefaultMaxQueuedNotifications is the default bound of the notification
// queue.
const DefaultMaxQueuedNotifications = 1024

// Handler is a jsonrpc2.Handler. Create it with New and Close it after the
// connection is done so no handler goroutine outlives it.
type Handler struct {
	fn        HandlerFunc
	log       *slog.Logger
	onRead    func(*Call) any
	onReplied func(*Call)
	maxQueue  int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	room   *sync.Cond // signalled when the queue shrinks or the Handler closes
	queue  []queued
	worker bool // a notification worker goroutine is running
	closed bool
}

type queued struct {
	conn *jsonrpc2.Conn
	call *Call
}

var _ jsonrpc2.Handler = (*Handler)(nil)

// New returns a Handler serving fn. fn may be nil (every request is then
// -32601 and notifications are dropped).
func New(fn HandlerFunc, opts Options) *Handler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	max := opts.MaxQueuedNotifications
	if max <= 0 {
		max = DefaultMaxQueuedNotifications
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{fn: fn, log: log, onRead: opts.OnRead, onReplied: opts.OnReplied, maxQueue: max, ctx: ctx, cancel: cancel}
	h.room = sync.NewCond(&h.mu)
	return h
}

// Handle implements jsonrpc2.Handler. It blocks only while the
// notification queue is full. The ctx jsonrpc2 passes is the connection's;
// handlers get a context that ends when either the connection or this
// Handler is closed.
func (h *Handler) Handle(connCtx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	c := &Call{Method: req.Method, Params: ObjectParams(req.Params), ID: req.ID, Notif: req.Notif, Conn: conn}
	if h.onRead != nil {
		c.Value = h.onRead(c)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		if !c.Notif && h.onReplied != nil {
			h.onReplied(c)
		}
		return
	}
	if c.Notif {
		for len(h.queue) >= h.maxQueue && !h.closed {
			h.room.Wait()
		}
		if h.closed {
			return
		}
		h.queue = append(h.queue, queued{conn: conn, call: c})
		if !h.worker {
			h.worker = true
			h.wg.Add(1)
			go h.drain(connCtx)
		}
		return
	}
	h.wg.Add(1)
	go h.serve(connCtx, conn, c)
}

// drain runs queued notifications in order until the queue is empty.
func (h *Handler) drain(connCtx context.Context) {
	defer h.wg.Done()
	for {
		h.mu.Lock()
		if len(h.queue) == 0 || h.closed {
			h.queue = nil
			h.worker = false
			h.mu.Unlock()
			return
		}
		q := h.queue[0]
		h.queue[0] = queued{}
		h.queue = h.queue[1:]
		h.room.Signal()
		h.mu.Unlock()
		ctx, stop := h.callCtx(connCtx)
		_, err := h.run(ctx, q.call)
		stop()
		if err != nil {
			h.log.Warn("sdkrpc: notification handler failed", "method", q.call.Method, "err", err)
		}
	}
}

func (h *Handler) serve(connCtx context.Context, conn *jsonrpc2.Conn, c *Call) {
	defer h.wg.Done()
	ctx, stop := h.callCtx(connCtx)
	defer stop()
	result, err := h.run(ctx, c)
	resp := &jsonrpc2.Response{ID: c.ID}
	if err == nil {
		if err = resp.SetResult(result); err != nil {
			err = fmt.Errorf("marshal %s result: %w", c.Method, err)
		}
	}
	if err != nil {
		resp.Result = nil
		resp.Error = WireError(err)
	}
	if err := conn.SendResponse(context.Background(), resp); err != nil && !errors.Is(err, jsonrpc2.ErrClosed) {
		h.log.Warn("sdkrpc: could not send response", "method", c.Method, "id", c.ID.String(), "err", err)
	}
	if h.onReplied != nil {
		h.onReplied(c)
	}
}

// callCtx is a context ending with the connection or the Handler.
func (h *Handler) callCtx(connCtx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(h.ctx)
	stop := context.AfterFunc(connCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (h *Handler) run(ctx context.Context, c *Call) (result any, err error) {
	if h.fn == nil {
		if c.Notif {
			return nil, nil
		}
		return nil, MethodNotFound(c.Method)
	}
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("sdkrpc: handler panicked", "method", c.Method, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("internal error while handling %s: %v", c.Method, p)
		}
	}()
	return h.fn(ctx, c)
}

// Close cancels the context of every running handler, drops queued
// notifications, and waits for the handler goroutines to return. Handlers
// must honour ctx for Close to return promptly. Idempotent.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	h.room.Broadcast()
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// ObjectParams returns params when it is a JSON object and `{}` otherwise
// (absent, null, an array or a scalar), as the original transport does.
func ObjectParams(params *json.RawMessage) json.RawMessage {
	if params != nil {
		for _, b := range *params {
			if b == ' ' || b == '\t' || b == '\r' || b == '\n' {
				continue
			}
			if b == '{' {
				return *params
			}
			break
		}
	}
	return json.RawMessage("{}")
}

// MethodNotFound is the -32601 error of a request nobody handles, with the
// original's message `method not found: <m>`.
func MethodNotFound(method string) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + method}
}

// WireError converts err to the wire error object: the first *jsonrpc2.Error
// in its chain (code 0 becomes -32603), else -32603 with err's message.
func WireError(err error) *jsonrpc2.Error {
	var we *jsonrpc2.Error
	if errors.As(err, &we) && we != nil {
		out := *we
		if out.Code == 0 {
			out.Code = jsonrpc2.CodeInternalError
		}
		return &out
	}
	var ce interface{ WireError() *jsonrpc2.Error }
	if errors.As(err, &ce) {
		if out := ce.WireError(); out != nil {
			return WireError(out)
		}
	}
	return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
}
