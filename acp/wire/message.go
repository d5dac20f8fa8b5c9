// Package wire is JSON-RPC 2.0 over newline-delimited JSON, as ACP speaks it
// on stdio: one layer that reads each frame once, decodes it once into a
// Message and owns what happens to it (a request to a handler, a response to
// the call waiting for it, a notification to the handler in wire order).
//
// Both ends of ACP use it: the ACP door (`dsh acp`) serves a client with
// it, and the subagent gateway drives another vendor's ACP agent with it.
// It exists because acp-go-sdk's connection reads with a 10 MiB
// bufio.Scanner, drops a frame it cannot parse without an answer, queues
// notifications in 1,024 slots and closes the connection on overflow, and
// cancels a session's running prompt when another prompt for that session
// arrives. The SDK's generated schema types and method constants stay the
// vocabulary; this package is only the connection.
//
// What the JSON-RPC 2.0 spec asks, done here:
//   - a leading UTF-8 BOM and a CRLF line end are tolerated; a member name
//     or method written with escapes (`"session\/prompt"`) is the same name;
//   - ids may be strings, numbers (any JSON number, compared by value) or
//     null; a request is answered with its id exactly as it was sent;
//   - a frame that is not JSON is answered -32700 with id null; a JSON value
//     that is not a valid request is answered -32600 (with its id when one
//     can be read, else null);
//   - a batch (a JSON array) is answered with one array of the responses to
//     its requests, in the order they finish, or nothing when it held only
//     notifications and responses; an empty batch is one -32600;
//   - a frame over the size limit is skimmed to its end without being kept
//     and answered -32600 with its id (the skim is a streaming JSON walk, so
//     an id written after a huge params is still found).
//
// Flow control: notifications run on the reading goroutine, one at a time,
// so a flood of them is read at the pace the handler takes them — the pipe
// is the queue and nothing grows. Requests run on their own goroutines, at
// most MaxInFlight at once; the next one is refused with -32603 rather than
// queued. Every write is one line in one Write under one mutex, so a slow
// reader on the other end slows the writer (the caller) down.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeRequestCancelled is ACP's code for a request cancelled with
	// $/cancel_request.
	CodeRequestCancelled = -32800
)

// MethodCancelRequest is the protocol-level notification that cancels one
// request in flight (ACP, like LSP's $/cancelRequest).
const MethodCancelRequest = "$/cancel_request"

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// Errorf returns an *Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Kind says what a decoded message is.
type Kind int

// Message kinds.
const (
	KindRequest Kind = iota + 1
	KindNotification
	KindResponse
)

// Message is one decoded JSON-RPC message.
type Message struct {
	Kind Kind
	// ID is the id as sent (nil for a notification; `null` is kept).
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// envelope is the one decode of a frame's members. Every member is kept raw
// so that absence, null and a wrong type can each be told apart.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// invalid is a frame that cannot be used; id is the id to answer with
// (null when it could not be read) and respond says whether to answer at
// all (a broken response is not answered).
type invalid struct {
	id      json.RawMessage
	err     *Error
	respond bool
}

var null = json.RawMessage("null")

// decodeOne classifies one JSON value already known to be valid JSON.
func decodeOne(raw []byte) (Message, *invalid) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return Message{}, &invalid{id: null, respond: true, err: Errorf(CodeInvalidRequest, "Invalid Request: a message must be a JSON object")}
	}
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return Message{}, &invalid{id: null, respond: true, err: Errorf(CodeInvalidRequest, "Invalid Request: %v", err)}
	}
	idOK := e.ID == nil || validID(e.ID)
	answerID := null
	if e.ID != nil && idOK {
		answerID = e.ID
	}
	bad := func(format string, args ...any) (Message, *invalid) {
		return Message{}, &invalid{id: answerID, respond: true, err: Errorf(CodeInvalidRequest, "Invalid Request: "+format, args...)}
	}
	if v, ok := stringValue(e.JSONRPC); !ok || v != "2.0" {
		return bad(`"jsonrpc" must be "2.0"`)
	}
	if !idOK {
		return bad("the id must be a string, a number or null")
	}
	if e.Method != nil {
		method, ok := stringValue(e.Method)
		if !ok {
			return bad("the method must be a string")
		}
		if e.Result != nil || e.Error != nil {
			return bad("a request cannot carry a result or an error")
		}
		if string(e.Params) == "null" {
			e.Params = nil // lenient: null params are no params
		}
		if e.Params != nil && !isStructured(e.Params) {
			return bad("params must be an object or an array")
		}
		m := Message{Kind: KindNotification, Method: method, Params: e.Params}
		if e.ID != nil {
			m.Kind, m.ID = KindRequest, e.ID
		}
		return m, nil
	}
	if e.ID == nil || (e.Result == nil) == (e.Error == nil) {
		// Neither a request nor a usable response. A reply to it could
		// complete an unrelated request of the peer's, so it is answered
		// with id null.
		return Message{}, &invalid{id: null, respond: true, err: Errorf(CodeInvalidRequest, "Invalid Request: neither a request (no method) nor a response (needs an id and exactly one of result or error)")}
	}
	m := Message{Kind: KindResponse, ID: e.ID, Result: e.Result}
	if e.Error != nil {
		var re Error
		if err := json.Unmarshal(e.Error, &re); err != nil || !bytes.HasPrefix(bytes.TrimSpace(e.Error), []byte("{")) {
			re = Error{Code: CodeInternalError, Message: "the peer answered with a malformed error object: " + string(e.Error)}
		}
		m.Error = &re
	}
	return m, nil
}

func isStructured(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '{' || raw[0] == '[')
}

// validID accepts a JSON string, number or null.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true // valid JSON already
	case c == 'n':
		return string(raw) == "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

func stringValue(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// IDKey is the identity of an id: strings by their decoded text, numbers
// by their value (1, 1.0 and 1e0 are one id), null as null.
func IDKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if s, ok := stringValue(raw); ok {
		return "s:" + s
	}
	if string(raw) == "null" {
		return "null"
	}
	if numericKeyable(raw) {
		if r, ok := new(big.Rat).SetString(string(raw)); ok {
			return "n:" + r.RatString()
		}
	}
	return "?:" + string(raw)
}

// numericKeyable bounds the work of comparing numbers by value: a short
// mantissa and a small exponent (big.Rat would expand 1e999999999).
func numericKeyable(raw []byte) bool {
	if len(raw) > 64 || strings.ContainsAny(string(raw), "/") {
		return false
	}
	i := bytes.IndexAny(raw, "eE")
	if i < 0 {
		return true
	}
	exp := strings.TrimLeft(string(raw[i+1:]), "+-")
	return len(exp) <= 3
}
