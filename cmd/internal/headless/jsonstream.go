// Package headless holds the pure parts of `dsh run`: the --json projection
// of committed session events into NDJSON run events, task resolution from
// argv and stdin, and the run-specific flags. The run driver that wires the
// core runtime lives elsewhere; everything here is deterministic and testable
// without a runtime.
//
// Contract: /work/shared/seeds/002 (headless machine-readable run surface)
// and spec dsh-protocols.md §6.
package headless

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/dsh-dev/dsh/core/event"
)

// Run event types written by the projection.
const (
	TypeSession    = "session"
	TypeStatus     = "status"
	TypeText       = "text"
	TypeThinking   = "thinking"
	TypeToolCall   = "tool_call"
	TypeToolResult = "tool_result"
	TypeError      = "error"
	TypeFinal      = "final"
)

// Status phases.
const (
	PhaseTurnStart = "turn_start"
	PhaseStepStart = "step_start"
	PhaseStepEnd   = "step_end"
	PhaseTurnEnd   = "turn_end"
)

// Projector turns committed session events into --json run events, one line
// per Write. It is a projection of the durable log, never of live deltas:
// text and reasoning come only from committed assistant/message events, so
// the stream never carries content the log does not contain.
//
// All methods are safe for concurrent use (the event subscriber and the
// driver's final/error path may be different goroutines); lines are never
// interleaved.
type Projector struct {
	mu    sync.Mutex
	w     io.Writer
	steps map[stepKey]*stepUsage
	buf   []byte
}

type stepKey struct{ turn, step int }

// stepUsage accumulates the usage samples of one step. The step's usage is
// published only if every attempt and message reported one, so a partial
// total is never presented as exact; an optional bucket is published only if
// every sample carried it.
type stepUsage struct {
	samples int
	missing bool
	input   int64
	output  int64
	opt     [numOptBuckets]int64
	optSeen [numOptBuckets]int
}

// Optional usage buckets, in output order.
const (
	optTotal = iota
	optCacheRead
	optCacheWrite
	optReasoning
	numOptBuckets
)

var optNames = [numOptBuckets]string{"totalTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"}

// NewProjector returns a projector writing NDJSON to w.
func NewProjector(w io.Writer) *Projector {
	return &Projector{w: w, steps: make(map[stepKey]*stepUsage)}
}

// Session writes the first line, `{"type":"session","sessionId","cwd"}`.
func (p *Projector) Session(sessionID, cwd string) error {
	return p.emit(object{{"type", TypeSession}, {"sessionId", sessionID}, {"cwd", cwd}}, true)
}

// Final writes the last line, `{"type":"final","text"}`. It is deliberately
// unbounded: it carries the same lossless answer the default mode prints.
func (p *Projector) Final(text string) error {
	return p.emit(object{{"type", TypeFinal}, {"text", text}}, false)
}

// Error writes `{"type":"error","message"}` for a failure outside a turn
// (usage errors included). The message is bounded like every other event.
func (p *Projector) Error(msg string) error {
	return p.emit(object{{"type", TypeError}, {"message", msg}}, true)
}

// Event projects one committed session event. Event types outside the
// vocabulary (user/message echoes, attempts, titles, request headers,
// subagent and permission records, …) write nothing. A payload that does not
// decode is reported as an error and writes nothing; the caller decides
// whether that ends the run.
func (p *Projector) Event(ev event.Event) error {
	switch ev.Type {
	case event.TypeTurnStart:
		d, err := event.Decode[event.TurnStart](ev)
		if err != nil {
			return err
		}
		return p.emit(object{{"type", TypeStatus}, {"phase", PhaseTurnStart}, {"turn", int64(d.Turn)}}, true)
	case event.TypeStepStart:
		d, err := event.Decode[event.Step](ev)
		if err != nil {
			return err
		}
		p.mu.Lock()
		// A step that starts again (resume after a crash) starts counting
		// afresh.
		delete(p.steps, stepKey{d.Turn, d.Step})
		p.mu.Unlock()
		return p.emit(object{{"type", TypeStatus}, {"phase", PhaseStepStart}, {"turn", int64(d.Turn)}, {"step", int64(d.Step)}}, true)
	case event.TypeStepEnd:
		return p.stepEnd(ev)
	case event.TypeTurnEnd:
		return p.turnEnd(ev)
	case event.TypeAssistantAttempt:
		// Attempts are never projected as content (a discarded attempt must
		// leave no trace), but their usage counts toward the step.
		d, err := event.Decode[event.AssistantAttempt](ev)
		if err != nil {
			return err
		}
		p.addUsage(stepKey{d.Turn, d.Step}, d.Usage)
		return nil
	case event.TypeAssistantMessage:
		return p.assistantMessage(ev)
	case event.TypeToolCall:
		d, err := event.Decode[event.ToolCall](ev)
		if err != nil {
			return err
		}
		return p.emit(object{{"type", TypeToolCall}, {"callId", d.CallID}, {"tool", d.Name}, {"input", toolInput(d.Arguments)}}, true)
	case event.TypeToolResult:
		return p.toolResult(ev)
	}
	return nil
}

// stepEnd projects a step/end with the usage the step's model calls
// reported.
func (p *Projector) stepEnd(ev event.Event) error {
	d, err := event.Decode[event.Step](ev)
	if err != nil {
		return err
	}
	k := stepKey{d.Turn, d.Step}
	p.mu.Lock()
	su := p.steps[k]
	delete(p.steps, k)
	p.mu.Unlock()
	o := object{{"type", TypeStatus}, {"phase", PhaseStepEnd}, {"turn", int64(d.Turn)}, {"step", int64(d.Step)}}
	if u := su.object(); u != nil {
		o = append(o, member{"usage", u})
	}
	return p.emit(o, true)
}

// turnEnd projects a turn/end. The reason is projected as recorded, so it
// is parsed from the raw payload rather than re-marshalled from a struct
// that might drop fields a newer writer added.
func (p *Projector) turnEnd(ev event.Event) error {
	var d struct {
		Turn   int             `json:"turn"`
		Reason json.RawMessage `json:"reason"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return fmt.Errorf("decode %s event (seq %d): %w", ev.Type, ev.Seq, err)
	}
	var reason any
	if len(d.Reason) > 0 {
		r, err := parseJSON(string(d.Reason), false)
		if err != nil {
			return fmt.Errorf("decode %s event (seq %d): reason: %w", ev.Type, ev.Seq, err)
		}
		reason = r
	}
	p.mu.Lock()
	for k := range p.steps {
		if k.turn == d.Turn {
			delete(p.steps, k)
		}
	}
	p.mu.Unlock()
	return p.emit(object{{"type", TypeStatus}, {"phase", PhaseTurnEnd}, {"turn", int64(d.Turn)}, {"reason", reason}}, true)
}

// assistantMessage projects a committed message's text and reasoning
// blocks and counts its usage.
func (p *Projector) assistantMessage(ev event.Event) error {
	d, err := event.Decode[event.AssistantMessage](ev)
	if err != nil {
		return err
	}
	p.addUsage(stepKey{d.Turn, d.Step}, d.Usage)
	if !ev.IsAppend() {
		// A compaction replacement is history, not new output.
		return nil
	}
	for _, b := range d.Message.Content {
		var typ string
		switch b.Type {
		case event.BlockText:
			typ = TypeText
		case event.BlockReasoning:
			typ = TypeThinking
		default:
			continue // tool-call blocks belong to tool/call events
		}
		// An empty block carries nothing a supervisor could use and
		// providers emit them as stream artefacts (an empty leading
		// reasoning string), so only non-empty blocks are projected.
		if b.Text == "" {
			continue
		}
		if err := p.emit(object{{"type", typ}, {"text", b.Text}}, true); err != nil {
			return err
		}
	}
	return nil
}

// toolResult projects a tool/result.
func (p *Projector) toolResult(ev event.Event) error {
	if !ev.IsAppend() {
		// Projecting a replacement would emit a call id with no matching
		// tool_call.
		return nil
	}
	d, err := event.Decode[event.ToolResult](ev)
	if err != nil {
		return err
	}
	b := d.Result()
	status := "completed"
	if b.IsError || d.Error != nil {
		status = "error"
	}
	callID := b.ToolCallID
	if callID == "" {
		callID = d.Message.Source.CallID
	}
	return p.emit(object{{"type", TypeToolResult}, {"callId", callID}, {"status", status}, {"result", event.JoinText(b.Content)}}, true)
}

// toolInput is the projected tool input: the parsed arguments. An empty
// argument string is {} (what the executor runs with); text that is not
// exactly one JSON value, or holds a number JSON cannot round-trip, is kept
// as the raw string so nothing is silently turned into null.
func toolInput(args string) any {
	if args == "" {
		return object{}
	}
	v, err := parseJSON(args, true)
	if err != nil {
		return args
	}
	return v
}

func (p *Projector) addUsage(k stepKey, u *event.Usage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	su := p.steps[k]
	if su == nil {
		su = &stepUsage{}
		p.steps[k] = su
	}
	su.samples++
	if u == nil {
		su.missing = true
		return
	}
	su.input += u.InputTokens
	su.output += u.OutputTokens
	for i, b := range [numOptBuckets]*int64{u.TotalTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens} {
		if b != nil {
			su.opt[i] += *b
			su.optSeen[i]++
		}
	}
}

// object is the usage field of step_end, or nil when the step has no
// complete usage (no sample at all, or one attempt without a sample).
func (su *stepUsage) object() object {
	if su == nil || su.samples == 0 || su.missing {
		return nil
	}
	o := object{{"inputTokens", su.input}, {"outputTokens", su.output}}
	for i := range numOptBuckets {
		if su.optSeen[i] == su.samples {
			o = append(o, member{optNames[i], su.opt[i]})
		}
	}
	return o
}

// emit writes one event line with a single Write. Bounded events get the
// string/key/depth bounds and then the line bound: an over-long line keeps
// only its top-level scalar fields, and at the extreme only its type.
func (p *Projector) emit(o object, bounded bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bounded {
		p.buf = boundLine(p.buf[:0], o)
	} else {
		p.buf = append(appendJSON(p.buf[:0], o), '\n')
	}
	_, err := p.w.Write(p.buf)
	if cap(p.buf) > 4*MaxLineBytes {
		p.buf = nil // do not pin a 1 MB final answer
	}
	if err != nil {
		return fmt.Errorf("write %s event: %w", o[0].val, err)
	}
	return nil
}

// boundLine appends the bounded serialization of event o (type first) and
// the newline to dst.
func boundLine(dst []byte, o object) []byte {
	v, cut := bound(o, 0)
	b := v.(object)
	if cut {
		b = append(b, member{"truncated", true})
	}
	line := append(appendJSON(dst, b), '\n')
	if len(line) <= MaxLineBytes {
		return line
	}
	scalars := make(object, 0, len(b)+1)
	for _, m := range b {
		switch m.val.(type) {
		case object, []any, tooDeep:
		default:
			if m.key != "truncated" {
				scalars = append(scalars, m)
			}
		}
	}
	scalars = append(scalars, member{"truncated", true})
	line = append(appendJSON(dst, scalars), '\n')
	if len(line) <= MaxLineBytes {
		return line
	}
	return append(appendJSON(dst, object{b[0], {"truncated", true}}), '\n')
}
