package wire

import (
	"bytes"
	"encoding/json"
	"sync"
)

// batchReply collects the answers to the requests of one batch and writes
// them as one array when the last is in (JSON-RPC 2.0 §6).
type batchReply struct {
	c       *Conn
	mu      sync.Mutex
	waiting int
	lines   [][]byte
}

// batch handles a JSON array frame, which is known to be valid JSON.
func (c *Conn) batch(line []byte) {
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil {
		c.writeError(null, Errorf(CodeParseError, "Parse error: %v", err))
		return
	}
	if len(elems) == 0 {
		c.writeError(null, Errorf(CodeInvalidRequest, "Invalid Request: an empty batch"))
		return
	}
	b := &batchReply{c: c}
	msgs := make([]Message, 0, len(elems))
	var refused []*invalid
	for _, raw := range elems {
		m, bad := decodeOne(raw)
		if bad != nil {
			refused = append(refused, bad)
			continue
		}
		if m.Kind == KindRequest {
			b.waiting++
		}
		msgs = append(msgs, m)
	}
	for _, bad := range refused {
		c.log.Warn("wire: invalid batch element", "reason", bad.err.Message)
		line, _ := responseLine(bad.id, nil, bad.err)
		b.lines = append(b.lines, line)
	}
	// One extra count held while dispatching, so a fast answer cannot
	// flush the batch before every request of it has started.
	b.waiting++
	for _, m := range msgs {
		c.dispatch(m, b)
	}
	b.add(nil)
}

// add records one answer (nil for the dispatcher's own count) and writes
// the array after the last.
func (b *batchReply) add(line []byte) {
	b.mu.Lock()
	if line != nil {
		b.lines = append(b.lines, line)
	}
	b.waiting--
	done := b.waiting == 0
	lines := b.lines
	b.mu.Unlock()
	if !done || len(lines) == 0 {
		return
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	buf.Write(bytes.Join(lines, []byte{','}))
	buf.WriteByte(']')
	if err := b.c.writeLine(buf.Bytes()); err != nil {
		b.c.log.Debug("wire: batch response not written", "err", err)
	}
}
