package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
)

// The scripted provider replays model steps from a JSON file, so hosts can
// test their integration offline and our own tests run without a network.
// It goes through the same loop as a network model and streams deltas the
// same way. The format is documented in SCRIPT.md (linked from README);
// in short:
//
//	{
//	  "repeat": "error",                // when the steps run out: error | last | cycle
//	  "delayMs": 0,                     // default wait before the first delta
//	  "deltaDelayMs": 0,                // default wait between deltas
//	  "chunkRunes": 0,                  // default delta size in runes (0 = whole strings)
//	  "contextWindow": 1000000,         // Caps().ContextWindow
//	  "steps": [                        // the default conversation
//	    {"reasoning": "…", "text": "…"},
//	    {"toolCalls": [{"name": "bash", "arguments": {"command": "ls"}}]},
//	    {"errors": [{"class": "RATE_LIMIT", "status": 429, "retryAfterMs": 100}],
//	     "text": "ok after one retry", "usage": {"inputTokens": 10, "outputTokens": 3}}
//	  ],
//	  "conversations": [                // optional, chosen by the first user message
//	    {"match": "deploy", "repeat": "last", "steps": [{"text": "…"}]}
//	  ]
//	}
//
// A bare JSON array is shorthand for {"steps": [...]}.
//
// The provider is stateless: the step for a request is chosen by how many
// assistant messages req.Messages already holds (each committed step adds
// one), and an injected failure by req.Attempt. So one script serves any
// number of concurrent sessions, resumed sessions replay from where their
// log stands, and a retried step fails exactly as often as the script says.

// Script is a parsed script file. Its JSON form is documented in SCRIPT.md.
type Script struct {
	Repeat        string `json:"repeat,omitempty"`
	DelayMs       int    `json:"delayMs,omitempty"`
	DeltaDelayMs  int    `json:"deltaDelayMs,omitempty"`
	ChunkRunes    int    `json:"chunkRunes,omitempty"`
	ContextWindow int64  `json:"contextWindow,omitempty"`
	// Summary is how the script answers a compaction's summary call
	// (Request.Summary); such a call never consumes a step. Omitted, the
	// summary is a generated line.
	Summary       *ScriptStep          `json:"summary,omitempty"`
	Steps         []ScriptStep         `json:"steps,omitempty"`
	Conversations []ScriptConversation `json:"conversations,omitempty"`
}

// ScriptConversation is a group of steps for the sessions whose first user
// message contains Match. The first matching group wins.
type ScriptConversation struct {
	Match  string       `json:"match"`
	Repeat string       `json:"repeat,omitempty"` // default: the script's
	Steps  []ScriptStep `json:"steps"`
}

// ScriptStep is one model call: what the model "says" and how.
type ScriptStep struct {
	Reasoning string           `json:"reasoning,omitempty"`
	Text      string           `json:"text,omitempty"`
	ToolCalls []ScriptToolCall `json:"toolCalls,omitempty"`
	// FinishReason defaults to tool_calls when there are tool calls, else
	// stop. insufficient_system_resource fails the attempt as the HTTP
	// client does.
	FinishReason string       `json:"finishReason,omitempty"`
	Usage        *ScriptUsage `json:"usage,omitempty"`
	// Errors[i] fails attempt i of this step (req.Attempt); attempts past
	// the list succeed.
	Errors       []ScriptError `json:"errors,omitempty"`
	DelayMs      *int          `json:"delayMs,omitempty"`
	DeltaDelayMs *int          `json:"deltaDelayMs,omitempty"`
	ChunkRunes   *int          `json:"chunkRunes,omitempty"`
}

// ScriptToolCall is a tool call. Arguments is a JSON object (sent compacted)
// or a JSON string sent verbatim, which may be invalid JSON on purpose.
type ScriptToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ScriptUsage is the usage a step reports. Omitted, it is estimated at four
// bytes per token.
type ScriptUsage struct {
	InputTokens     int64  `json:"inputTokens"`
	OutputTokens    int64  `json:"outputTokens"`
	CacheReadTokens *int64 `json:"cacheReadTokens,omitempty"`
	ReasoningTokens *int64 `json:"reasoningTokens,omitempty"`
}

// ScriptError is an injected failure.
type ScriptError struct {
	Class        Class  `json:"class"`
	Status       int    `json:"status,omitempty"`
	Message      string `json:"message,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	// MidStream streams the step's deltas first, then fails, so a test can
	// see partial output being dropped.
	MidStream bool `json:"midStream,omitempty"`
}

// Repeat policies.
const (
	RepeatError = "error"
	RepeatLast  = "last"
	RepeatCycle = "cycle"
)

var knownClasses = []Class{ClassAuth, ClassQuota, ClassRateLimit, ClassInvalid, ClassContextWindow,
	ClassServer, ClassOverloaded, ClassTransport, ClassTimeout, ClassStreamClosed, ClassMalformed,
	ClassEmpty, ClassMissingCredential, ClassAborted, ClassScript}

var knownFinish = []string{"stop", "tool_calls", "length", "content_filter", "insufficient_system_resource"}

// LoadScript reads and validates a script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return s, nil
}

// ParseScript parses and validates a script. Unknown fields are errors, so
// a typo does not silently change what the model "says".
func ParseScript(data []byte) (*Script, error) {
	data = bytes.TrimSpace(data)
	var s Script
	if len(data) > 0 && data[0] == '[' {
		if err := decodeStrict(data, &s.Steps); err != nil {
			return nil, err
		}
	} else if err := decodeStrict(data, &s); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a valid script: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("not a valid script: trailing data after the JSON value")
	}
	return nil
}

// Validate checks a script built in code or parsed from a file.
func (s *Script) Validate() error {
	if len(s.Steps) == 0 && len(s.Conversations) == 0 {
		return errors.New("the script has no steps")
	}
	if err := validRepeat(s.Repeat, "repeat"); err != nil {
		return err
	}
	if s.DelayMs < 0 || s.DeltaDelayMs < 0 || s.ChunkRunes < 0 || s.ContextWindow < 0 {
		return errors.New("delayMs, deltaDelayMs, chunkRunes and contextWindow must not be negative")
	}
	if s.Summary != nil {
		if err := validSteps([]ScriptStep{*s.Summary}, "summary"); err != nil {
			return err
		}
	}
	if err := validSteps(s.Steps, "steps"); err != nil {
		return err
	}
	for i, c := range s.Conversations {
		where := fmt.Sprintf("conversations[%d]", i)
		if c.Match == "" {
			return fmt.Errorf("%s: match must not be empty (put catch-all steps in the top-level \"steps\")", where)
		}
		if len(c.Steps) == 0 {
			return fmt.Errorf("%s: no steps", where)
		}
		if err := validRepeat(c.Repeat, where+".repeat"); err != nil {
			return err
		}
		if err := validSteps(c.Steps, where+".steps"); err != nil {
			return err
		}
	}
	return nil
}

func validRepeat(r, where string) error {
	switch r {
	case "", RepeatError, RepeatLast, RepeatCycle:
		return nil
	}
	return fmt.Errorf("%s: %q is not one of error, last, cycle", where, r)
}

func validSteps(steps []ScriptStep, where string) error {
	for i := range steps {
		st := &steps[i]
		at := fmt.Sprintf("%s[%d]", where, i)
		if st.FinishReason != "" && !slices.Contains(knownFinish, st.FinishReason) {
			return fmt.Errorf("%s.finishReason: %q is not one of %s", at, st.FinishReason, strings.Join(knownFinish, ", "))
		}
		for _, p := range []*int{st.DelayMs, st.DeltaDelayMs, st.ChunkRunes} {
			if p != nil && *p < 0 {
				return fmt.Errorf("%s: delays and chunkRunes must not be negative", at)
			}
		}
		for j, tc := range st.ToolCalls {
			if tc.Name == "" {
				return fmt.Errorf("%s.toolCalls[%d]: name is required", at, j)
			}
			if _, err := scriptArgs(tc.Arguments); err != nil {
				return fmt.Errorf("%s.toolCalls[%d].arguments: %w", at, j, err)
			}
		}
		for j, e := range st.Errors {
			if !slices.Contains(knownClasses, e.Class) {
				return fmt.Errorf("%s.errors[%d].class: %q is not a known error class", at, j, e.Class)
			}
			if e.RetryAfterMs < 0 || e.Status < 0 {
				return fmt.Errorf("%s.errors[%d]: status and retryAfterMs must not be negative", at, j)
			}
		}
	}
	return nil
}

// scriptArgs turns the arguments of a scripted call into the raw argument
// string: a JSON string verbatim, an object compacted, nothing as "{}".
func scriptArgs(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case '{':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return "", errors.New("must be a JSON object or a string")
}

// scripted is the Provider over a Script.
type scripted struct {
	s *Script
}

// NewScripted returns a provider that replays s. s must not be modified
// afterwards; it is shared by every concurrent call.
func NewScripted(s *Script) Provider { return &scripted{s: s} }

// Name implements Provider.
func (p *scripted) Name() string { return ProviderScripted }

// scriptedEfforts is every effort any real provider takes.
var scriptedEfforts = []string{"off", "low", "medium", "high", "max"}

// Caps implements Provider. A script accepts everything a real model might,
// so the loop's own checks are what a test exercises.
func (p *scripted) Caps(string) Caps {
	cw := p.s.ContextWindow
	if cw == 0 {
		cw = 1_000_000
	}
	return Caps{
		Images:           true,
		Efforts:          scriptedEfforts,
		DefaultEffort:    "high",
		DefaultMaxTokens: DeepSeekDefaultMaxTokens,
		ContextWindow:    cw,
	}
}

// pick finds the steps and repeat policy for req.
func (p *scripted) pick(req *Request) ([]ScriptStep, string, string, error) {
	first := ""
	for _, m := range req.Messages {
		if m.Role == "user" && !IsContext(m) && m.Kind != KindContext && m.Kind != KindNote && m.Kind != KindSummary {
			first = m.Content
			break
		}
	}
	for _, c := range p.s.Conversations {
		if strings.Contains(first, c.Match) {
			rep := c.Repeat
			if rep == "" {
				rep = p.s.Repeat
			}
			return c.Steps, rep, fmt.Sprintf("conversation %q", c.Match), nil
		}
	}
	if len(p.s.Steps) == 0 {
		return nil, "", "", &Error{Class: ClassScript, Message: fmt.Sprintf(
			"no script conversation matches the first user message %q and the script has no default steps", excerpt(first))}
	}
	return p.s.Steps, p.s.Repeat, "the script", nil
}

// Stream implements Provider.
func (p *scripted) Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, aborted(err)
	}
	if onDelta == nil {
		onDelta = func(Delta) {}
	}
	if err := p.fits(req); err != nil {
		return nil, err
	}
	n := stepsSoFar(req.Messages)
	if req.Summary || req.ToolChoice == "none" {
		return p.summary(ctx, req, n, onDelta)
	}
	steps, repeat, where, err := p.pick(req)
	if err != nil {
		return nil, err
	}
	idx := n
	if n >= len(steps) {
		switch repeat {
		case RepeatLast:
			idx = len(steps) - 1
		case RepeatCycle:
			idx = n % len(steps)
		default:
			return nil, &Error{Class: ClassScript, Message: fmt.Sprintf(
				"script exhausted: step %d requested but %s has %d step(s) (set \"repeat\" to \"last\" or \"cycle\" to reuse them)",
				n+1, where, len(steps))}
		}
	}
	st := &steps[idx]
	e := scriptEmitter{ctx: ctx, onDelta: onDelta,
		first: p.pickInt(st.DelayMs, p.s.DelayMs),
		gap:   p.pickInt(st.DeltaDelayMs, p.s.DeltaDelayMs),
		chunk: p.pickInt(st.ChunkRunes, p.s.ChunkRunes)}

	var inject *ScriptError
	if req.Attempt >= 0 && req.Attempt < len(st.Errors) {
		inject = &st.Errors[req.Attempt]
	}
	if inject != nil && !inject.MidStream {
		if err := e.wait(e.first); err != nil {
			return nil, err
		}
		return nil, injected(inject, n, req.Attempt)
	}

	resp := &Response{RequestID: fmt.Sprintf("scripted-%d-%d", n, req.Attempt)}
	if req.ReasoningEffort != "off" {
		resp.Reasoning = st.Reasoning
	}
	resp.Text = st.Text
	if err := e.emit(DeltaReasoning, 0, "", resp.Reasoning); err != nil {
		return nil, err
	}
	if err := e.emit(DeltaText, 0, "", resp.Text); err != nil {
		return nil, err
	}
	for i, tc := range st.ToolCalls {
		args, _ := scriptArgs(tc.Arguments) // validated at load
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i)
		}
		e.id = id
		if err := e.emit(DeltaToolCall, i, tc.Name, args); err != nil {
			return nil, err
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: tc.Name, Arguments: args})
	}
	if inject != nil {
		err := injected(inject, n, req.Attempt)
		if st.Usage != nil {
			// A mid-stream failure after the usage chunk: the attempt
			// still cost tokens, and the loop records them.
			err.Usage = scriptUsage(st.Usage, req, resp)
		}
		return nil, err
	}
	resp.FinishReason = st.FinishReason
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
	}
	if resp.FinishReason == "insufficient_system_resource" {
		return nil, &Error{Class: ClassOverloaded, RequestID: resp.RequestID,
			Message: "scripted: finish_reason insufficient_system_resource"}
	}
	resp.Usage = scriptUsage(st.Usage, req, resp)
	return resp, nil
}

// stepsMarker records, in a scripted summary, how many steps the summarised
// conversation had; a compacted history holds fewer assistant messages
// than steps were played, and the provider keeps no state of its own.
const stepsMarker = "<!-- scripted steps: %d -->"

// stepsSoFar counts the steps a history has played: the count in the
// latest summary, plus the assistant messages after it, plus the replies a
// trim note after it says were dropped.
func stepsSoFar(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		switch {
		case m.Kind == KindRetry:
			// A retry's extra messages: the retry plays the same step.
		case m.Role == "assistant":
			n++
		case m.Kind == KindNote:
			if i := strings.Index(m.Content, " ("); i >= 0 {
				var k int
				if _, err := fmt.Sscanf(m.Content[i:], " (%d of them your replies)", &k); err == nil {
					n += k
				}
			}
		case m.Kind == KindSummary:
			var k int
			if i := strings.LastIndex(m.Content, "<!-- scripted steps: "); i >= 0 {
				if _, err := fmt.Sscanf(m.Content[i:], stepsMarker, &k); err == nil {
					n = k
				}
			}
		}
	}
	return n
}

// fits refuses a request larger than the script's context window, as a
// real model would, counting four bytes a token.
func (p *scripted) fits(req *Request) error {
	window := p.Caps(req.Model).ContextWindow
	in := requestBytes(req)
	if tokens := int64((in + 3) / 4); tokens > window {
		return &Error{Class: ClassContextWindow, Status: 400, Message: fmt.Sprintf(
			"scripted: this model's maximum context length is %d tokens; the request has %d", window, tokens)}
	}
	return nil
}

// summary answers a compaction's summary call: the script's summary step,
// else a generated line, always ending with the steps marker.
func (p *scripted) summary(ctx context.Context, req *Request, n int, onDelta func(Delta)) (*Response, error) {
	st := p.s.Summary
	if st == nil {
		st = &ScriptStep{}
	}
	e := scriptEmitter{ctx: ctx, onDelta: onDelta,
		first: p.pickInt(st.DelayMs, p.s.DelayMs),
		gap:   p.pickInt(st.DeltaDelayMs, p.s.DeltaDelayMs),
		chunk: p.pickInt(st.ChunkRunes, p.s.ChunkRunes)}
	if req.Attempt >= 0 && req.Attempt < len(st.Errors) {
		if err := e.wait(e.first); err != nil {
			return nil, err
		}
		return nil, injected(&st.Errors[req.Attempt], n, req.Attempt)
	}
	text := st.Text
	if text == "" {
		text = fmt.Sprintf("Scripted summary of a conversation of %d messages and %d steps.", len(req.Messages)-2, n)
	}
	text += "\n" + fmt.Sprintf(stepsMarker, n)
	if err := e.emit(DeltaText, 0, "", text); err != nil {
		return nil, err
	}
	resp := &Response{Text: text, FinishReason: "stop", RequestID: fmt.Sprintf("scripted-summary-%d-%d", n, req.Attempt)}
	resp.Usage = scriptUsage(st.Usage, req, resp)
	return resp, nil
}

func (p *scripted) pickInt(step *int, def int) int {
	if step != nil {
		return *step
	}
	return def
}

func injected(e *ScriptError, step, attempt int) *Error {
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("scripted %s failure (step %d, attempt %d)", e.Class, step+1, attempt)
	}
	return &Error{Class: e.Class, Status: e.Status, Message: msg,
		RetryAfter: time.Duration(e.RetryAfterMs) * time.Millisecond}
}

// scriptEmitter streams deltas with the script's pacing, honouring ctx.
type scriptEmitter struct {
	ctx     context.Context
	onDelta func(Delta)
	first   int // ms before the first delta
	gap     int // ms between deltas
	chunk   int // runes per delta, 0 = whole
	started bool
	id      string // call id of the tool call being emitted
}

func (e *scriptEmitter) wait(ms int) error {
	if ms <= 0 {
		if err := e.ctx.Err(); err != nil {
			return aborted(err)
		}
		return nil
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-e.ctx.Done():
		return aborted(e.ctx.Err())
	case <-t.C:
		return nil
	}
}

// emit sends text as one or more deltas. A tool call always sends at least
// one delta (carrying its name), even with empty arguments.
func (e *scriptEmitter) emit(kind DeltaKind, index int, name, text string) error {
	if text == "" && kind != DeltaToolCall {
		return nil
	}
	for first := true; first || text != ""; first = false {
		piece := text
		if e.chunk > 0 {
			cut, runes := 0, 0
			for cut < len(text) && runes < e.chunk {
				_, size := utf8.DecodeRuneInString(text[cut:])
				cut += size
				runes++
			}
			piece = text[:cut]
		}
		text = text[len(piece):]
		ms := e.gap
		if !e.started {
			ms = e.first
		}
		if err := e.wait(ms); err != nil {
			return err
		}
		e.started = true
		d := Delta{Kind: kind, Index: index, Text: piece}
		if kind == DeltaToolCall {
			d.ID = e.id
		}
		if first {
			d.Name = name
		}
		e.onDelta(d)
	}
	return nil
}

// scriptUsage is the step's declared usage, or an estimate at four bytes a
// token (the same fallback the loop uses when a server sends none).
func scriptUsage(u *ScriptUsage, req *Request, resp *Response) *event.Usage {
	if u != nil {
		out := &event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
		total := u.InputTokens + u.OutputTokens
		if u.CacheReadTokens != nil {
			c := *u.CacheReadTokens
			out.CacheReadTokens = &c
			total += c
		}
		if u.ReasoningTokens != nil {
			r := *u.ReasoningTokens
			out.ReasoningTokens = &r
		}
		out.TotalTokens = &total
		return out
	}
	in := requestBytes(req)
	outB := len(resp.Reasoning) + len(resp.Text)
	for _, tc := range resp.ToolCalls {
		outB += len(tc.Name) + len(tc.Arguments)
	}
	it, ot := int64((in+3)/4), int64((outB+3)/4)
	total := it + ot
	out := &event.Usage{InputTokens: it, OutputTokens: ot, TotalTokens: &total}
	if resp.Reasoning != "" {
		r := int64((len(resp.Reasoning) + 3) / 4)
		out.ReasoningTokens = &r
	}
	return out
}

// requestBytes is the size of a request's text, for the four-bytes-a-token
// estimates.
func requestBytes(req *Request) int {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content) + len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			in += len(tc.Name) + len(tc.Arguments)
		}
		in += len(m.Images) * 6000
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return in
}
