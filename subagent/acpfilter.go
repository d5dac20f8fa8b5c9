package subagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// updateFilter sits between an ACP agent's stdout and the Go SDK's reader
// and takes the session/update notifications out of the stream, handing
// each to onUpdate as it is read; every other line passes through
// unchanged.
//
// Why: the SDK queues notifications for one consumer goroutine that also
// decodes them into its generated union types and validates them; the
// queue holds 1024 and, on overflow, the SDK closes the connection (spec
// acp.md §8). Even with a handler that returns at once, an agent streaming
// small chunks at full speed outruns that consumer (we measured it under
// the race detector: a 5000-chunk burst lost the connection 2 runs in 12).
// Handling updates on the reading goroutine instead makes the pipe the
// queue: a fast agent is slowed by backpressure, never disconnected. Order
// is kept, because the filter handles an update before it reads the next
// line, so every update precedes the prompt response that follows it.
type updateFilter struct {
	r        *bufio.Reader
	onUpdate func(sessionID string, update json.RawMessage)
	pending  []byte // a passed-through line not yet read by the SDK
	err      error
}

// maxFrame bounds one line from the agent (the SDK's own limit is 10 MiB).
const maxFrame = 16 << 20

func newUpdateFilter(r io.Reader, onUpdate func(string, json.RawMessage)) *updateFilter {
	return &updateFilter{r: bufio.NewReaderSize(r, 64<<10), onUpdate: onUpdate}
}

func (f *updateFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, err := f.readLine()
		if err != nil {
			f.err = err
		}
		if len(line) == 0 {
			continue
		}
		if !f.take(line) {
			f.pending = line
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine returns the next line with its newline (the last line may lack
// one), or an error once the input ends.
func (f *updateFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxFrame {
			return nil, fmt.Errorf("ACP agent sent a frame larger than %d bytes", maxFrame)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

// take handles line if it is a session/update notification.
func (f *updateFilter) take(line []byte) bool {
	trimmed := bytes.TrimSpace(line)
	// Cheap test first: most lines are not updates.
	if len(trimmed) == 0 || trimmed[0] != '{' || !bytes.Contains(trimmed, []byte(`"session/update"`)) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			SessionID string          `json:"sessionId"`
			Update    json.RawMessage `json:"update"`
		} `json:"params"`
	}
	if json.Unmarshal(trimmed, &m) != nil || m.ID != nil || m.Method != "session/update" {
		return false
	}
	f.onUpdate(m.Params.SessionID, m.Params.Update)
	return true
}

// agentText returns the text of an agent_message_chunk update ("" for
// any other update).
func agentText(update json.RawMessage) string {
	var u struct {
		SessionUpdate string `json:"sessionUpdate"`
		Content       struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(update, &u) != nil || u.SessionUpdate != "agent_message_chunk" || u.Content.Type != "text" {
		return ""
	}
	return u.Content.Text
}
