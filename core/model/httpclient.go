package model

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// httpProvider streams POST {base}/chat/completions for the DeepSeek API and
// for OpenAI-compatible endpoints. It never retries: the loop does, because
// every attempt must be recorded in the session log.
type httpProvider struct {
	name      string
	dialect   dialect
	endpoint  string
	key       string
	hc        *http.Client
	transport *http.Transport
	firstData time.Duration
	stall     time.Duration
	maxLine   int
	// webTools: DeepSeek's server-side web tools are declared, and the
	// replies' members dsh does not read are kept (serverFields).
	webTools bool
}

func newHTTPProvider(name string, d dialect, base string, opts Options) *httpProvider {
	// No http.Client.Timeout: it would bound the whole stream, and a long
	// answer is not a failure. The watchdogs in Stream bound silence instead.
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: responseHeaderTimeout,
	}
	p := &httpProvider{
		name:      name,
		dialect:   d,
		endpoint:  base + "/chat/completions",
		key:       opts.APIKey,
		hc:        &http.Client{Transport: tr},
		transport: tr,
		firstData: opts.FirstDataTimeout,
		stall:     opts.StallTimeout,
		maxLine:   opts.MaxLineBytes,
		webTools:  opts.WebTools && (d == dialectDeepSeek || opts.WebToolsAnyEndpoint),
	}
	if p.firstData <= 0 {
		p.firstData = DefaultFirstDataTimeout
	}
	if p.stall <= 0 {
		p.stall = DefaultStallTimeout
	}
	if p.maxLine <= 0 {
		p.maxLine = DefaultMaxLineBytes
	}
	return p
}

// Name implements Provider.
func (p *httpProvider) Name() string { return p.name }

// Caps implements Provider.
func (p *httpProvider) Caps(model string) Caps {
	if p.dialect == dialectDeepSeek {
		return deepseekCaps(model)
	}
	return openAICaps(model)
}

// CloseIdleConnections drops pooled connections; call it when the provider
// is no longer needed so no connection goroutines outlive it.
func (p *httpProvider) CloseIdleConnections() { p.transport.CloseIdleConnections() }

// plan resolves the thinking, effort and max_tokens settings of req.
func (p *httpProvider) plan(req *Request) (bodyPlan, error) {
	caps := p.Caps(req.Model)
	plan := bodyPlan{dialect: p.dialect, maxTokens: req.MaxTokens, webTools: p.webTools}
	if req.MaxTokens < 0 {
		return plan, invalidf("max tokens must not be negative (got %d)", req.MaxTokens)
	}
	effort := req.ReasoningEffort
	switch p.dialect {
	case dialectDeepSeek:
		if effort == "" {
			effort = caps.DefaultEffort
		}
		if !validEffort(caps, effort) {
			return plan, invalidf("%s: reasoning effort %q is not supported (use one of %s)",
				p.name, effort, strings.Join(caps.Efforts, ", "))
		}
		if plan.maxTokens == 0 {
			plan.maxTokens = caps.DefaultMaxTokens
		}
		if effort == "off" {
			plan.thinking = "disabled"
			plan.reasoningNever = true
		} else {
			plan.thinking = "enabled"
			plan.effort = deepseekEffort(effort)
			plan.reasoningAlways = true
		}
		if !caps.Images && slices.ContainsFunc(req.Messages, func(m Message) bool { return len(m.Images) > 0 }) {
			return plan, invalidf("%s: model %q does not accept image input", p.name, req.Model)
		}
	default:
		// Any effort but "off" passes through: OpenAI-compatible servers
		// differ in what they accept and say so clearly themselves.
		if effort != "off" {
			plan.effort = effort
		}
	}
	return plan, nil
}

// Stream implements Provider.
func (p *httpProvider) Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, aborted(err)
	}
	if onDelta == nil {
		onDelta = func(Delta) {}
	}
	plan, err := p.plan(req)
	if err != nil {
		return nil, err
	}
	body, err := encodeBody(req, plan)
	if err != nil {
		return nil, err
	}

	// reqCtx carries our watchdogs: the timer cancels it with a cause that
	// transportError recognises. Cancelling it closes the connection, which
	// unblocks the body read at once.
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var streaming atomic.Bool // set at the first data line
	watchdog := time.AfterFunc(p.firstData, func() {
		if streaming.Load() {
			cancel(errStall)
		} else {
			cancel(errFirstData)
		}
	})
	defer watchdog.Stop()

	hreq, err := http.NewRequestWithContext(reqCtx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Class: ClassInvalid, Err: err, Message: fmt.Sprintf("%s: building request: %v", p.name, err)}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set("Authorization", "Bearer "+p.key)

	resp, err := p.hc.Do(hreq)
	if err != nil {
		return nil, p.transportError(ctx, reqCtx, err, false)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil && ctx.Err() != nil {
			return nil, aborted(ctx.Err())
		}
		return nil, httpError(p.name, resp, data, p.key)
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// The server ignored "stream":true (or a proxy answered for it).
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if err := ctx.Err(); err != nil {
			return nil, aborted(err)
		}
		return nil, &Error{Class: ClassMalformed, Status: resp.StatusCode, RequestID: requestID(resp.Header),
			Message: fmt.Sprintf("%s: expected an event stream, got JSON: %s", p.name, redactedBodyMessage(data, p.key))}
	}
	s := streamState{
		p:       p,
		onDelta: onDelta,
		calls:   map[int]*callAcc{},
		resp:    &Response{RequestID: requestID(resp.Header)},
	}
	out, err := s.read(ctx, reqCtx, resp.Body, watchdog, &streaming)
	if err != nil {
		var me *Error
		if errors.As(err, &me) && me.Usage == nil {
			me.Usage = s.resp.Usage
		}
	}
	return out, err
}

// callAcc accumulates one streamed tool call.
type callAcc struct {
	id, name string
	args     strings.Builder
}

// streamState accumulates one streamed response.
type streamState struct {
	p       *httpProvider
	onDelta func(Delta)
	resp    *Response
	calls   map[int]*callAcc
	order   []int // call indexes in first-seen order
	last    int   // index of the last call touched, for servers that omit index
	reason  strings.Builder
	text    strings.Builder
	gotData bool
	// server collects the reply's unknown members (web tools on only).
	server serverFields
}

func (s *streamState) read(ctx, reqCtx context.Context, body io.Reader, watchdog *time.Timer, streaming *atomic.Bool) (*Response, error) {
	lr := newLineReader(body, s.p.maxLine)
	done := false
	for !done {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.p.transportError(ctx, reqCtx, err, s.gotData)
		}
		if len(line) == 0 {
			continue // event separator, or a blank keep-alive
		}
		if line[0] == ':' {
			// Keep-alive comment: the server is queueing us. It must not
			// re-arm the watchdog, or a stalled stream never times out.
			s.onDelta(Delta{Kind: DeltaKeepAlive})
			continue
		}
		name, value := sseField(line)
		if string(name) != "data" {
			continue // event:, id:, retry: carry nothing we use
		}
		if !s.gotData {
			s.gotData = true
			streaming.Store(true)
		}
		watchdog.Reset(s.p.stall)
		if string(value) == "[DONE]" {
			done = true
			break
		}
		if err := s.chunk(value); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, aborted(err)
	}
	if s.resp.FinishReason == "" {
		how := "ended"
		if done {
			how = "sent [DONE]"
		}
		return nil, &Error{Class: ClassStreamClosed, RequestID: s.resp.RequestID,
			Message: fmt.Sprintf("%s: the stream %s without a finish_reason (incomplete response)", s.p.name, how)}
	}
	s.resp.Reasoning = s.reason.String()
	s.resp.Text = s.text.String()
	s.resp.ServerFields = s.server.fields()
	for _, idx := range s.sortedIndexes() {
		acc := s.calls[idx]
		if acc.id == "" {
			acc.id = newCallID()
		}
		s.resp.ToolCalls = append(s.resp.ToolCalls, ToolCall{ID: acc.id, Name: acc.name, Arguments: acc.args.String()})
	}
	return s.resp, nil
}

func (s *streamState) sortedIndexes() []int {
	idx := slices.Clone(s.order)
	slices.Sort(idx)
	return idx
}

func (s *streamState) chunk(data []byte) error {
	var c wireChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return &Error{Class: ClassMalformed, Err: err, RequestID: s.resp.RequestID,
			Message: fmt.Sprintf("%s: a stream chunk is not JSON (%v): %s", s.p.name, err, excerpt(redact(string(data), s.p.key)))}
	}
	if c.Error != nil {
		return &Error{Class: ClassServer, RequestID: s.resp.RequestID,
			Message: fmt.Sprintf("%s: error in stream: %s", s.p.name, excerpt(redact(c.Error.Message, s.p.key)))}
	}
	if s.resp.RequestID == "" {
		s.resp.RequestID = c.ID
	}
	if c.Usage != nil {
		s.resp.Usage = convertUsage(c.Usage)
	}
	if s.p.webTools {
		if err := s.server.chunk(data); err != nil {
			return &Error{Class: ClassMalformed, Err: err, RequestID: s.resp.RequestID,
				Message: fmt.Sprintf("%s: a stream chunk's delta is not a JSON object (%v)", s.p.name, err)}
		}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n>1 is never requested; ignore stray choices
		}
		d := &ch.Delta
		r := d.ReasoningContent
		if r == nil {
			r = d.Reasoning
		}
		if r != nil && *r != "" {
			s.reason.WriteString(*r)
			s.onDelta(Delta{Kind: DeltaReasoning, Text: *r})
		}
		if d.Content != nil && *d.Content != "" {
			s.text.WriteString(*d.Content)
			s.onDelta(Delta{Kind: DeltaText, Text: *d.Content})
		}
		for j := range d.ToolCalls {
			s.toolCall(&d.ToolCalls[j])
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			fr := *ch.FinishReason
			if fr == "insufficient_system_resource" {
				return &Error{Class: ClassOverloaded, RequestID: s.resp.RequestID,
					Message: fmt.Sprintf("%s: the server ran out of resources mid-answer (finish_reason insufficient_system_resource)", s.p.name)}
			}
			s.resp.FinishReason = fr
		}
	}
	return nil
}

// toolCall merges one tool_calls delta. Calls are keyed by index; only the
// first fragment of a call carries its id and name.
func (s *streamState) toolCall(d *wireToolCallDelta) {
	idx := s.last
	switch {
	case d.Index != nil:
		idx = *d.Index
	case d.ID != "" && len(s.order) > 0:
		// No index (some compatible servers): a new id starts a new call.
		if acc := s.calls[s.last]; acc != nil && acc.id != "" && acc.id != d.ID {
			idx = s.order[len(s.order)-1] + 1
		}
	}
	s.last = idx
	acc := s.calls[idx]
	if acc == nil {
		acc = &callAcc{}
		s.calls[idx] = acc
		s.order = append(s.order, idx)
	}
	if acc.id == "" && d.ID != "" {
		acc.id = d.ID
	}
	if acc.name == "" && d.Function.Name != "" {
		acc.name = d.Function.Name
	}
	acc.args.WriteString(d.Function.Arguments)
	s.onDelta(Delta{Kind: DeltaToolCall, Index: idx, Name: d.Function.Name, Text: d.Function.Arguments, ID: acc.id})
}

func convertUsage(w *wireUsage) *event.Usage {
	hit := w.PromptCacheHitTokens
	if hit == nil && w.PromptTokensDetails != nil {
		hit = w.PromptTokensDetails.CachedTokens
	}
	u := &event.Usage{InputTokens: w.PromptTokens, OutputTokens: w.CompletionTokens}
	if hit != nil {
		h := *hit
		u.CacheReadTokens = &h
		u.InputTokens = max(w.PromptTokens-h, 0)
	}
	total := w.PromptTokens + w.CompletionTokens
	if w.TotalTokens != nil {
		total = *w.TotalTokens
	}
	u.TotalTokens = &total
	if w.CompletionTokensDetails != nil && w.CompletionTokensDetails.ReasoningTokens != nil {
		r := *w.CompletionTokensDetails.ReasoningTokens
		u.ReasoningTokens = &r
	}
	return u
}

// newCallID mints an id for a tool call the server left without one, so
// every call can be paired with its result.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
