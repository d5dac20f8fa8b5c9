// Package ndjson is a line-strict newline-delimited JSON object stream for
// github.com/sourcegraph/jsonrpc2.
//
// The library's own NewPlainObjectStream splits input at JSON value
// boundaries with one json.Decoder, and any input it cannot decode as a
// message (a non-JSON line, `{"foo":1}`, a batch, a fractional id) closes the
// whole connection without a reply. The original DeepSeek Harness transport
// (spec dsh-protocols.md §1.1) instead reads one message per `\n` line and
// silently ignores lines it cannot use. Stream does the same, so one bad line
// from a host never costs it the session:
//
//   - one message per line, read with bufio.Reader (no bufio.Scanner token
//     limit); UTF-8 split across reads is reassembled naturally because lines
//     are cut on bytes;
//   - each line is trimmed (spaces, tabs, `\r`, a leading BOM); blank lines,
//     malformed JSON, non-objects (arrays, scalars, so batches too) and objects
//     that are not JSON-RPC messages are skipped with a debug log line;
//   - ids must be strings or non-negative integers; anything else is skipped
//     (the library would wrap -1 to 18446744073709551615), as is a response
//     without a usable id (the library would match `"id":null` to call 0);
//   - a malformed error object in a response (code not an integer, message
//     not a string, error not an object) is normalised instead of dropped, so
//     the pending call still fails instead of hanging;
//   - a line longer than the limit (default 64 MiB) is discarded up to its
//     newline without being buffered, logged as a warning and, unless
//     disabled, answered once with an error response
//     {"id":null,"error":{"code":-32600,"message":"frame of N bytes exceeds the M-byte limit"}}
//     (JSON-RPC 2.0 uses id null when the request id cannot be known);
//   - every write is one compact JSON value + '\n' in one Write under a
//     mutex, so concurrent writers never interleave bytes; nothing is
//     buffered, so a write is on the wire when it returns.
//
// Two fast paths exist for the protocol's hot path, session.event
// notifications (see BenchmarkNotifications in sdkrpc/client): Notify
// writes a notification without jsonrpc2's map-and-remarshal encoding, and
// Options.OnNotification hands incoming notifications to the reader raw,
// without jsonrpc2's decode into map[string]interface{}.
package ndjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
)

// DefaultMaxLineBytes is the default cap on one line, excluding its newline.
// It is large because a prompt may carry base64 images.
const DefaultMaxLineBytes = 64 << 20

// CodeInvalidRequest is the JSON-RPC code of the oversized-frame reply.
const CodeInvalidRequest = -32600

// Options configure a Stream. The zero value is usable.
type Options struct {
	// MaxLineBytes caps one line (excluding the newline). 0 means
	// DefaultMaxLineBytes.
	MaxLineBytes int
	// Logger receives debug lines for skipped input and a warning for each
	// oversized line. Nil discards them.
	Logger *slog.Logger
	// NoOversizeReply suppresses the id-null error response written for an
	// oversized line. A client sets it: answering a server's frame is noise.
	NoOversizeReply bool
	// OnNotification, when set, receives every incoming notification (a
	// message with a method and no id, or id null) on the reading goroutine,
	// in wire order, and the notification is NOT passed on to ReadObject's
	// caller. It exists because jsonrpc2.Request.UnmarshalJSON decodes params
	// into map[string]interface{} and re-marshals them, which dominates the
	// cost of a high-rate notification stream; here params arrive as a copy
	// of the line's bytes (nil when absent), owned by the callee. Responses
	// and requests still go through ReadObject, and since one goroutine reads
	// everything, notifications and responses keep their relative order.
	// The hook must not block: reading waits for it.
	OnNotification func(method string, params json.RawMessage)
}

// Stream is a jsonrpc2.ObjectStream over newline-delimited JSON. Create it
// with New. ReadObject must be called from one goroutine (jsonrpc2.Conn's
// read loop); WriteObject and Close are safe for concurrent use.
type Stream struct {
	r      *bufio.Reader
	w      io.Writer
	c      io.Closer
	max    int
	log    *slog.Logger
	reply  bool
	onNote func(string, json.RawMessage)

	buf []byte // line assembly for lines longer than the bufio buffer

	wmu       sync.Mutex
	closeOnce sync.Once
	closeErr  error
}

// New returns a Stream reading and writing rwc. Close closes rwc.
func New(rwc io.ReadWriteCloser, opts Options) *Stream {
	return NewSplit(rwc, rwc, rwc, opts)
}

// NewSplit is New for a separate reader and writer (stdin/stdout, or a child
// process's pipes); closer is closed by Close and may be nil.
func NewSplit(r io.Reader, w io.Writer, closer io.Closer, opts Options) *Stream {
	max := opts.MaxLineBytes
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Stream{
		r:      bufio.NewReaderSize(r, 64<<10),
		w:      w,
		c:      closer,
		max:    max,
		log:    log,
		reply:  !opts.NoOversizeReply,
		onNote: opts.OnNotification,
	}
}

// WriteObject writes v as one compact JSON line. encoding/json escapes
// U+2028/U+2029, so JavaScript line readers on the other end stay safe.
//
// jsonrpc2 hands us its message type, a json.Marshaler whose output is
// already compact json.Marshal output; calling MarshalJSON directly skips
// the re-validation json.Marshal would do (a full extra scan of every
// message). A Marshaler whose output holds a newline is compacted.
func (s *Stream) WriteObject(v any) error {
	var b []byte
	var err error
	if m, ok := v.(json.Marshaler); ok {
		b, err = m.MarshalJSON()
		if err == nil && bytes.IndexByte(b, '\n') >= 0 {
			var buf bytes.Buffer
			if err = json.Compact(&buf, b); err == nil {
				b = buf.Bytes()
			}
		}
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("ndjson: marshal message: %w", err)
	}
	return s.writeLine(b)
}

// Appender is implemented by params that encode themselves faster than
// encoding/json. AppendJSON must append exactly one compact JSON value with
// no raw newline.
type Appender interface {
	AppendJSON(dst []byte) ([]byte, error)
}

// Notify writes the notification {"jsonrpc":"2.0","method":method,
// "params":params} (params omitted when nil, as the original does) straight
// to the stream. It is the fast path for a server's event stream:
// jsonrpc2.Conn.Notify marshals params, then a map around them, then
// re-validates the result, scanning every event three times more than
// this. Lines written here and by the Conn never interleave (one mutex),
// and a Notify that returns before a response is written precedes it on the
// wire.
func (s *Stream) Notify(method string, params any) error {
	b, err := AppendNotification(make([]byte, 0, 256), method, params)
	if err != nil {
		return err
	}
	return s.WriteLines(b)
}

// AppendNotification appends the line (newline included) of a notification
// to dst, for a writer that batches several lines into one WriteLines.
func AppendNotification(dst []byte, method string, params any) ([]byte, error) {
	m, err := json.Marshal(method)
	if err != nil {
		return dst, fmt.Errorf("ndjson: marshal method: %w", err)
	}
	b := append(dst, `{"jsonrpc":"2.0","method":`...)
	b = append(b, m...)
	if params != nil {
		b = append(b, `,"params":`...)
		if a, ok := params.(Appender); ok {
			b, err = a.AppendJSON(b)
		} else {
			var p []byte
			p, err = json.Marshal(params)
			b = append(b, p...)
		}
		if err != nil {
			return dst, fmt.Errorf("ndjson: marshal %s params: %w", method, err)
		}
	}
	return append(b, '}', '\n'), nil
}

// WriteLines writes complete lines (each ending in a newline) with one
// Write, never interleaved with other lines of the stream.
func (s *Stream) WriteLines(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("ndjson: write: %w", err)
	}
	return nil
}

func (s *Stream) writeLine(b []byte) error {
	b = append(b, '\n')
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("ndjson: write: %w", err)
	}
	return nil
}

// Flush is the original transport's flush barrier. Stream does not buffer:
// a write is in the writer when WriteObject or Notify returns, so Flush
// only waits for writes in progress on other goroutines to complete.
func (s *Stream) Flush() {
	s.wmu.Lock()
	//lint:ignore SA2001 the empty critical section is the barrier
	s.wmu.Unlock()
}

// Close closes the underlying closer once; later calls return the same
// result.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		if s.c != nil {
			s.closeErr = s.c.Close()
		}
	})
	return s.closeErr
}

// ReadObject reads lines until one holds a usable JSON-RPC message and
// decodes it into v. Unusable lines are skipped. It returns io.EOF (or the
// read error) when input ends; a final line without a newline is still
// delivered first.
func (s *Stream) ReadObject(v any) error {
	for {
		line, size, over, err := s.readLine()
		if over {
			s.oversized(size)
		} else if msg := s.accept(line); msg != nil {
			if s.decode(msg, v) {
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
}

// readLine returns the next line without its newline. The slice may alias
// the bufio buffer and is valid until the next read. For a line over the
// limit it returns over=true and the line's size, having discarded it
// without buffering it.
func (s *Stream) readLine() (line []byte, size int, over bool, err error) {
	chunk, err := s.r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		// Fast path: the whole line fit in the read buffer.
		line = bytes.TrimSuffix(chunk, []byte{'\n'})
		if len(line) > s.max {
			return nil, len(line), true, err
		}
		return line, len(line), false, err
	}
	s.buf = s.buf[:0]
	for {
		size += len(chunk)
		content := size
		if err == nil {
			content-- // the newline
		}
		if !over && content > s.max {
			over = true
			s.buf = s.buf[:0]
		}
		if !over {
			s.buf = append(s.buf, chunk...)
		}
		if err != bufio.ErrBufferFull {
			size = content
			break
		}
		chunk, err = s.r.ReadSlice('\n')
	}
	if over {
		if cap(s.buf) > 1<<20 {
			s.buf = nil // do not pin a large buffer after a large line
		}
		return nil, size, true, err
	}
	return bytes.TrimSuffix(s.buf, []byte{'\n'}), size, false, err
}

// OversizeMessage is the error message answered for an oversized line.
func OversizeMessage(size, limit int) string {
	return fmt.Sprintf("frame of %d bytes exceeds the %d-byte limit", size, limit)
}

func (s *Stream) oversized(size int) {
	msg := OversizeMessage(size, s.max)
	s.log.Warn("ndjson: discarded oversized line", "bytes", size, "limit", s.max)
	if !s.reply {
		return
	}
	resp := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0"}
	resp.Error.Code = CodeInvalidRequest
	resp.Error.Message = msg
	b, _ := json.Marshal(resp)
	if err := s.writeLine(b); err != nil {
		s.log.Debug("ndjson: could not answer oversized line", "err", err)
	}
}

var bom = []byte("\xef\xbb\xbf")

// probe is the first look at a line: only the members that classify it.
type probe struct {
	ID, Method, Params, Result, Error json.RawMessage
}

// accept classifies a line and returns the bytes to hand to jsonrpc2, or nil
// to skip it. Notifications go to the OnNotification hook when one is set.
func (s *Stream) accept(line []byte) []byte {
	line = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(line), bom))
	if len(line) == 0 {
		return nil
	}
	if line[0] != '{' {
		s.skip(line, "not a JSON object")
		return nil
	}
	// One validating scan, then a light walk for the members that classify
	// the line (instead of json.Unmarshal into a struct: two full scans).
	if !json.Valid(line) {
		s.skip(line, "malformed JSON")
		return nil
	}
	var p probe
	ObjectMembers(line, func(k string, v []byte) bool {
		switch k {
		case "id":
			p.ID = v
		case "method":
			p.Method = v
		case "params":
			p.Params = v
		case "result":
			p.Result = v
		case "error":
			p.Error = v
		}
		return true
	})
	hasMethod := p.Method != nil
	hasResult := p.Result != nil
	hasError := p.Error != nil && !isNull(p.Error)
	switch {
	case hasMethod && (hasResult || hasError):
		s.skip(line, "both a method and a result or error")
		return nil
	case hasMethod:
		if p.Method[0] != '"' {
			s.skip(line, "method is not a string")
			return nil
		}
		if p.ID == nil || isNull(p.ID) {
			if s.onNote != nil {
				method, _ := StringValue(p.Method)
				var params json.RawMessage
				if p.Params != nil {
					params = bytes.Clone(p.Params)
				}
				s.onNote(method, params)
				return nil
			}
			return line
		}
		if !validID(p.ID) {
			s.skip(line, "request id is neither a string nor a non-negative integer")
			return nil
		}
		return line
	case hasResult || hasError:
		if p.ID == nil || !validID(p.ID) {
			s.skip(line, "response id is missing, null or invalid")
			return nil
		}
		if hasError {
			return normaliseError(line, p)
		}
		return line
	default:
		s.skip(line, "not a JSON-RPC message")
		return nil
	}
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// validID accepts a JSON string or an integer in [0, MaxInt64] written
// without fraction or exponent (jsonrpc2 decodes numeric ids with Int64).
func validID(raw json.RawMessage) bool {
	switch {
	case len(raw) == 0:
		return false
	case raw[0] == '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case raw[0] >= '0' && raw[0] <= '9':
		if len(raw) > 1 && raw[0] == '0' {
			return false
		}
		_, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil
	}
	return false
}

// normaliseError returns line unchanged when its error member is a proper
// {code:int, message:string, data?} object, and otherwise a rebuilt
// response whose error has code 0 when the code was unusable and an empty
// message when the message was (the client then reports "JSON-RPC error").
func normaliseError(line []byte, p probe) []byte {
	var e struct {
		Code    json.RawMessage `json:"code"`
		Message json.RawMessage `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	okObj := p.Error[0] == '{' && json.Unmarshal(p.Error, &e) == nil
	var code int64
	var msg string
	okCode := okObj && e.Code != nil && json.Unmarshal(e.Code, &code) == nil
	okMsg := okObj && e.Message != nil && json.Unmarshal(e.Message, &msg) == nil
	if okCode && okMsg {
		return line
	}
	type wireErr struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireErr         `json:"error"`
	}{JSONRPC: "2.0", ID: p.ID, Error: wireErr{Code: code, Message: msg}}
	if okObj && e.Data != nil {
		out.Error.Data = e.Data
	}
	if !okCode {
		out.Error.Code = 0
	}
	b, err := json.Marshal(out)
	if err != nil {
		return line
	}
	return b
}

// decode hands msg to jsonrpc2's message type. v is reset first because a
// failed decode can leave it half-filled, and a value with both a request
// and a response set would be misrouted by the read loop.
func (s *Stream) decode(msg []byte, v any) bool {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	if err := json.Unmarshal(msg, v); err != nil {
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv.Elem().SetZero()
		}
		s.skip(msg, "not a JSON-RPC message: "+err.Error())
		return false
	}
	return true
}

func (s *Stream) skip(line []byte, why string) {
	const show = 200
	preview := line
	if len(preview) > show {
		preview = preview[:show]
	}
	s.log.Debug("ndjson: skipped input line", "reason", why, "bytes", len(line), "line", string(preview))
}
