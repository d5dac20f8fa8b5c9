package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
)

// Handler serves what the peer sends.
type Handler interface {
	// HandleRequest answers one request; it runs on its own goroutine with
	// a context cancelled by $/cancel_request for its id or when the
	// connection ends. An *Error is sent as is; any other error is -32603.
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error)
	// HandleNotification runs on the reading goroutine, in wire order, and
	// must return promptly: the next frame is read after it returns.
	HandleNotification(ctx context.Context, method string, params json.RawMessage)
}

// Then is a result with work to do once its response is written: an ACP
// agent may announce a new session's slash commands only after the client
// has the session's id.
type Then struct {
	Result any
	After  func()
}

// Options configure a Conn. The zero value is usable.
type Options struct {
	// MaxFrameBytes caps one incoming frame (DefaultMaxFrameBytes if 0).
	MaxFrameBytes int
	// MaxInFlight caps the requests handled at once (DefaultMaxInFlight
	// if 0); one more is refused with -32603.
	MaxInFlight int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// DefaultMaxInFlight is the default cap on requests handled at once.
const DefaultMaxInFlight = 1024

// ErrClosed is returned by calls on a connection that has ended.
var ErrClosed = errors.New("wire: connection closed")

// Conn is one JSON-RPC connection. Run reads; Call, Notify and the
// handlers' answers write.
type Conn struct {
	fr   *frameReader
	h    Handler
	log  *slog.Logger
	maxN int

	ctx    context.Context // ends when Run returns
	cancel context.CancelFunc

	wmu     sync.Mutex
	w       io.Writer
	wclosed atomic.Bool

	mu       sync.Mutex
	nextID   atomic.Int64
	pending  map[string]chan Message
	inflight map[string][]*inflight
	nflight  int
	running  sync.WaitGroup
}

type inflight struct {
	cancel context.CancelFunc
}

// New returns a connection reading frames from r and writing to w.
func New(r io.Reader, w io.Writer, h Handler, opts Options) *Conn {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := opts.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{fr: newFrameReader(r, opts.MaxFrameBytes), h: h, log: log, maxN: n, ctx: ctx, cancel: cancel, w: w,
		pending: map[string]chan Message{}, inflight: map[string][]*inflight{}}
}

// Done is closed when Run has returned (the input ended).
func (c *Conn) Done() <-chan struct{} { return c.ctx.Done() }

// MaxFrameBytes is the frame cap in force.
func (c *Conn) MaxFrameBytes() int { return c.fr.max }

// Run reads and dispatches frames until the input ends or fails. It returns
// nil at end of input. Calls still waiting for an answer then fail with
// ErrClosed; request handlers keep running (Wait waits for them).
func (c *Conn) Run() error {
	defer c.cancel()
	for {
		f, err := c.fr.next()
		if err == nil {
			c.dispatchFrame(f)
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("wire: read: %w", err)
	}
}

// Stop ends the connection's context: request handlers see their context
// cancelled and waiting calls fail with ErrClosed. Run may still be blocked
// reading its input.
func (c *Conn) Stop() { c.cancel() }

// Wait blocks until every request handler has answered.
func (c *Conn) Wait() { c.running.Wait() }

// CloseWrite makes every later write fail with ErrClosed: once the peer
// is gone nothing more goes out (a write to a reader that left could block
// forever). It does not wait for a write in progress.
func (c *Conn) CloseWrite() { c.wclosed.Store(true) }

// WriteClosed reports whether CloseWrite was called.
func (c *Conn) WriteClosed() bool { return c.wclosed.Load() }

func (c *Conn) dispatchFrame(f frame) {
	if f.over != nil {
		c.oversized(f)
		return
	}
	line := f.line
	if len(line) == 0 {
		return
	}
	if !json.Valid(line) {
		c.log.Warn("wire: frame is not JSON", "bytes", len(line))
		c.writeError(null, Errorf(CodeParseError, "Parse error: the frame is not valid JSON"))
		return
	}
	if line[0] == '[' {
		c.batch(line)
		return
	}
	m, bad := decodeOne(line)
	if bad != nil {
		c.refuse(bad)
		return
	}
	c.dispatch(m, nil)
}

func (c *Conn) refuse(bad *invalid) {
	c.log.Warn("wire: invalid frame", "reason", bad.err.Message)
	if !bad.respond {
		return
	}
	if ch := c.takePending(bad.id); ch != nil {
		// A broken answer to one of our calls fails that call.
		ch <- Message{Kind: KindResponse, ID: bad.id, Error: bad.err}
		return
	}
	c.writeError(bad.id, bad.err)
}

// dispatch routes one message; reply, when set, collects the answer of a
// request in a batch instead of writing it.
func (c *Conn) dispatch(m Message, b *batchReply) {
	switch m.Kind {
	case KindResponse:
		if ch := c.takePending(m.ID); ch != nil {
			ch <- m
			return
		}
		c.log.Debug("wire: response to no call of ours", "id", string(m.ID))
	case KindNotification:
		if m.Method == MethodCancelRequest {
			c.cancelRequest(m.Params)
			return
		}
		c.h.HandleNotification(c.ctx, m.Method, m.Params)
	case KindRequest:
		c.request(m, b)
	}
}

func (c *Conn) request(m Message, b *batchReply) {
	key := IDKey(m.ID)
	ctx, cancel := context.WithCancel(c.ctx)
	entry := &inflight{cancel: cancel}
	c.mu.Lock()
	if c.nflight >= c.maxN {
		c.mu.Unlock()
		cancel()
		c.answer(m.ID, nil, Errorf(CodeInternalError, "too many requests in flight (%d); try again when some have been answered", c.maxN), b)
		return
	}
	c.inflight[key] = append(c.inflight[key], entry)
	c.nflight++
	c.running.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.running.Done()
		res, err := c.handle(ctx, m)
		c.mu.Lock()
		l := c.inflight[key]
		for i, x := range l {
			if x == entry {
				l = append(l[:i:i], l[i+1:]...)
				break
			}
		}
		c.nflight--
		if len(l) == 0 {
			delete(c.inflight, key)
		} else {
			c.inflight[key] = l
		}
		c.mu.Unlock()
		cancel()
		c.answer(m.ID, res, err, b)
	}()
}

func (c *Conn) handle(ctx context.Context, m Message) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("wire: request handler panicked", "method", m.Method, "panic", v)
			err = Errorf(CodeInternalError, "internal error handling %s", m.Method)
		}
	}()
	return c.h.HandleRequest(ctx, m.Method, m.Params)
}

// cancelRequest cancels every request in flight with the given id (a peer
// that reuses an id in flight cancels all of them: it cannot tell which).
func (c *Conn) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.RequestID == nil || !validID(p.RequestID) {
		c.log.Warn("wire: $/cancel_request without a valid requestId")
		return
	}
	c.mu.Lock()
	l := append([]*inflight(nil), c.inflight[IDKey(p.RequestID)]...)
	c.mu.Unlock()
	for _, x := range l {
		x.cancel()
	}
}

// answer writes (or collects) the response to a request.
func (c *Conn) answer(id json.RawMessage, res any, err error, b *batchReply) {
	var after func()
	if t, ok := res.(*Then); ok && err == nil {
		res, after = t.Result, t.After
	}
	if after != nil {
		defer after()
	}
	line, mErr := responseLine(id, res, err)
	if mErr != nil {
		c.log.Error("wire: could not encode a response", "err", mErr)
		line, _ = responseLine(id, nil, Errorf(CodeInternalError, "could not encode the result: %v", mErr))
	}
	if b != nil {
		b.add(line)
		return
	}
	if werr := c.writeLine(line); werr != nil {
		c.log.Debug("wire: response not written", "err", werr)
	}
}

// responseLine encodes a response without its newline.
func responseLine(id json.RawMessage, res any, err error) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	if err != nil {
		var we *Error
		if !errors.As(err, &we) {
			we = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		b, mErr := json.Marshal(we)
		if mErr != nil {
			return nil, mErr
		}
		buf.WriteString(`,"error":`)
		buf.Write(b)
	} else {
		b, mErr := json.Marshal(res)
		if mErr != nil {
			return nil, mErr
		}
		buf.WriteString(`,"result":`)
		buf.Write(b)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func (c *Conn) writeError(id json.RawMessage, e *Error) {
	line, _ := responseLine(id, nil, e)
	if err := c.writeLine(line); err != nil {
		c.log.Debug("wire: error response not written", "err", err)
	}
}

// writeLine writes one frame and its newline in one Write.
func (c *Conn) writeLine(line []byte) error {
	line = append(line, '\n')
	if c.wclosed.Load() {
		return ErrClosed
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclosed.Load() {
		return ErrClosed
	}
	if _, err := c.w.Write(line); err != nil {
		return fmt.Errorf("wire: write: %w", err)
	}
	return nil
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	line, err := requestLine(nil, method, params)
	if err != nil {
		return err
	}
	return c.writeLine(line)
}

// NotifyRaw sends a notification whose params are already encoded.
func (c *Conn) NotifyRaw(method string, params json.RawMessage) error {
	line, err := requestLine(nil, method, params)
	if err != nil {
		return err
	}
	return c.writeLine(line)
}

func requestLine(id json.RawMessage, method string, params any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0"`)
	if id != nil {
		buf.WriteString(`,"id":`)
		buf.Write(id)
	}
	mb, _ := json.Marshal(method)
	buf.WriteString(`,"method":`)
	buf.Write(mb)
	if params != nil {
		var pb []byte
		if raw, ok := params.(json.RawMessage); ok {
			pb = raw
		} else {
			var err error
			if pb, err = json.Marshal(params); err != nil {
				return nil, fmt.Errorf("wire: encode %s params: %w", method, err)
			}
		}
		buf.WriteString(`,"params":`)
		buf.Write(pb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Call sends a request and decodes its result into result (which may be
// nil). A JSON-RPC error answer is returned as *Error. When ctx ends
// first, $/cancel_request is sent for it and ctx's error returned.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
	key := IDKey(id)
	ch := make(chan Message, 1)
	c.mu.Lock()
	select {
	case <-c.ctx.Done():
		c.mu.Unlock()
		return ErrClosed
	default:
	}
	c.pending[key] = ch
	c.mu.Unlock()
	line, err := requestLine(id, method, params)
	if err == nil {
		err = c.writeLine(line)
	}
	if err != nil {
		c.takePending(id)
		return err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return m.Error
		}
		if result != nil && len(m.Result) > 0 {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("wire: decode the %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		if c.takePending(id) != nil {
			_ = c.Notify(MethodCancelRequest, map[string]json.RawMessage{"requestId": id})
		}
		return ctx.Err()
	case <-c.ctx.Done():
		c.takePending(id)
		select {
		case m := <-ch: // answered in the same read as the end
			if m.Error != nil {
				return m.Error
			}
			if result != nil && len(m.Result) > 0 {
				_ = json.Unmarshal(m.Result, result)
			}
			return nil
		default:
		}
		return ErrClosed
	}
}

func (c *Conn) takePending(id json.RawMessage) chan Message {
	key := IDKey(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.pending[key]
	delete(c.pending, key)
	return ch
}

// oversized answers a frame over the cap: a request gets -32600 with its
// id, an answer to one of our calls fails that call, a notification is
// logged.
func (c *Conn) oversized(f frame) {
	msg := fmt.Sprintf("frame of %d bytes exceeds the %d-byte limit", f.size, c.fr.max)
	sk := f.over
	c.log.Warn("wire: frame over the size limit", "bytes", f.size, "limit", c.fr.max, "method", sk.method, "id", string(sk.id))
	e := Errorf(CodeInvalidRequest, "%s", msg)
	switch {
	case sk.response && sk.id != nil:
		if ch := c.takePending(sk.id); ch != nil {
			ch <- Message{Kind: KindResponse, ID: sk.id, Error: e}
		}
	case sk.method != "" && sk.id != nil:
		c.writeError(sk.id, e)
	case sk.method != "":
		// A notification: nobody to answer.
	default:
		c.writeError(null, e)
	}
}
