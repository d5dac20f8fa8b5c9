package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
)

// maxFrame bounds one message from a server (a line on stdio). Above it
// the message is dropped and, when it answers one of our calls, that call
// gets an error instead: a server cannot make dsh hold 50 MiB for a result
// the model would see 100 KiB of anyway.
const maxFrame = 16 << 20

// frameTail is how much of the end of an over-long line is kept to find
// its request id (the TypeScript SDK writes "id" last).
const frameTail = 4 << 10

// filterFrames copies the JSON-RPC messages of a stdio server's stdout to
// out, one line each, and keeps the connection alive through what would
// otherwise kill it: a line that is not JSON (a banner, a stray log line)
// is reported through noise and skipped; a malformed or over-long answer to
// one of our calls is replaced by a JSON-RPC error for that call, so the
// call fails with a clear message and the server goes on. It returns when
// src ends and closes out.
func filterFrames(src io.Reader, out *io.PipeWriter, limit int, noise func(string)) {
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
			frame := passFrame(line, tail, total, overflow, limit, noise)
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

// passFrame decides what one line becomes: itself, a synthetic error for
// the call it answered, or nothing.
func passFrame(line, tail []byte, total int, overflow bool, limit int, noise func(string)) []byte {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	if trimmed[0] != '{' && trimmed[0] != '[' {
		noise("the server wrote a line that is not JSON-RPC to stdout (skipped): " + short(string(trimmed), 200))
		return nil
	}
	if !overflow && json.Valid(trimmed) {
		return append(trimmed, '\n')
	}
	why := fmt.Sprintf("the server's message was %.1f MiB, over dsh's limit of %d MiB", float64(total)/(1<<20), limit>>20)
	if !overflow {
		why = "the server answered with malformed JSON: " + short(string(trimmed), 200)
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

var (
	headID = regexp.MustCompile(`^\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?[0-9]+|"[^"\\]{0,200}")\s*,\s*"(result|error)"`)
	tailID = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"[^"\\]{0,200}")\s*\}$`)
	isResp = regexp.MustCompile(`^\{\s*"(result|error)"\s*:`)
)

// responseID finds the id of a response from its head (Go and Python SDKs
// write jsonrpc, id, then result) or its tail (the TypeScript SDK writes
// result first and id last). A request or notification from the server
// has no id we may answer for, so "" is returned for anything else.
func responseID(head, tail []byte) string {
	if m := headID.FindSubmatch(head); m != nil {
		return string(m[1])
	}
	if !isResp.Match(head) {
		return ""
	}
	end := tail
	if len(end) == 0 {
		end = head
	}
	if m := tailID.FindSubmatch(end); m != nil {
		return string(m[1])
	}
	return ""
}
