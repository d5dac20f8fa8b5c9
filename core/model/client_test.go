package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-test-secret-0123456789"

// newClient returns a deepseek-official provider pointed at srv; it drops
// its idle connections when the test ends so goleak stays quiet.
func newClient(t *testing.T, srv *modeltest.Server, opts Options) *httpProvider {
	t.Helper()
	opts.BaseURL = srv.URL
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	p, err := New(ProviderDeepSeek, opts)
	if err != nil {
		t.Fatal(err)
	}
	hp := p.(*httpProvider)
	t.Cleanup(hp.CloseIdleConnections)
	return hp
}

func firstRequest() *Request {
	return &Request{
		Model: "deepseek-flash",
		Messages: []Message{
			{Role: "system", Content: "You are dsh."},
			{Role: "user", Content: "hello"},
		},
		Tools: []ToolSpec{{Name: "bash", Description: "run a command",
			Parameters: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
	}
}

type deltaLog struct {
	mu     sync.Mutex
	deltas []Delta
}

func (d *deltaLog) add(x Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deltas = append(d.deltas, x)
}

func (d *deltaLog) count(k DeltaKind) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, x := range d.deltas {
		if x.Kind == k {
			n++
		}
	}
	return n
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	return e
}

func TestReasoningThenText(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().
		Reasoning("Let me ").Reasoning("think.").
		Text("Hi ").Text("there.").
		Finish("stop").
		Usage(modeltest.Usage{PromptTokens: 100, CompletionTokens: 20, CacheHitTokens: 64, ReasoningTokens: 5}).
		Done().Reply())
	p := newClient(t, srv, Options{})
	var log deltaLog
	resp, err := p.Stream(context.Background(), firstRequest(), log.add)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "Let me think." || resp.Text != "Hi there." || resp.FinishReason != "stop" {
		t.Fatalf("resp = %+v", resp)
	}
	if len(resp.ToolCalls) != 0 {
		t.Fatalf("unexpected tool calls %+v", resp.ToolCalls)
	}
	u := resp.Usage
	if u == nil || u.InputTokens != 36 || u.OutputTokens != 20 || *u.CacheReadTokens != 64 ||
		*u.ReasoningTokens != 5 || *u.TotalTokens != 120 {
		t.Fatalf("usage = %+v", u)
	}
	if resp.RequestID != "chatcmpl-test" {
		t.Fatalf("request id %q", resp.RequestID)
	}
	want := []Delta{{Kind: DeltaReasoning, Text: "Let me "}, {Kind: DeltaReasoning, Text: "think."},
		{Kind: DeltaText, Text: "Hi "}, {Kind: DeltaText, Text: "there."}}
	if fmt.Sprint(log.deltas) != fmt.Sprint(want) {
		t.Fatalf("deltas = %+v", log.deltas)
	}
	req := srv.Last()
	if got := req.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Fatalf("auth header %q", got)
	}
	if req.Body.Thinking == nil || req.Body.Thinking.Type != "enabled" || req.Body.ReasoningEffort != "high" {
		t.Fatalf("thinking %+v effort %q", req.Body.Thinking, req.Body.ReasoningEffort)
	}
	if req.Body.MaxTokens == nil || *req.Body.MaxTokens != DeepSeekDefaultMaxTokens {
		t.Fatalf("max_tokens %v", req.Body.MaxTokens)
	}
	if len(req.Body.Tools) != 1 || req.Body.Tools[0].Function.Name != "bash" {
		t.Fatalf("tools %+v", req.Body.Tools)
	}
}

func TestParallelToolCallsManyChunks(t *testing.T) {
	args := []string{`{"command":"ls -la /tmp","description":"list"}`, `{"pattern":"**/*.go"}`, `{"file_path":"/a/b.txt"}`}
	s := modeltest.NewStream().Role().Reasoning("three calls")
	// First fragments carry id and name; then the arguments of all three
	// calls arrive interleaved, a few bytes at a time.
	names := []string{"bash", "glob", "read"}
	for i := range args {
		s.ToolCallFragment(i, fmt.Sprintf("call_%d", i), names[i], "")
	}
	parts := make([][]string, len(args))
	for i, a := range args {
		parts[i] = modeltest.Split(a, 12)
	}
	for k := range 12 {
		for i := range args {
			s.ToolCallFragment(i, "", "", parts[i][k])
		}
	}
	srv := modeltest.New(t)
	srv.Enqueue(s.Finish("tool_calls").Usage(modeltest.DefaultUsage).Done().Reply())
	p := newClient(t, srv, Options{})
	var log deltaLog
	resp, err := p.Stream(context.Background(), firstRequest(), log.add)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 3 {
		t.Fatalf("resp = %+v", resp)
	}
	for i, tc := range resp.ToolCalls {
		if tc.ID != fmt.Sprintf("call_%d", i) || tc.Name != names[i] || tc.Arguments != args[i] {
			t.Errorf("call %d = %+v", i, tc)
		}
	}
	if n := log.count(DeltaToolCall); n != 3+36 {
		t.Fatalf("%d tool-call deltas", n)
	}
	if d := log.deltas[1]; d.Kind != DeltaToolCall || d.Name != "bash" || d.Index != 0 {
		t.Fatalf("first tool delta %+v", d)
	}
}

func TestKeepAliveFloodThenData(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().KeepAlives(1000).Role().Text("finally").Finish("stop").Done().Reply())
	p := newClient(t, srv, Options{})
	var log deltaLog
	resp, err := p.Stream(context.Background(), firstRequest(), log.add)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "finally" {
		t.Fatalf("text %q", resp.Text)
	}
	if n := log.count(DeltaKeepAlive); n != 1000 {
		t.Fatalf("%d keep-alive deltas, want 1000", n)
	}
}

func TestStreamStallTimesOut(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Reasoning("thinking…").Stall().Reply())
	p := newClient(t, srv, Options{StallTimeout: 150 * time.Millisecond})
	start := time.Now()
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	e := asError(t, err)
	if e.Class != ClassTimeout || !e.Retryable() {
		t.Fatalf("err = %v", e)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("took %v", el)
	}
	if !strings.Contains(e.Message, "stalled") {
		t.Fatalf("message %q", e.Message)
	}
}

func TestKeepAlivesDoNotResetStall(t *testing.T) {
	srv := modeltest.New(t)
	// Data, then a keep-alive every 20 ms for 4 s: only data may re-arm
	// the 200 ms stall timer, so the call must time out early.
	srv.Enqueue(modeltest.NewStream().Role().Text("partial").KeepAlivesEvery(200, 20*time.Millisecond).Reply())
	p := newClient(t, srv, Options{StallTimeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	if e := asError(t, err); e.Class != ClassTimeout {
		t.Fatalf("err = %v", e)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("keep-alives re-armed the stall timer: took %v", el)
	}
}

func TestFirstDataDeadline(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().KeepAlivesEvery(200, 20*time.Millisecond).Reply())
	p := newClient(t, srv, Options{FirstDataTimeout: 200 * time.Millisecond, StallTimeout: time.Hour})
	start := time.Now()
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	e := asError(t, err)
	if e.Class != ClassTimeout || !strings.Contains(e.Message, "first-data") {
		t.Fatalf("err = %v", e)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %v", el)
	}
}

func TestStreamClosedWithoutFinish(t *testing.T) {
	for name, reply := range map[string]modeltest.Reply{
		"eof":  modeltest.NewStream().Role().Text("half an ans").Reply(),
		"done": modeltest.NewStream().Role().Text("half an ans").Done().Reply(),
	} {
		t.Run(name, func(t *testing.T) {
			srv := modeltest.New(t)
			srv.Enqueue(reply)
			p := newClient(t, srv, Options{})
			_, err := p.Stream(context.Background(), firstRequest(), nil)
			e := asError(t, err)
			if e.Class != ClassStreamClosed || !e.Retryable() {
				t.Fatalf("err = %v", e)
			}
		})
	}
}

func TestFinishWithoutDoneIsFine(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Text("ok").Finish("length").Reply())
	p := newClient(t, srv, Options{})
	resp, err := p.Stream(context.Background(), firstRequest(), nil)
	if err != nil || resp.FinishReason != "length" || resp.Usage != nil {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

func TestEmptyResponseIsReturned(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Finish("stop").Done().Reply())
	p := newClient(t, srv, Options{})
	resp, err := p.Stream(context.Background(), firstRequest(), nil)
	if err != nil || resp.Text != "" || resp.FinishReason != "stop" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

func TestInsufficientSystemResource(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Reasoning("hm").Finish("insufficient_system_resource").Done().Reply())
	p := newClient(t, srv, Options{})
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	e := asError(t, err)
	if e.Class != ClassOverloaded || !e.Retryable() {
		t.Fatalf("err = %v", e)
	}
}

func TestMalformedChunk(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Data(`{"choices":[{"delta":{"content":"x"`).Reply())
	p := newClient(t, srv, Options{})
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	e := asError(t, err)
	if e.Class != ClassMalformed || e.Retryable() {
		t.Fatalf("err = %v", e)
	}
}

func TestErrorInStream(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Data(`{"error":{"message":"upstream exploded"}}`).Reply())
	p := newClient(t, srv, Options{})
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	e := asError(t, err)
	if e.Class != ClassServer || !strings.Contains(e.Message, "upstream exploded") {
		t.Fatalf("err = %v", e)
	}
}

func TestHTTPErrors(t *testing.T) {
	cases := []struct {
		name      string
		reply     modeltest.Reply
		class     Class
		retryable bool
		retry     time.Duration
		inMessage string
	}{
		{"429 retry-after seconds", modeltest.ErrorReply(429, "Rate limit reached").WithHeader("Retry-After", "3"),
			ClassRateLimit, true, 3 * time.Second, "Rate limit reached"},
		{"429 retry-after-ms", modeltest.ErrorReply(429, "slow down").WithHeader("retry-after-ms", "1500"),
			ClassRateLimit, true, 1500 * time.Millisecond, "slow down"},
		{"429 no header", modeltest.ErrorReply(429, "busy"), ClassRateLimit, true, 0, "busy"},
		{"500", modeltest.ErrorReply(500, "internal error"), ClassServer, true, 0, "internal error"},
		{"503", modeltest.ErrorReply(503, "Server overloaded"), ClassServer, true, 0, "overloaded"},
		{"401", modeltest.ErrorReply(401, "Authentication Fails, Your api key: "+testKey+" is invalid"),
			ClassAuth, false, 0, "DEEPSEEK_API_KEY"},
		{"402", modeltest.ErrorReply(402, "Insufficient Balance"), ClassQuota, false, 0, "Insufficient Balance"},
		{"400", modeltest.ErrorReply(400, "The reasoning_content in the thinking mode must be passed back to the API."),
			ClassInvalid, false, 0, "reasoning_content"},
		{"422", modeltest.ErrorReply(422, "Invalid max_tokens"), ClassInvalid, false, 0, "max_tokens"},
		{"400 context", modeltest.ErrorReply(400, "This model's maximum context length is 1000000 tokens. However, you requested 1200000 tokens."),
			ClassContextWindow, false, 0, "maximum context length"},
		{"non-JSON body", modeltest.Reply{Status: 502, Body: []byte("<html>bad gateway</html>")},
			ClassServer, true, 0, "bad gateway"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := modeltest.New(t)
			srv.Enqueue(c.reply.WithHeader("x-request-id", "req-42"))
			p := newClient(t, srv, Options{})
			_, err := p.Stream(context.Background(), firstRequest(), nil)
			e := asError(t, err)
			if e.Class != c.class || e.Retryable() != c.retryable || e.RetryAfter != c.retry {
				t.Fatalf("err = %+v", e)
			}
			if e.Status != c.reply.Status || e.RequestID != "req-42" {
				t.Fatalf("status %d request id %q", e.Status, e.RequestID)
			}
			if !strings.Contains(e.Message, c.inMessage) {
				t.Fatalf("message %q lacks %q", e.Message, c.inMessage)
			}
			if strings.Contains(e.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v", e), testKey) {
				t.Fatalf("the API key leaked: %q", e.Error())
			}
			if srv.Count() != 1 {
				t.Fatalf("the client retried: %d requests", srv.Count())
			}
		})
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(20 * time.Second).Format(http.TimeFormat)}}, 20 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{}, 0},
	} {
		if got := retryAfter(c.h, now); got != c.want {
			t.Errorf("%v: got %v want %v", c.h, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for attempt, base := range map[int]time.Duration{0: 500 * time.Millisecond, 1: 500 * time.Millisecond,
		2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second, 5: 8 * time.Second, 6: 16 * time.Second, 7: 30 * time.Second,
		100: 30 * time.Second} {
		for range 50 {
			d := Backoff(attempt, 0)
			if d < base*9/10 || d > base*11/10 {
				t.Fatalf("Backoff(%d) = %v, want %v ±10%%", attempt, d, base)
			}
		}
	}
	if d := Backoff(1, 3*time.Second); d != 3*time.Second {
		t.Fatalf("retry-after not honoured: %v", d)
	}
	if d := Backoff(1, time.Hour); d != time.Minute {
		t.Fatalf("retry-after not capped: %v", d)
	}
}

func TestHugeToolArgumentLine(t *testing.T) {
	big := modeltest.BigArgs(10 << 20)
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().ToolCall(0, "call_big", "write", big, 1).
		Finish("tool_calls").Done().Reply())
	p := newClient(t, srv, Options{})
	resp, err := p.Stream(context.Background(), firstRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != big {
		t.Fatalf("arguments of %d bytes lost", len(big))
	}
}

func TestLineCap(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().ToolCall(0, "c", "write", modeltest.BigArgs(256<<10), 1).
		Finish("tool_calls").Done().Reply())
	p := newClient(t, srv, Options{MaxLineBytes: 64 << 10})
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	if e := asError(t, err); e.Class != ClassMalformed || !strings.Contains(e.Message, "too long") {
		t.Fatalf("err = %v", e)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Reasoning("thinking hard").Stall().Reply())
	p := newClient(t, srv, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	var once sync.Once
	_, err := p.Stream(ctx, firstRequest(), func(d Delta) {
		once.Do(func() { cancelled = time.Now(); cancel() })
	})
	el := time.Since(cancelled)
	e := asError(t, err)
	if e.Class != ClassAborted || !errors.Is(err, context.Canceled) || e.Retryable() {
		t.Fatalf("err = %v", e)
	}
	if el > 100*time.Millisecond {
		t.Fatalf("returned %v after cancel, want < 100ms", el)
	}
	select {
	case <-srv.Last().Disconnected():
	case <-time.After(2 * time.Second):
		t.Fatal("the server never saw the request closed")
	}
}

func TestCancelBeforeHeaders(t *testing.T) {
	gate := make(chan struct{})
	srv := modeltest.New(t)
	srv.Handle(func(*modeltest.Request) modeltest.Reply {
		<-gate // hold the response headers back
		return modeltest.TextReply("late")
	})
	p := newClient(t, srv, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := p.Stream(ctx, firstRequest(), nil)
	close(gate)
	if e := asError(t, err); e.Class != ClassAborted {
		t.Fatalf("err = %v", e)
	}
}

func TestTransportError(t *testing.T) {
	srv := modeltest.New(t)
	url := srv.URL
	srv.Close()
	p, err := New(ProviderDeepSeek, Options{BaseURL: url, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(*httpProvider).CloseIdleConnections()
	_, err = p.Stream(context.Background(), firstRequest(), nil)
	if e := asError(t, err); e.Class != ClassTransport || !e.Retryable() || strings.Contains(e.Error(), testKey) {
		t.Fatalf("err = %v", e)
	}
}

// TestConversationPassesChecks drives a three-request conversation the way
// the loop does and lets the fake server's invariant checks judge it.
func TestConversationPassesChecks(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(
		modeltest.ToolCallsReply("look first", modeltest.Call{ID: "call_a", Name: "bash", Args: `{"command":"ls"}`, Fragments: 3},
			modeltest.Call{ID: "call_b", Name: "bash", Args: `{"command":"pwd"}`}),
		modeltest.ErrorReply(500, "try again"),
		modeltest.TextReply("done"), // no reasoning: replayed with ""
		modeltest.ReasoningReply("second turn", "bye"),
	)
	p := newClient(t, srv, Options{})
	req := firstRequest()
	ctx := context.Background()
	resp, err := p.Stream(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, Message{Role: "assistant", Reasoning: resp.Reasoning, Content: resp.Text, ToolCalls: resp.ToolCalls})
	for _, tc := range resp.ToolCalls {
		req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: tc.ID, Content: "output of " + tc.Arguments})
	}
	// The step fails once; its retry is an identical request: allowed.
	if _, err := p.Stream(ctx, req, nil); asError(t, err).Class != ClassServer {
		t.Fatalf("err = %v", err)
	}
	resp, err = p.Stream(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, Message{Role: "assistant", Reasoning: resp.Reasoning, Content: resp.Text},
		Message{Role: "user", Content: "thanks"})
	if _, err := p.Stream(ctx, req, nil); err != nil {
		t.Fatal(err)
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
	last := srv.Last()
	if last.Body.Messages[2].ReasoningContent == nil || *last.Body.Messages[2].ReasoningContent != "look first" {
		t.Fatal("reasoning not replayed")
	}
	if rc := last.Body.Messages[5].ReasoningContent; rc == nil || *rc != "" {
		t.Fatalf("empty reasoning not replayed as \"\": %v", rc)
	}
}

func TestEffortAndMaxTokens(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithoutChecks(modeltest.CheckPrefix))
	srv.Handle(func(*modeltest.Request) modeltest.Reply { return modeltest.TextReply("ok") })
	p := newClient(t, srv, Options{})
	req := firstRequest()
	req.ReasoningEffort = "off"
	req.MaxTokens = 1234
	req.Messages = append(req.Messages, Message{Role: "assistant", Content: "earlier", Reasoning: "dropped"},
		Message{Role: "user", Content: "again"})
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Last()
	if got.Body.Thinking == nil || got.Body.Thinking.Type != "disabled" || got.Body.ReasoningEffort != "" ||
		*got.Body.MaxTokens != 1234 || got.Body.Messages[2].ReasoningContent != nil {
		t.Fatalf("body %s", got.Raw)
	}
	req.ReasoningEffort = "max"
	req.Messages = req.Messages[:2]
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if got := srv.Last(); got.Body.ReasoningEffort != "max" || got.Body.Thinking.Type != "enabled" {
		t.Fatalf("body %s", got.Raw)
	}
	// The names DeepSeek maps are accepted and sent as it maps them.
	for name, sent := range map[string]string{"minimal": "low", "low": "low", "medium": "high", "xhigh": "high", "ultra": "max"} {
		req.ReasoningEffort = name
		if _, err := p.Stream(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		if got := srv.Last(); got.Body.ReasoningEffort != sent || got.Body.Thinking.Type != "enabled" {
			t.Fatalf("%s: body %s", name, got.Raw)
		}
	}
	req.ReasoningEffort = "extreme"
	_, err := p.Stream(context.Background(), req, nil)
	if e := asError(t, err); e.Class != ClassInvalid || !strings.Contains(e.Message, "off, minimal, low, medium, high, xhigh, max, ultra") {
		t.Fatalf("err = %v", e)
	}
}

func TestOpenAICompatible(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithoutChecks(modeltest.CheckReasoning, modeltest.CheckPrefix))
	srv.Handle(func(*modeltest.Request) modeltest.Reply {
		return modeltest.NewStream().Role().Data(`{"choices":[{"index":0,"delta":{"reasoning":"via reasoning field"}}]}`).
			Text("ok").Finish("stop").
			Data(`{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":40}}}`).
			Done().Reply()
	})
	p, err := New(ProviderOpenAI, Options{BaseURL: srv.URL + "/v1/", APIKey: "ollama"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(*httpProvider).CloseIdleConnections()
	req := firstRequest()
	req.Model = "qwen3-coder"
	req.Messages = append(req.Messages,
		Message{Role: "assistant", Content: "a", Reasoning: "had some"},
		Message{Role: "user", Content: "b"},
		Message{Role: "assistant", Content: "c"},
		Message{Role: "user", Content: "d"})
	resp, err := p.Stream(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "via reasoning field" || resp.Usage.InputTokens != 10 || *resp.Usage.CacheReadTokens != 40 {
		t.Fatalf("resp %+v usage %+v", resp, resp.Usage)
	}
	got := srv.Last()
	if got.Path != "/v1/chat/completions" || got.Body.Thinking != nil || got.Body.ReasoningEffort != "" || got.Body.MaxTokens != nil {
		t.Fatalf("body %s", got.Raw)
	}
	if got.Body.Messages[2].ReasoningContent == nil || got.Body.Messages[4].ReasoningContent != nil {
		t.Fatalf("reasoning_content should follow the history: %s", got.Raw)
	}
	req.ReasoningEffort = "medium"
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if srv.Last().Body.ReasoningEffort != "medium" {
		t.Fatal("effort not sent")
	}
	req.ReasoningEffort = "off"
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Last().Fields["reasoning_effort"]; ok {
		t.Fatal("effort off must not be sent")
	}
}

func TestBadRequestsFailBeforeSending(t *testing.T) {
	srv := modeltest.New(t)
	p := newClient(t, srv, Options{})
	for name, mut := range map[string]func(*Request){
		"no model":    func(r *Request) { r.Model = "" },
		"no messages": func(r *Request) { r.Messages = nil },
		"bad role":    func(r *Request) { r.Messages[1].Role = "robot" },
		"tool no id":  func(r *Request) { r.Messages = append(r.Messages, Message{Role: "tool", Content: "x"}) },
		"call no id": func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{{Name: "bash"}}})
		},
		"bad schema": func(r *Request) { r.Tools[0].Parameters = []byte(`{"type":`) },
		"image on tool": func(r *Request) {
			r.Messages[1].Role = "tool"
			r.Messages[1].Images = []Image{{MediaType: "image/png", Data: []byte{1}}}
		},
		"image no type": func(r *Request) { r.Messages[1].Images = []Image{{Data: []byte{1}}} },
		"image not flash": func(r *Request) {
			r.Model = "deepseek-v4-pro"
			r.Messages[1].Images = []Image{{MediaType: "image/png", Data: []byte{1}}}
		},
		"negative max": func(r *Request) { r.MaxTokens = -1 },
	} {
		req := firstRequest()
		mut(req)
		_, err := p.Stream(context.Background(), req, nil)
		if e := asError(t, err); e.Class != ClassInvalid || e.Retryable() {
			t.Errorf("%s: err = %v", name, e)
		}
	}
	if srv.Count() != 0 {
		t.Fatalf("%d bad requests were sent", srv.Count())
	}
}

func TestCancelledContextSendsNothing(t *testing.T) {
	srv := modeltest.New(t)
	p := newClient(t, srv, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Stream(ctx, firstRequest(), nil)
	if e := asError(t, err); e.Class != ClassAborted {
		t.Fatalf("err = %v", e)
	}
	if srv.Count() != 0 {
		t.Fatal("request sent after cancel")
	}
}

func TestJSONInsteadOfStream(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.Reply{Body: []byte(`{"error":{"message":"streaming unsupported"}}`)})
	p := newClient(t, srv, Options{})
	_, err := p.Stream(context.Background(), firstRequest(), nil)
	if e := asError(t, err); e.Class != ClassMalformed || !strings.Contains(e.Message, "streaming unsupported") {
		t.Fatalf("err = %v", e)
	}
}

// BenchmarkParseStream is the client's own cost of parsing a typical step's
// SSE stream (200 reasoning deltas, 200 text deltas, a 3-fragment tool call),
// without the network.
func BenchmarkParseStream(b *testing.B) {
	s := modeltest.NewStream().Role()
	for range 200 {
		s.Reasoning("some reasoning words ")
	}
	for range 200 {
		s.Text("answer text ")
	}
	s.ToolCall(0, "call_1", "bash", `{"command":"go test ./...","description":"run the tests"}`, 3)
	var raw []byte
	for _, c := range s.Finish("tool_calls").Usage(modeltest.DefaultUsage).Done().Reply().Chunks {
		raw = append(raw, c.Bytes...)
	}
	p := newHTTPProvider(ProviderDeepSeek, dialectDeepSeek, "http://127.0.0.1:1", Options{APIKey: "k"})
	ctx := context.Background()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		st := streamState{p: p, onDelta: func(Delta) {}, calls: map[int]*callAcc{}, resp: &Response{}}
		wd := time.NewTimer(time.Hour)
		var streaming atomic.Bool
		if _, err := st.read(ctx, ctx, bytes.NewReader(raw), wd, &streaming); err != nil {
			b.Fatal(err)
		}
		wd.Stop()
	}
}
