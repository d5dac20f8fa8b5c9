package modeltest

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
)

// This file gives the fake server a context window and a prefix cache, so
// tests see what a real DeepSeek endpoint does with a long session: a
// request over the window is refused with the provider's "maximum context
// length" 400, and each request reports how much of its prompt a prefix
// cache would have served.

// CompactedPrefix opens the messages dsh writes when it compacts a
// conversation (the summary, the note on dropped messages). A request
// whose set of such messages differs from the previous request of its
// conversation starts a new epoch: its history may be shorter. It equals
// core.CompactedPrefix (a core test checks).
const CompactedPrefix = "[context compacted] "

// tokensPerBlock is the prefix cache's granularity (DeepSeek caches in
// 64-token units).
const tokensPerBlock = 64

// cacheDepth is how many earlier requests the prefix cache remembers.
const cacheDepth = 4

// WithContextLimit makes the server refuse, with DeepSeek's 400, every
// request whose prompt is estimated over tokens (four bytes of text a
// token: message text, reasoning, tool calls and the tool list).
func WithContextLimit(tokens int64) Option {
	return func(s *Server) { s.contextLimit = tokens }
}

// SetContextLimit changes the window from the next request on (0: none),
// e.g. to find a session made under a larger window over it.
func (s *Server) SetContextLimit(tokens int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contextLimit = tokens
}

// WithMaxTokensCounted makes the context limit count a request's
// max_tokens with its prompt, as DeepSeek does: a request whose prompt fits
// but whose prompt plus max_tokens does not is refused, naming both shares.
func WithMaxTokensCounted() Option {
	return func(s *Server) { s.countMaxTokens = true }
}

// ContextLimitReply is DeepSeek's answer to a request over the window.
func ContextLimitReply(limit, requested int64) Reply {
	return contextLimitReply(limit, requested, 0)
}

func contextLimitReply(limit, prompt, completion int64) Reply {
	return ErrorReply(http.StatusBadRequest, fmt.Sprintf(
		"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). "+
			"Please reduce the length of the messages or completion.", limit, prompt+completion, prompt, completion))
}

// IsCompaction reports whether req is a compaction's summary call: its
// last message is the summary instruction (or, from older clients, it
// sends tool_choice "none").
func IsCompaction(req *Request) bool {
	msgs := req.Body.Messages
	if req.Body.ToolChoice == "none" {
		return true
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" {
		return false
	}
	return strings.HasPrefix(msgs[len(msgs)-1].Text(), SummaryInstructionStart)
}

// SummaryInstructionStart is model.SummaryInstructionStart (this package
// cannot import model, whose tests import it; a test there keeps the two
// equal).
const SummaryInstructionStart = "Stop the task for a moment and write a summary of the conversation so far."

// SummaryReply answers a summary call with text.
func SummaryReply(text string, u Usage) Reply {
	return NewStream().Role().Text(text).Finish("stop").Usage(u).Done().Reply()
}

// Usage is the usage a real server would report for req: its estimated
// prompt, the part of it the prefix cache held, and completion tokens.
func (r *Request) Usage(completion int64) Usage {
	return Usage{PromptTokens: r.PromptTokens, CompletionTokens: completion, CacheHitTokens: r.CachedTokens}
}

// promptTokens estimates a request's prompt at four bytes of text a token.
func promptTokens(r *Request) int64 {
	n := 0
	for _, m := range r.Body.Messages {
		n += len(m.Text())
		if m.ReasoningContent != nil {
			n += len(*m.ReasoningContent)
		}
		for _, tc := range m.ToolCalls {
			n += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
		n += m.Images() * 6000
	}
	for _, t := range r.Body.Tools {
		n += len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters)
	}
	return int64((n + 3) / 4)
}

// cacheKey is the request as a prefix cache sees it: tools first (a chat
// template renders them before the messages), then the messages in order.
func cacheKey(r *Request) []byte {
	var b bytes.Buffer
	b.Write(r.Fields["tools"])
	for _, m := range r.Body.Messages {
		b.Write(m.Raw)
	}
	return b.Bytes()
}

// measureCache sets req.PromptTokens and req.CachedTokens from the longest
// prefix req shares with a remembered request, in whole blocks; s.mu held.
func (s *Server) measureCache(req *Request) {
	req.PromptTokens = promptTokens(req)
	key := cacheKey(req)
	best := 0
	for _, k := range s.cache {
		n := 0
		for n < len(k) && n < len(key) && k[n] == key[n] {
			n++
		}
		best = max(best, n)
	}
	if len(key) > 0 {
		cached := req.PromptTokens * int64(best) / int64(len(key))
		req.CachedTokens = cached / tokensPerBlock * tokensPerBlock
	}
	s.cache = append(s.cache, key)
	if len(s.cache) > cacheDepth {
		s.cache = s.cache[1:]
	}
}

// compactedMarks is the raw bytes of every message of req dsh wrote when
// compacting, which identify the request's epoch.
func compactedMarks(b *Body) string {
	var out strings.Builder
	for _, m := range b.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Text(), CompactedPrefix) {
			out.Write(m.Raw)
		}
	}
	return out.String()
}
