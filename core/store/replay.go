package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/dsh-dev/dsh/core/event"
)

// wrapErr is an error with its own full message that still matches one of
// the package's sentinel errors under errors.Is. fmt.Errorf("%w") would glue
// the sentinel's text onto ours ("session "x": session does not exist").
type wrapErr struct {
	msg string
	err error
}

func (e *wrapErr) Error() string { return e.msg }
func (e *wrapErr) Unwrap() error { return e.err }

func notFound(id string) error {
	return &wrapErr{msg: fmt.Sprintf("session %q does not exist", id), err: ErrNotFound}
}

func corrupt(file string, line int, format string, args ...any) error {
	return &wrapErr{
		msg: fmt.Sprintf("session log %s is corrupt at line %d: %s", file, line, fmt.Sprintf(format, args...)),
		err: ErrCorrupt,
	}
}

// parsed is a log file as read from disk.
type parsed struct {
	header Header
	events []event.Event
	// next is the seq the line after the last one read would carry: the
	// session's next seq. Events hold the lines read in order, but without
	// the live stream (assistant/chunk) when it was skipped, so seqs can
	// have gaps; next counts every line.
	next int64
	// good is the byte length of the valid prefix: the header and every
	// complete record. Anything after it is a torn last line.
	good int64
	torn bool
}

// readOpts says what part of a log a parse reads.
type readOpts struct {
	// from, when positive, is the byte offset of a line (a compaction
	// checkpoint) to start at: the lines before are neither read nor
	// checked, and the first line read sets the seqs that follow.
	from int64
	// skipChunks leaves the live stream out: assistant/chunk lines are
	// checked (valid JSON, their seq in place) but not decoded or kept. A
	// wake and a replay need only the committed history; the stream is
	// most of a log's lines and bytes.
	skipChunks bool
}

// readBufSize is the bufio buffer of replay. Lines longer than it are
// assembled in a side buffer, so there is no line length limit.
const readBufSize = 256 << 10

// lineReader hands out the lines of a log, however long.
type lineReader struct {
	br   *bufio.Reader
	long []byte
}

// next returns the next line including its '\n' (absent on a last line
// that has none), or io.EOF when no bytes are left. The line is valid
// until the next call.
func (r *lineReader) next() ([]byte, error) {
	r.long = r.long[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.long = append(r.long, chunk...)
			continue
		}
		if len(r.long) > 0 {
			r.long = append(r.long, chunk...)
			chunk = r.long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(chunk) == 0 {
			return nil, io.EOF
		}
		return chunk, nil
	}
}

func (r *lineReader) atEOF() bool {
	_, err := r.br.Peek(1)
	return errors.Is(err, io.EOF)
}

// parseLog reads and validates a whole log: header first, then events with
// seq i on line i+2, each of a known type unless marked ignorable. A last
// line that is incomplete or not JSON is a torn write and is reported in
// torn; any other damage is ErrCorrupt, and a header of another format
// version is ErrVersion. name only labels errors. sizeHint (file size, or 0)
// pre-sizes the event slice.
func parseLog(r io.Reader, name string, sizeHint int64, o readOpts) (*parsed, error) {
	lr := &lineReader{br: bufio.NewReaderSize(r, readBufSize)}
	p := &parsed{}
	line, err := lr.next()
	switch {
	case errors.Is(err, io.EOF):
		return nil, corrupt(name, 1, "the file is empty (no session header)")
	case err != nil:
		return nil, fmt.Errorf("read session log %s: %w", name, err)
	case line[len(line)-1] != '\n':
		return nil, corrupt(name, 1, "the session header line is incomplete")
	}
	if err := decodeHeader(line, &p.header, name); err != nil {
		return nil, err
	}
	p.good = int64(len(line))

	if o.from > p.good {
		if _, err := lr.br.Discard(int(o.from - p.good)); err != nil {
			return nil, fmt.Errorf("read session log %s: %w", name, err)
		}
		p.good = o.from
		p.next = -1 // set by the first line
		sizeHint -= o.from
	}
	if sizeHint > 0 {
		per := int64(256)
		if o.skipChunks {
			per = 1024 // most lines of a streamed session are chunks
		}
		p.events = make([]event.Event, 0, sizeHint/per+16)
	}
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return p, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read session log %s: %w", name, err)
		}
		if line[len(line)-1] != '\n' {
			p.torn = true // only the last line can lack its newline
			return p, nil
		}
		if err := p.add(line, lr, name, o.skipChunks); err != nil {
			return nil, err
		}
		if p.torn {
			return p, nil
		}
	}
}

// lineNo is the line of the next record: seq i is on line i+2.
func (p *parsed) lineNo() int { return int(p.next) + 2 }

// add checks one complete record (with its '\n') and appends its event.
// A record that is not JSON is a torn write when it is the last line.
func (p *parsed) add(line []byte, lr *lineReader, name string, skipChunks bool) error {
	body := line[:len(line)-1]
	if skipChunks {
		if seq, ok := liveChunk(body); ok {
			if p.next < 0 {
				p.next = seq
			}
			if seq != p.next {
				return corrupt(name, p.lineNo(), "event seq %d where %d was expected", seq, p.next)
			}
			p.next++
			p.good += int64(len(line))
			return nil
		}
	}
	i := len(p.events)
	p.events = append(p.events, event.Event{})
	ev := &p.events[i]
	if err := decodeEvent(body, ev); err != nil {
		p.events = p.events[:i]
		if lr.atEOF() {
			p.torn = true
			return nil
		}
		return corrupt(name, p.lineNo(), "not a JSON event: %v", err)
	}
	if p.next < 0 {
		p.next = ev.Seq
	}
	if ev.Seq != p.next {
		return corrupt(name, p.lineNo(), "event seq %d where %d was expected", ev.Seq, p.next)
	}
	if !event.Known(ev.Type) && !ev.Ignorable {
		return corrupt(name, p.lineNo(), "unknown event type %q not marked ignorable", ev.Type)
	}
	if skipChunks && ev.Type == event.TypeAssistantChunk {
		p.events = p.events[:i] // a chunk in a shape liveChunk leaves to decodeEvent
	}
	p.next++
	p.good += int64(len(line))
	return nil
}

// decodeHeader checks and decodes a header line (with or without '\n').
func decodeHeader(line []byte, h *Header, name string) error {
	var probe struct {
		Type    string          `json:"type"`
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return corrupt(name, 1, "the session header is not JSON: %v", err)
	}
	if probe.Type != "session" {
		return corrupt(name, 1, "the first line is not a session header (type %q)", probe.Type)
	}
	if string(probe.Version) != strconv.Itoa(FormatVersion) {
		v := string(probe.Version)
		if v == "" {
			v = "missing"
		}
		return &wrapErr{
			msg: fmt.Sprintf("session log %s has format version %s; this dsh reads only version %d", name, v, FormatVersion),
			err: ErrVersion,
		}
	}
	if err := json.Unmarshal(line, h); err != nil {
		return corrupt(name, 1, "bad session header: %v", err)
	}
	if h.ID == "" {
		return corrupt(name, 1, "the session header has no id")
	}
	return nil
}

// Synthetic tool-error name and text written for calls whose outcome was
// lost because the process stopped.
const (
	toolErrorName   = "ToolError"
	outcomeLostText = "dsh stopped before the outcome of this tool call was recorded, so it may or may not have run. " +
		"Check its effects before running it again."
)

// closeTurn returns the events that close an unfinished turn at the end of
// events (nil if the last turn ended): a tool/call for every call of an
// assistant/message that has none (dsh commits the two together, but a log
// cut inside that write, or written by an older dsh, can lack them; a
// result must never answer a call that was not announced), a
// TOOL_OUTCOME_UNKNOWN result for every call of the turn that has none, a
// step/end for an open step, and a turn/end of kind interrupted. Seqs
// start at next, the log's next seq; every event gets time now. Message
// ids are derived from the session id and seq, so a read-only replay and a
// later repair name them alike. file labels errors.
func closeTurn(events []event.Event, next int64, sessionID string, now int64, file string) ([]event.Event, error) {
	start, t := openTurn(events)
	if start < 0 {
		return nil, nil
	}
	for _, ev := range events[start:] {
		if err := t.read(ev); err != nil {
			return nil, corrupt(file, int(ev.Seq)+2, "bad %s payload: %v", ev.Type, err)
		}
	}
	return t.closers(next, sessionID, now), nil
}

// openTurn finds the unfinished turn at the end of events: the index of
// its first event, or -1 when the last turn ended (or none began), and the
// state to read it with.
func openTurn(events []event.Event) (int, *turnState) {
	t := &turnState{seen: map[string]int{}, results: map[string]bool{}}
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case event.TypeTurnEnd:
			return -1, nil
		case event.TypeTurnStart:
			return i, t
		}
	}
	// A log read from a checkpoint made inside a step starts in that
	// step's turn.
	if len(events) == 0 || events[0].Type != event.TypeCompactionCheckpoint {
		return -1, nil
	}
	var cp event.CompactionCheckpoint
	if err := json.Unmarshal(events[0].Data, &cp); err != nil || cp.Step <= 0 {
		return -1, nil
	}
	t.turn, t.step, t.stepOpen = cp.Turn, event.Step{Turn: cp.Turn, Step: cp.Step}, true
	return 0, t
}

// turnState is what an unfinished turn's events say about it: its calls
// in order, the results recorded, the open step.
type turnState struct {
	calls    []openCall
	seen     map[string]int // call id → index in calls
	results  map[string]bool
	turn     int
	step     event.Step
	stepOpen bool
}

// openCall is a call of the unfinished turn.
type openCall struct {
	id              string
	turn, step      int
	name, arguments string
	announced       bool // a tool/call event is in the log
}

func (t *turnState) addCall(c openCall) {
	if c.id == "" {
		return
	}
	if i, ok := t.seen[c.id]; ok {
		t.calls[i].announced = t.calls[i].announced || c.announced
		return
	}
	t.seen[c.id] = len(t.calls)
	t.calls = append(t.calls, c)
}

// read folds one event of the turn in; an error is a payload it cannot
// read.
func (t *turnState) read(ev event.Event) error {
	switch ev.Type {
	case event.TypeTurnStart:
		var d event.TurnStart
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		t.turn = d.Turn
	case event.TypeStepStart:
		if err := json.Unmarshal(ev.Data, &t.step); err != nil {
			return err
		}
		t.stepOpen = true
	case event.TypeStepEnd:
		t.stepOpen = false
	case event.TypeToolCall:
		var d struct {
			Turn   int    `json:"turn"`
			Step   int    `json:"step"`
			CallID string `json:"callId"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return err
		}
		t.addCall(openCall{id: d.CallID, turn: d.Turn, step: d.Step, announced: true})
	case event.TypeAssistantMessage:
		return t.readMessage(ev)
	case event.TypeToolResult:
		return t.readResult(ev)
	}
	return nil
}

// readMessage notes the calls of an assistant/message.
func (t *turnState) readMessage(ev event.Event) error {
	var d struct {
		Turn    int `json:"turn"`
		Step    int `json:"step"`
		Message struct {
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return err
	}
	for _, b := range d.Message.Content {
		if b.Type == event.BlockToolCall {
			t.addCall(openCall{id: b.ID, turn: d.Turn, step: d.Step, name: b.Name, arguments: b.Arguments})
		}
	}
	return nil
}

// readResult notes the calls a tool/result answers.
func (t *turnState) readResult(ev event.Event) error {
	var d struct {
		Message struct {
			Content []struct {
				Type       string `json:"type"`
				ToolCallID string `json:"toolCallId"`
			} `json:"content"`
			Source struct {
				CallID string `json:"callId"`
			} `json:"source"`
		} `json:"message"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return err
	}
	for _, b := range d.Message.Content {
		if b.Type == event.BlockToolResult {
			t.results[b.ToolCallID] = true
		}
	}
	if d.Message.Source.CallID != "" {
		t.results[d.Message.Source.CallID] = true
	}
	return nil
}

// closers makes the events that close the turn, numbered from next.
func (t *turnState) closers(next int64, sessionID string, now int64) []event.Event {
	var out []event.Event
	add := func(typ string, data any) {
		ev := event.New(typ, data)
		ev.Seq = next + int64(len(out))
		ev.Time = now
		out = append(out, ev)
	}
	for _, c := range t.calls {
		if !c.announced && !t.results[c.id] {
			add(event.TypeToolCall, event.ToolCall{Turn: c.turn, Step: c.step, CallID: c.id, Name: c.name, Arguments: c.arguments})
		}
	}
	for _, c := range t.calls {
		if t.results[c.id] {
			continue
		}
		add(event.TypeToolResult, outcomeLost(c, syntheticID(sessionID, next+int64(len(out)))))
	}
	if t.stepOpen {
		add(event.TypeStepEnd, t.step)
	}
	add(event.TypeTurnEnd, event.TurnEnd{Turn: t.turn, Reason: event.TurnEndReason{Kind: event.ReasonInterrupted}})
	return out
}

// outcomeLost is the TOOL_OUTCOME_UNKNOWN result of call c, as message
// msgID.
func outcomeLost(c openCall, msgID string) event.ToolResult {
	return event.ToolResult{
		Turn: c.turn,
		Step: c.step,
		Message: event.Message{
			ID:   msgID,
			Role: "user",
			Content: []event.ContentBlock{{
				Type:       event.BlockToolResult,
				ToolCallID: c.id,
				Content:    []event.ContentBlock{event.Text(outcomeLostText)},
				IsError:    true,
			}},
			Source: event.Source{Kind: "tool", CallID: c.id},
		},
		Error: &event.ToolErrorInfo{Name: toolErrorName, Code: event.ToolOutcomeUnknown},
	}
}

// firstLine returns the first line of r (without '\n'), however long.
func firstLine(r io.Reader) ([]byte, bool, error) {
	br := bufio.NewReaderSize(r, 4096)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, false, nil
		case err != nil:
			return nil, false, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), true, nil
	}
}

// syntheticID names the message of a synthetic event: a UUID (version 8,
// "custom") made from a hash of the session id and the seq, so every replay
// of the same log names it alike.
func syntheticID(sessionID string, seq int64) string {
	b := sha256.Sum256([]byte("dsh:synthetic:" + sessionID + ":" + strconv.FormatInt(seq, 10)))
	b[6] = b[6]&0x0f | 0x80 // version 8
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
