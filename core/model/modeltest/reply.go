package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Reply is what the server answers to one request: either a plain body
// (errors) or an SSE stream of chunks.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Header is added to the response headers (e.g. Retry-After).
	Header http.Header
	// Body, when non-nil, is sent as is (Content-Type application/json
	// unless Header says otherwise) and Chunks are ignored.
	Body []byte
	// Chunks are written in order, each flushed, after their Delay and
	// Gate. When they run out the response ends: without a finish chunk
	// that is an "EOF without finish_reason".
	Chunks []Chunk
}

// WithHeader returns a copy of r with a response header added.
func (r Reply) WithHeader(key, value string) Reply {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	r.Header = h
	return r
}

// Chunk is one step of a streamed reply. The server first sleeps Delay,
// then waits for Gate (if set), then writes Bytes and flushes. A Hang chunk
// writes nothing and blocks until the client goes away or the server is
// closed: a silent stall.
type Chunk struct {
	Bytes []byte
	Delay time.Duration
	Gate  <-chan struct{}
	Hang  bool
}

// ErrorReply is an HTTP error in DeepSeek's shape:
// {"error":{"message":...,"type":...,"code":...}}.
func ErrorReply(status int, message string) Reply {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message,
		"type":    errorType(status),
		"code":    status,
	}})
	return Reply{Status: status, Body: body}
}

func errorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 402:
		return "insufficient_balance"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// Usage is the usage chunk of a stream, in DeepSeek's terms.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CacheHitTokens   int64
	ReasoningTokens  int64
}

// Call is one tool call for the convenience builders.
type Call struct {
	ID   string
	Name string
	Args string // raw argument string
	// Fragments splits Args over this many chunks (default 1).
	Fragments int
}

// Stream builds an SSE reply chunk by chunk:
//
//	modeltest.NewStream().Reasoning("think").Text("hi").Finish("stop").Usage(u).Done().Reply()
type Stream struct {
	chunks []Chunk
	header http.Header
	id     string
}

// NewStream starts a stream whose chunks carry the id "chatcmpl-test".
func NewStream() *Stream { return &Stream{id: "chatcmpl-test"} }

// Add appends raw chunks.
func (s *Stream) Add(c ...Chunk) *Stream {
	s.chunks = append(s.chunks, c...)
	return s
}

// Raw appends text written verbatim (include the line endings yourself).
func (s *Stream) Raw(text string) *Stream { return s.Add(Chunk{Bytes: []byte(text)}) }

// Data appends "data: <payload>\n\n".
func (s *Stream) Data(payload string) *Stream { return s.Raw("data: " + payload + "\n\n") }

// Header adds a response header.
func (s *Stream) Header(key, value string) *Stream {
	if s.header == nil {
		s.header = http.Header{}
	}
	s.header.Add(key, value)
	return s
}

type wChunk struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Model   string    `json:"model"`
	Choices []wChoice `json:"choices"`
	Usage   *wUsage   `json:"usage,omitempty"`
}

type wChoice struct {
	Index        int     `json:"index"`
	Delta        wDelta  `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type wDelta struct {
	Role             string      `json:"role,omitempty"`
	Content          *string     `json:"content,omitempty"`
	ReasoningContent *string     `json:"reasoning_content,omitempty"`
	ToolCalls        []wToolCall `json:"tool_calls,omitempty"`
}

type wToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function wFunc  `json:"function"`
}

type wFunc struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wUsage struct {
	PromptTokens            int64 `json:"prompt_tokens"`
	CompletionTokens        int64 `json:"completion_tokens"`
	TotalTokens             int64 `json:"total_tokens"`
	PromptCacheHitTokens    int64 `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens   int64 `json:"prompt_cache_miss_tokens"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (s *Stream) chunk(c wChunk) *Stream {
	c.ID, c.Object, c.Model = s.id, "chat.completion.chunk", "deepseek-flash"
	if c.Choices == nil {
		c.Choices = []wChoice{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // our own types; cannot fail
	}
	return s.Data(string(b))
}

func (s *Stream) delta(d wDelta) *Stream {
	return s.chunk(wChunk{Choices: []wChoice{{Delta: d}}})
}

// Role appends the opening {"delta":{"role":"assistant"}} chunk.
func (s *Stream) Role() *Stream { return s.delta(wDelta{Role: "assistant"}) }

// Reasoning appends a reasoning_content delta.
func (s *Stream) Reasoning(text string) *Stream { return s.delta(wDelta{ReasoningContent: &text}) }

// Text appends a content delta.
func (s *Stream) Text(text string) *Stream { return s.delta(wDelta{Content: &text}) }

// ToolCall appends a tool call at index split into fragments chunks: the
// first carries id, type and name with empty arguments (as DeepSeek does),
// the rest carry only argument fragments.
func (s *Stream) ToolCall(index int, id, name, args string, fragments int) *Stream {
	s.delta(wDelta{ToolCalls: []wToolCall{{Index: index, ID: id, Type: "function", Function: wFunc{Name: name}}}})
	for _, part := range Split(args, fragments) {
		s.delta(wDelta{ToolCalls: []wToolCall{{Index: index, Function: wFunc{Arguments: part}}}})
	}
	return s
}

// ToolCallFragment appends one raw tool-call delta, for interleaving calls.
func (s *Stream) ToolCallFragment(index int, id, name, args string) *Stream {
	tc := wToolCall{Index: index, ID: id, Function: wFunc{Name: name, Arguments: args}}
	if id != "" {
		tc.Type = "function"
	}
	return s.delta(wDelta{ToolCalls: []wToolCall{tc}})
}

// Finish appends a chunk with an empty delta and finish_reason.
func (s *Stream) Finish(reason string) *Stream {
	return s.chunk(wChunk{Choices: []wChoice{{Delta: wDelta{}, FinishReason: &reason}}})
}

// Usage appends the usage chunk (choices: []).
func (s *Stream) Usage(u Usage) *Stream {
	w := &wUsage{
		PromptTokens:          u.PromptTokens,
		CompletionTokens:      u.CompletionTokens,
		TotalTokens:           u.PromptTokens + u.CompletionTokens,
		PromptCacheHitTokens:  u.CacheHitTokens,
		PromptCacheMissTokens: u.PromptTokens - u.CacheHitTokens,
	}
	w.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	return s.chunk(wChunk{Usage: w})
}

// Done appends "data: [DONE]".
func (s *Stream) Done() *Stream { return s.Data("[DONE]") }

// KeepAlives appends n ": keep-alive" comments.
func (s *Stream) KeepAlives(n int) *Stream {
	return s.Raw(strings.Repeat(": keep-alive\n\n", n))
}

// KeepAlivesEvery appends n keep-alive comments, one every d.
func (s *Stream) KeepAlivesEvery(n int, d time.Duration) *Stream {
	for range n {
		s.Add(Chunk{Delay: d, Bytes: []byte(": keep-alive\n\n")})
	}
	return s
}

// Delay makes the server sleep d before the next chunk.
func (s *Stream) Delay(d time.Duration) *Stream { return s.Add(Chunk{Delay: d}) }

// Gate makes the server wait until ch is closed (or receives) before the
// next chunk.
func (s *Stream) Gate(ch <-chan struct{}) *Stream { return s.Add(Chunk{Gate: ch}) }

// Stall makes the server go silent for good: it holds the connection open
// and sends nothing until the client leaves or the server closes.
func (s *Stream) Stall() *Stream { return s.Add(Chunk{Hang: true}) }

// Reply returns the built reply (status 200).
func (s *Stream) Reply() Reply {
	return Reply{Header: s.header.Clone(), Chunks: append([]Chunk(nil), s.chunks...)}
}

// DefaultUsage is what the convenience builders report.
var DefaultUsage = Usage{PromptTokens: 100, CompletionTokens: 20, CacheHitTokens: 64, ReasoningTokens: 5}

// TextReply is a complete answer: text, finish stop, usage, [DONE].
func TextReply(text string) Reply {
	return NewStream().Role().Text(text).Finish("stop").Usage(DefaultUsage).Done().Reply()
}

// ReasoningReply is a complete answer with reasoning before the text.
func ReasoningReply(reasoning, text string) Reply {
	return NewStream().Role().Reasoning(reasoning).Text(text).Finish("stop").Usage(DefaultUsage).Done().Reply()
}

// ToolCallsReply is a complete step that calls tools (finish tool_calls),
// with optional reasoning first. Calls without an ID get "call_<i>".
func ToolCallsReply(reasoning string, calls ...Call) Reply {
	s := NewStream().Role()
	if reasoning != "" {
		s.Reasoning(reasoning)
	}
	for i, c := range calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		s.ToolCall(i, id, c.Name, c.Args, c.Fragments)
	}
	return s.Finish("tool_calls").Usage(DefaultUsage).Done().Reply()
}

// Split cuts s into n pieces of near-equal length (n<1 means 1), never
// inside a UTF-8 sequence (a JSON string on the wire carries whole runes).
// Some pieces may be empty when s is short or made of wide runes.
func Split(s string, n int) []string {
	if n < 1 {
		n = 1
	}
	out := make([]string, 0, n)
	start := 0
	for i := range n {
		end := len(s) * (i + 1) / n
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		end = max(end, start)
		out = append(out, s[start:end])
		start = end
	}
	return out
}

// BigArgs returns a valid JSON object string of at least n bytes:
// {"file_path":"big.txt","content":"xxxx…"}.
func BigArgs(n int) string {
	const head, tail = `{"file_path":"big.txt","content":"`, `"}`
	pad := max(n-len(head)-len(tail), 0)
	return head + strings.Repeat("x", pad) + tail
}
