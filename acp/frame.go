package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"time"
)

// The acp-go-sdk reads its input with a bufio.Scanner capped at 10 MiB: a
// longer line ends the connection. It also answers nothing for a line that
// is not JSON (it logs the whole line and skips it), and it cancels the
// running prompt of a session when a second prompt arrives for it. This file
// puts a line filter between the client and the SDK that fixes all three at
// the edge, and a line writer that serialises the SDK's frames with ours.

const (
	// sdkMaxLine is the acp-go-sdk's line cap (connection.go, maxBufSize).
	sdkMaxLine = 10 << 20
	// DefaultMaxFrameBytes is the largest frame forwarded to the SDK. It
	// stays a little under the SDK's cap so the newline and any rounding in
	// the scanner never push a forwarded line over it.
	DefaultMaxFrameBytes = sdkMaxLine - 4<<10
	// peekBytes is how much of the head and of the tail of a dropped frame
	// is kept to find its id and method.
	peekBytes = 4 << 10
)

// Error codes of JSON-RPC 2.0 used at the frame level.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

var errWriterClosed = errors.New("acp: output closed")

// lineWriter is the only writer of the connection's output. The SDK writes
// each frame with one Write call (connection.go sendMessage), so every Write
// is one line; our own error frames go through the same mutex and never
// interleave with the SDK's.
//
// It also watches the responses going out: a session/prompt the filter let
// through is "in flight" until its response line is written, and one-shot
// hooks run after a response carrying a given string (session/new's
// sessionId) is on the wire.
type lineWriter struct {
	mu     sync.Mutex
	out    io.Writer
	closed bool
	// prompts maps the canonical id of a forwarded session/prompt to its
	// session; busy is the reverse.
	prompts map[string]string
	busy    map[string]string
	hooks   []responseHook
	// open holds the canonical ids of forwarded requests not answered yet,
	// so that when the input ends, requests already read still get their
	// answers before teardown.
	open map[string]bool
}

type responseHook struct {
	match [][]byte // all of them
	fn    func()
}

func newLineWriter(out io.Writer) *lineWriter {
	return &lineWriter{out: out, prompts: map[string]string{}, busy: map[string]string{}, open: map[string]bool{}}
}

var responsePrefix = []byte(`{"jsonrpc":"2.0","id":`)

// Write writes one frame.
func (w *lineWriter) Write(p []byte) (int, error) {
	var run []func()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, errWriterClosed
	}
	if bytes.HasPrefix(p, responsePrefix) && (len(w.prompts) > 0 || len(w.hooks) > 0 || len(w.open) > 0) {
		if id, isResponse := outgoingID(p); isResponse {
			delete(w.open, id)
			if sid, ok := w.prompts[id]; ok {
				// Cleared before the bytes go out: once the client has
				// the response it may send the next prompt at once.
				delete(w.prompts, id)
				delete(w.busy, sid)
			}
			kept := w.hooks[:0]
			for _, h := range w.hooks {
				if containsAll(p, h.match) {
					run = append(run, h.fn)
				} else {
					kept = append(kept, h)
				}
			}
			w.hooks = kept
		}
	}
	n, err := w.out.Write(p)
	w.mu.Unlock()
	for _, fn := range run {
		fn()
	}
	return n, err
}

func containsAll(p []byte, subs [][]byte) bool {
	for _, s := range subs {
		if !bytes.Contains(p, s) {
			return false
		}
	}
	return true
}

// afterResponse runs fn once, after the first response line containing
// every one of match has been written.
func (w *lineWriter) afterResponse(fn func(), match ...[]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.hooks = append(w.hooks, responseHook{match: match, fn: fn})
}

// claimPrompt records a session/prompt about to be forwarded. It reports
// false when a prompt of that session is already in flight.
func (w *lineWriter) claimPrompt(id, sessionID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.busy[sessionID]; ok {
		return false
	}
	w.busy[sessionID] = id
	w.prompts[id] = sessionID
	return true
}

// writeError writes a JSON-RPC error response for id (raw JSON).
func (w *lineWriter) writeError(id json.RawMessage, code int, msg string) error {
	b, err := errorFrame(id, code, msg)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// opened records a forwarded request awaiting its response.
func (w *lineWriter) opened(id json.RawMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.open[canonicalID(id)] = true
	}
}

// drain waits until every forwarded request has been answered, or grace
// has passed.
func (w *lineWriter) drain(grace time.Duration) {
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		n := len(w.open)
		w.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// close makes every later Write fail: after the client is gone, nothing
// more goes out (a write to a reader that left could block forever).
func (w *lineWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.hooks = nil
	w.mu.Unlock()
}

func errorFrame(id json.RawMessage, code int, msg string) ([]byte, error) {
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// outgoingID reads the id of a frame that starts with responsePrefix and
// reports whether the frame is a response (not a request of ours).
func outgoingID(p []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(p[len(responsePrefix):]))
	var id json.RawMessage
	if err := dec.Decode(&id); err != nil {
		return "", false
	}
	rest := bytes.TrimLeft(p[len(responsePrefix)+int(dec.InputOffset()):], " \t")
	if bytes.HasPrefix(rest, []byte(`,"method"`)) {
		return "", false
	}
	return canonicalID(id), true
}

// canonicalID is the key of a JSON-RPC id: its compact JSON text, which is
// what the SDK echoes back.
func canonicalID(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// filter copies frames from the client to the SDK, one line at a time. It
// answers, instead of forwarding: a frame over maxFrame bytes (-32600), a
// line that is not JSON (-32700), and a second session/prompt for a session
// whose prompt is in flight (-32602). An error or oversized frame that is a
// response to one of our requests is turned into an error response to the
// SDK, so the request fails instead of hanging. It returns when in ends
// (nil at EOF) or the SDK side is closed.
type filter struct {
	in       *bufio.Reader
	sdk      io.Writer // the pipe the SDK reads
	w        *lineWriter
	maxFrame int
	log      *slog.Logger
}

func (f *filter) run() error {
	for {
		fr, err := readFrame(f.in, f.maxFrame)
		if fr.size > 0 {
			if ferr := f.handle(fr); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (f *filter) handle(fr frame) error {
	if fr.line == nil {
		f.reject(fr, codeInvalidRequest, fmt.Sprintf("frame of %d bytes exceeds the %d-byte limit", fr.size, f.maxFrame))
		return nil
	}
	line := bytes.TrimRight(fr.line, "\r\n \t")
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if bytes.Contains(line, []byte(`"session/prompt"`)) {
		// One parse both validates the frame and finds the prompt's
		// session (its sessionId may come after the whole prompt).
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				SessionID string `json:"sessionId"`
			} `json:"params"`
		}
		err := json.Unmarshal(line, &m)
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			f.reject(fr, codeParseError, "Parse error: the frame is not valid JSON")
			return nil
		}
		if err == nil && m.Method == "session/prompt" && (len(m.ID) == 0 || string(m.ID) == "null") {
			// A prompt sent as a notification has no one to answer, and
			// the SDK would cancel the session's running prompt for it.
			f.log.Warn("acp: session/prompt without an id dropped", "session", m.Params.SessionID)
			return nil
		}
		if err == nil && m.Method == "session/prompt" {
			if !f.w.claimPrompt(canonicalID(m.ID), m.Params.SessionID) {
				if err := f.w.writeError(m.ID, codeInvalidParams, msgPromptInFlight); err != nil {
					f.log.Warn("acp: could not answer an overlapping prompt", "err", err)
				}
				return nil
			}
		}
	} else if !json.Valid(line) {
		f.reject(fr, codeParseError, "Parse error: the frame is not valid JSON")
		return nil
	}
	if id, method, isResponse := peekFrame(fr.head, fr.tail); id != nil && method != "" && !isResponse && string(id) != "null" {
		f.w.opened(id)
	}
	// line is a prefix of the frame's own buffer (never bufio's), so the
	// newline goes back in place.
	_, err := f.sdk.Write(append(line, '\n'))
	return err
}

// reject answers a frame that is not forwarded as it is.
func (f *filter) reject(fr frame, code int, msg string) {
	id, method, isResponse := peekFrame(fr.head, fr.tail)
	f.log.Warn("acp: frame not forwarded", "bytes", fr.size, "reason", msg, "method", method, "id", string(id))
	if id == nil {
		return
	}
	if isResponse {
		// A reply to one of our requests: fail that request in the SDK.
		b, err := errorFrame(id, code, msg)
		if err == nil {
			_, _ = f.sdk.Write(b)
		}
		return
	}
	if method == "" {
		// Neither a request nor a response for sure: answering could
		// complete an unrelated request of the client's.
		return
	}
	if err := f.w.writeError(id, code, msg); err != nil {
		f.log.Warn("acp: could not answer a rejected frame", "err", err)
	}
}

// frame is one line read from the client. line is nil when the frame was
// longer than the cap; head and tail keep its ends.
type frame struct {
	line       []byte
	size       int
	head, tail []byte
}

// readFrame reads one newline-terminated line. A line over max bytes is
// consumed to its end but not kept, except its first and last peekBytes.
// size counts the bytes of the line without its terminator.
func readFrame(r *bufio.Reader, max int) (frame, error) {
	var fr frame
	var acc []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		fr.size += len(chunk)
		if over {
			fr.tail = keepTail(fr.tail, chunk)
		} else {
			acc = append(acc, chunk...)
			if len(bytes.TrimRight(acc, "\r\n")) > max {
				over = true
				fr.head = append([]byte(nil), acc[:min(len(acc), peekBytes)]...)
				fr.tail = keepTail(nil, acc)
				acc = nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			fr.size -= len(fr.tail) - len(bytes.TrimRight(fr.tail, "\r\n"))
		} else {
			fr.line = acc
			fr.head, fr.tail = acc, acc
		}
		return fr, err
	}
}

func keepTail(tail, more []byte) []byte {
	tail = append(tail, more...)
	if len(tail) > peekBytes {
		tail = append([]byte(nil), tail[len(tail)-peekBytes:]...)
	}
	return tail
}

// peekFrame finds the id and method of a frame from its ends, without
// parsing the whole of it: the top-level keys are walked from the head until
// a value does not fit (the huge params or result); an id or method written
// after that value is looked for at the end of the tail. isResponse is true
// when a result or error key is seen before any method.
func peekFrame(head, tail []byte) (id json.RawMessage, method string, isResponse bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				break
			}
			key, _ := kt.(string)
			if key == "result" || key == "error" {
				isResponse = method == ""
				break
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				break
			}
			switch key {
			case "id":
				id = raw
			case "method":
				_ = json.Unmarshal(raw, &method)
			}
		}
	}
	if id == nil {
		if m := tailID.FindSubmatch(bytes.TrimRight(tail, "\r\n \t")); m != nil {
			id = json.RawMessage(append([]byte(nil), m[1]...))
		}
	}
	if method == "" && !isResponse {
		if m := tailMethod.FindSubmatch(bytes.TrimRight(tail, "\r\n \t")); m != nil {
			method = string(m[1])
		}
	}
	if id != nil && string(id) == "null" {
		id = nil
	}
	return id, method, isResponse
}

// Ids and methods written last in a frame: `…,"id":7}` or
// `…,"id":7,"method":"x"}` and the like.
var (
	tailID     = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"(?:[^"\\]|\\.){0,256}")\s*(?:,\s*"(?:jsonrpc|method)"\s*:\s*"(?:[^"\\]|\\.){0,256}"\s*)*\}$`)
	tailMethod = regexp.MustCompile(`"method"\s*:\s*"((?:[^"\\]|\\.){1,256})"\s*(?:,\s*"(?:jsonrpc|id)"\s*:\s*(?:-?[0-9]+|"(?:[^"\\]|\\.){0,256}")\s*)*\}$`)
)
