package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/dsh-dev/dsh/core/lazyre"
)

// maxFrame bounds one message from a server (a line on stdio). Above it
// the message is dropped and, when it answers one of our calls, that call
// gets an error instead: a server cannot make dsh hold 50 MiB for a result
// the model would see 100 KiB of anyway.
const maxFrame = 16 << 20

// frameTail is how much of the end of an over-long line is kept to find
// its request id (the TypeScript SDK writes "id" last).
const frameTail = 4 << 10

// filter is what a stdio server's stdout passes through before the SDK
// decodes it.
type filter struct {
	limit int
	// noise reports a skipped or replaced line.
	noise func(string)
	// lists knows which of our requests are tools/list (nil: none).
	lists *listWatch
	// dropped reports a tool left out of a tools/list answer.
	dropped func(string)
}

func (f filter) run(src io.Reader, out *io.PipeWriter) {
	limit := f.limit
	r := bufio.NewReaderSize(src, 64<<10)
	var (
		line     []byte
		tail     []byte
		total    int
		overflow bool
	)
	for {
		chunk, err := r.ReadSlice('\n')
		total += len(chunk)
		switch {
		case !overflow && len(line)+len(chunk) <= limit:
			line = append(line, chunk...)
		default:
			if !overflow {
				overflow = true
				if len(line) > frameTail {
					line = line[:frameTail]
				}
			}
			tail = append(tail, chunk...)
			if len(tail) > frameTail {
				tail = append(tail[:0], tail[len(tail)-frameTail:]...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if total > 0 {
			frame := f.pass(line, tail, total, overflow)
			if frame != nil {
				if _, werr := out.Write(frame); werr != nil {
					_ = out.CloseWithError(werr)
					return
				}
			}
		}
		line, tail, total, overflow = line[:0], tail[:0], 0, false
		if cap(line) > 1<<20 {
			line = nil // do not keep a huge buffer for the life of the server
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			_ = out.CloseWithError(err)
			return
		}
	}
}

// pass decides what one line becomes: itself (or, for a batch, its
// messages one per line), a synthetic error for the call it answered, or
// nothing.
func (f filter) pass(line, tail []byte, total int, overflow bool) []byte {
	limit, noise := f.limit, f.noise
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	if trimmed[0] != '{' && trimmed[0] != '[' {
		noise("the server wrote a line that is not JSON-RPC to stdout (skipped): " + short(string(trimmed), 200))
		return nil
	}
	why := fmt.Sprintf("the server's message was %.1f MiB, over dsh's limit of %d MiB", float64(total)/(1<<20), limit>>20)
	switch {
	case overflow:
	case !json.Valid(trimmed):
		why = "the server answered with malformed JSON: " + short(string(trimmed), 200)
	case depth(trimmed) > maxDepth && !f.isList(trimmed):
		why = fmt.Sprintf("the server's message nests deeper than %d levels", maxDepth)
	case trimmed[0] == '[':
		return f.batch(trimmed)
	default:
		return f.message(trimmed)
	}
	id := responseID(trimmed, bytes.TrimSpace(tail))
	if id == "" {
		noise(why + " (dropped)")
		return nil
	}
	noise(why)
	msg, _ := json.Marshal(why)
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":` + string(msg) + "}}\n")
}

// message passes one valid JSON value that should be a JSON-RPC 2.0
// message: anything else is skipped and reported.
func (f filter) message(msg []byte) []byte {
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil || !env.valid() {
		f.noise("the server wrote JSON that is not a JSON-RPC 2.0 message to stdout (skipped): " + short(string(msg), 200))
		return nil
	}
	if env.Result != nil && f.lists.answered(env.ID) {
		return f.sanitizeTools(msg)
	}
	return append(msg, '\n')
}

// batch splits a JSON-RPC batch (an array of messages) into one line per
// message, as the SDK reads them; an array that is not all messages is
// skipped whole.
func (f filter) batch(arr []byte) []byte {
	var items []json.RawMessage
	ok := json.Unmarshal(arr, &items) == nil && len(items) > 0
	for _, it := range items {
		var env envelope
		ok = ok && json.Unmarshal(it, &env) == nil && env.valid()
	}
	if !ok {
		f.noise("the server wrote a JSON array that is not a JSON-RPC batch to stdout (skipped): " + short(string(arr), 200))
		return nil
	}
	var out []byte
	for _, it := range items {
		out = append(out, f.message(it)...)
	}
	return out
}

// envelope is the part of a JSON-RPC 2.0 message that says what it is.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// valid: a request or notification has a method; a response has an id
// (a number or a string; null only with an error) and a result or an
// error.
func (e envelope) valid() bool {
	if e.JSONRPC != "2.0" {
		return false
	}
	if e.Method != "" {
		return e.Result == nil && e.Error == nil
	}
	idOK := len(e.ID) > 0 && (e.ID[0] == '"' || e.ID[0] == '-' || e.ID[0] >= '0' && e.ID[0] <= '9')
	switch {
	case e.Result != nil && e.Error == nil:
		return idOK
	case e.Error != nil && e.Result == nil:
		return idOK || string(e.ID) == "null"
	}
	return false
}

// maxDepth bounds how deep one message nests: the SDK refuses a message
// over 1,000 levels, which would fail the whole connection.
const maxDepth = 900

// depth is how deeply a valid JSON value nests.
func depth(b []byte) int {
	d, most, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr:
			switch c {
			case '\\':
				esc = true
			case '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

var (
	headID = lazyre.New(`^\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?[0-9]+|"[^"\\]{0,200}")\s*,\s*"(result|error)"`)
	tailID = lazyre.New(`"id"\s*:\s*(-?[0-9]+|"[^"\\]{0,200}")\s*\}$`)
	isResp = lazyre.New(`^\{\s*"(result|error)"\s*:`)
)

// responseID finds the id of a response from its head (Go and Python SDKs
// write jsonrpc, id, then result) or its tail (the TypeScript SDK writes
// result first and id last). A request or notification from the server
// has no id we may answer for, so "" is returned for anything else.
func responseID(head, tail []byte) string {
	if m := headID().FindSubmatch(head); m != nil {
		return string(m[1])
	}
	if !isResp().Match(head) {
		return ""
	}
	end := tail
	if len(end) == 0 {
		end = head
	}
	if m := tailID().FindSubmatch(end); m != nil {
		return string(m[1])
	}
	return ""
}
