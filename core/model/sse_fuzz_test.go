package model

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fuzzKey is the API key of the fuzzed clients. Seeds echo it in bodies and
// chunks, the way a misbehaving proxy might, so the fuzzer starts next to
// the redaction paths.
const fuzzKey = "sk-fuzz-SECRET-4f1c2b"

// fuzzMaxLine is a small SSE line cap, so the too-long path is reachable
// from small inputs.
const fuzzMaxLine = 4 << 10

// sseSeeds are response bodies covering the grammar: complete answers,
// tool calls (with and without index), keep-alives, CRLF, event:/id:
// fields, errors in the stream, malformed chunks, torn streams, huge index
// values and chunks that echo the key.
var sseSeeds = []string{
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"prompt_cache_hit_tokens\":4,\"completion_tokens_details\":{\"reasoning_tokens\":1}}}\n\ndata: [DONE]\n\n",
	"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"1\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"2\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
	": keep-alive\n\n: keep-alive\r\n\r\nevent: message\nid: 7\nretry: 10\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}\r\n\r\n",
	"data: {\"error\":{\"message\":\"overloaded " + fuzzKey + "\",\"type\":\"server_error\"}}\n\n",
	"data: not json " + fuzzKey + "\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"insufficient_system_resource\"}]}\n\n",
	"data: {\"choices\":[{\"index\":9223372036854775807,\"delta\":{\"tool_calls\":[{\"index\":-5,\"function\":{\"arguments\":\"\\u0000\"}}]}}]}\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":2147483647},{\"index\":-2147483648}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
	"data: [DONE]\n\n",
	"data: " + strings.Repeat("x", fuzzMaxLine+10) + "\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"},\"finish_reason\":\"stop\"}]}",
	"",
	"\n\n\n",
	"data",
	"data: {}\n\ndata: null\n\ndata: []\n\n",
}

// fuzzProvider is a provider whose endpoint is never dialled by
// FuzzSSEReader (it reads bodies directly).
func fuzzProvider(base string) *httpProvider {
	return newHTTPProvider(ProviderDeepSeek, dialectDeepSeek, base, Options{
		APIKey:       fuzzKey,
		MaxLineBytes: fuzzMaxLine,
	})
}

// checkOutcome holds the invariants of one parsed response: exactly one of
// resp and err; a typed *Error; a complete response has a finish reason and
// an id for every call; the key never appears in an error; and the output
// is bounded by the input (json.Unmarshal may turn one invalid byte into a
// three-byte U+FFFD, nothing grows more).
func checkOutcome(t *testing.T, body []byte, resp *Response, err error) {
	t.Helper()
	if (resp == nil) == (err == nil) {
		t.Fatalf("resp=%v err=%v: want exactly one", resp, err)
	}
	if err != nil {
		var me *Error
		if !errors.As(err, &me) {
			t.Fatalf("error %v (%T) is not a *model.Error", err, err)
		}
		if me.Class == "" || me.Message == "" {
			t.Fatalf("error without class or message: %#v", me)
		}
		if strings.Contains(err.Error(), fuzzKey) {
			t.Fatalf("the API key leaked into the error: %q", err.Error())
		}
		return
	}
	if resp.FinishReason == "" {
		t.Fatalf("response without finish reason: %+v", resp)
	}
	size := len(resp.Reasoning) + len(resp.Text)
	for _, c := range resp.ToolCalls {
		if c.ID == "" {
			t.Fatalf("tool call without id: %+v", c)
		}
		size += len(c.Name) + len(c.Arguments)
	}
	if limit := 3*len(body) + 64; size > limit {
		t.Fatalf("output of %d bytes from a body of %d bytes", size, len(body))
	}
}

// FuzzSSEReader feeds arbitrary bytes as a streamed response body to the
// SSE reader the HTTP client uses. Fast enough to explore the grammar
// deeply; FuzzSSEHTTP covers the HTTP layer around it.
func FuzzSSEReader(f *testing.F) {
	for _, s := range sseSeeds {
		f.Add([]byte(s))
	}
	p := fuzzProvider("http://127.0.0.1:9")
	f.Cleanup(p.CloseIdleConnections)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		reqCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		watchdog := time.AfterFunc(time.Hour, func() {})
		defer watchdog.Stop()
		var streaming atomic.Bool
		deltas := 0
		s := streamState{p: p, onDelta: func(Delta) { deltas++ }, calls: map[int]*callAcc{}, resp: &Response{}}
		resp, err := s.read(ctx, reqCtx, bytes.NewReader(body), watchdog, &streaming)
		checkOutcome(t, body, resp, err)
		if deltas > len(body) {
			t.Fatalf("%d deltas from %d bytes", deltas, len(body))
		}
	})
}

// FuzzSSEHTTP sends arbitrary bytes through the real HTTP client against an
// httptest server on 127.0.0.1: the first byte picks the status and content
// type (200 event-stream most often, else an error status or a JSON body),
// the rest is the body. Every outcome is a typed error or a response.
func FuzzSSEHTTP(f *testing.F) {
	for i, s := range sseSeeds {
		f.Add(byte(i), []byte(s))
	}
	f.Add(byte(1), []byte(`{"error":{"message":"Authentication Fails, your api key: `+fuzzKey+` is invalid","type":"authentication_error"}}`))
	f.Add(byte(2), []byte(`{"error":"rate limited `+fuzzKey+`"}`))
	f.Add(byte(5), []byte(`{"message":"`+strings.Repeat("k", 400)+fuzzKey+`"}`))
	f.Add(byte(6), []byte(`{"id":"x","choices":[{"message":{"content":"`+fuzzKey+`"}}]}`))

	var (
		mu   sync.Mutex
		mode byte
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		m, b := mode, body
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+fuzzKey {
			http.Error(w, "no key", http.StatusBadRequest)
			return
		}
		status, ctype := http.StatusOK, "text/event-stream"
		switch m % 8 {
		case 1:
			status, ctype = http.StatusUnauthorized, "application/json"
		case 2:
			status, ctype = http.StatusTooManyRequests, "application/json"
			w.Header().Set("Retry-After", string(b[:min(len(b), 8)]))
		case 3:
			status, ctype = http.StatusInternalServerError, "text/plain"
		case 4:
			status, ctype = http.StatusBadRequest, "application/json"
		case 5:
			status, ctype = http.StatusPaymentRequired, "application/json"
		case 6:
			ctype = "application/json" // a server that ignored "stream":true
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}))
	f.Cleanup(srv.Close)
	p := fuzzProvider(srv.URL)
	f.Cleanup(p.CloseIdleConnections)
	req := &Request{Model: "deepseek-flash", Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}}

	f.Fuzz(func(t *testing.T, m byte, b []byte) {
		mu.Lock()
		mode, body = m, b
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := p.Stream(ctx, req, nil)
		checkOutcome(t, b, resp, err)
		var me *Error
		if errors.As(err, &me) && me.Class == ClassAborted {
			t.Fatalf("the call timed out: %v", err)
		}
	})
}
