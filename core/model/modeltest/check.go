package modeltest

import (
	"bytes"
	"fmt"
	"strings"
)

// Check names one invariant the server verifies on every request.
type Check string

// The checks. All are on by default.
const (
	// CheckAuth: an "Authorization: Bearer <key>" header is present.
	CheckAuth Check = "auth"
	// CheckShape: "stream":true with stream_options.include_usage, a
	// model, at least one message, known roles.
	CheckShape Check = "shape"
	// CheckToolPairs: every assistant tool call has a non-empty unique id
	// and is answered by exactly one tool message right after it; no tool
	// message answers an unknown call.
	CheckToolPairs Check = "tool-pairs"
	// CheckReasoning: in thinking mode every assistant message carries
	// reasoning_content ("" when there was none); DeepSeek 400s otherwise.
	CheckReasoning Check = "reasoning"
	// CheckSampling: no temperature, top_p or penalties in thinking mode
	// (DeepSeek ignores them silently, so sending them is a bug).
	CheckSampling Check = "sampling"
	// CheckStable: the system message and the tool list are byte-identical
	// across the requests of one conversation.
	CheckStable Check = "stable"
	// CheckPrefix: each request's messages byte-extend the previous request
	// of its conversation (an identical repeat, a retry, is fine), and a
	// request the server has no conversation for starts fresh (holds no
	// assistant message). This is what keeps DeepSeek's prefix cache hot.
	// A compaction is the one planned break: a request whose compacted
	// messages (CompactedPrefix) differ from the previous one's starts a
	// new epoch, and a summary call (IsCompaction) must extend the
	// previous request but is not one the next request extends.
	CheckPrefix Check = "prefix"
)

// convState is what the checker remembers of a conversation: the previous
// request's messages, system message and tools, all raw.
type convState struct {
	msgs   [][]byte
	system []byte
	tools  []byte
	seq    int
	marks  string // compactedMarks of the request
}

// check runs the enabled checks on req; s.mu is held.
func (s *Server) check(req *Request) []string {
	var v []string
	add := func(c Check, format string, args ...any) {
		if !s.disabled[c] {
			v = append(v, fmt.Sprintf("["+string(c)+"] "+format, args...))
		}
	}
	b := &req.Body

	auth := req.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "Bearer ") || strings.TrimSpace(strings.TrimPrefix(auth, "Bearer ")) == "" {
		add(CheckAuth, "no \"Authorization: Bearer <key>\" header")
	}

	if !b.Stream {
		add(CheckShape, "\"stream\" is not true")
	}
	if b.StreamOptions == nil || !b.StreamOptions.IncludeUsage {
		add(CheckShape, "stream_options.include_usage is not true (usage would be lost)")
	}
	if b.Model == "" {
		add(CheckShape, "no model")
	}
	if len(b.Messages) == 0 {
		add(CheckShape, "no messages")
	}
	for i, m := range b.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			add(CheckShape, "messages[%d] has role %q", i, m.Role)
		}
	}
	for i, t := range b.Tools {
		server := (t.Type == "deepseek_web_search" || t.Type == "deepseek_read_url") && t.Name == t.Type
		if !server && (t.Type != "function" || t.Function.Name == "") {
			add(CheckShape, "tools[%d] is neither a named function tool nor one of DeepSeek's server tools", i)
		}
	}

	for _, p := range toolPairProblems(b.Messages) {
		add(CheckToolPairs, "%s", p)
	}

	if req.ThinkingMode() {
		for i, m := range b.Messages {
			if m.Role == "assistant" && m.ReasoningContent == nil {
				add(CheckReasoning, "messages[%d] (assistant) has no reasoning_content; thinking mode needs the key on every assistant message (\"\" if none)", i)
			}
		}
		for _, k := range []string{"temperature", "top_p", "presence_penalty", "frequency_penalty"} {
			if _, ok := req.Fields[k]; ok {
				add(CheckSampling, "%q is sent in thinking mode (DeepSeek ignores it)", k)
			}
		}
	}

	var system []byte
	if len(b.Messages) > 0 && b.Messages[0].Role == "system" {
		system = b.Messages[0].Raw
	}
	tools := []byte(req.Fields["tools"])
	msgs := make([][]byte, len(b.Messages))
	for i, m := range b.Messages {
		msgs[i] = m.Raw
	}
	prev := s.convs[req.Conversation]
	marks := compactedMarks(b)
	epoch := prev != nil && marks != prev.marks
	if prev == nil && marks == "" {
		for i, m := range b.Messages {
			if m.Role == "assistant" {
				add(CheckPrefix, "the request continues a conversation this server has not seen (messages[%d] is an assistant message): did the system prompt or the first user message change mid-session?", i)
				break
			}
		}
	} else if prev != nil {
		if !bytes.Equal(prev.system, system) {
			add(CheckStable, "the system message differs from request #%d of this conversation: %s", prev.seq, diff(prev.system, system))
		}
		if !bytes.Equal(prev.tools, tools) {
			add(CheckStable, "the tool list differs from request #%d of this conversation: %s", prev.seq, diff(prev.tools, tools))
		}
		if !epoch && len(msgs) < len(prev.msgs) {
			add(CheckPrefix, "%d messages, fewer than the %d of request #%d of this conversation: history was cut", len(msgs), len(prev.msgs), prev.seq)
		}
		for i := 0; !epoch && i < min(len(msgs), len(prev.msgs)); i++ {
			if !bytes.Equal(msgs[i], prev.msgs[i]) {
				add(CheckPrefix, "messages[%d] differs from request #%d (the prefix cache misses from here): %s", i, prev.seq, diff(prev.msgs[i], msgs[i]))
				break
			}
		}
	}
	if !IsCompaction(req) {
		s.convs[req.Conversation] = &convState{msgs: msgs, system: system, tools: tools, seq: req.Seq, marks: marks}
	}
	return v
}

// toolPairProblems checks that tool calls and tool results pair up the way
// the chat-completions API requires.
func toolPairProblems(msgs []Message) []string {
	var out []string
	seen := map[string]int{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case "assistant":
			if len(m.ToolCalls) == 0 {
				continue
			}
			want := map[string]bool{}
			for j, tc := range m.ToolCalls {
				switch {
				case tc.ID == "":
					out = append(out, fmt.Sprintf("messages[%d].tool_calls[%d] has an empty id", i, j))
				case seen[tc.ID] > 0 || want[tc.ID]:
					out = append(out, fmt.Sprintf("messages[%d].tool_calls[%d] reuses id %q", i, j, tc.ID))
				}
				if tc.Type != "function" || tc.Function.Name == "" {
					out = append(out, fmt.Sprintf("messages[%d].tool_calls[%d] is not a named function call", i, j))
				}
				want[tc.ID] = true
				seen[tc.ID] = i + 1
			}
			got := map[string]bool{}
			j := i + 1
			for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
				id := msgs[j].ToolCallID
				switch {
				case !want[id]:
					out = append(out, fmt.Sprintf("messages[%d] answers tool call %q, which messages[%d] did not make", j, id, i))
				case got[id]:
					out = append(out, fmt.Sprintf("messages[%d] answers tool call %q a second time", j, id))
				}
				got[id] = true
			}
			for _, tc := range m.ToolCalls {
				if tc.ID != "" && !got[tc.ID] {
					out = append(out, fmt.Sprintf("tool call %q of messages[%d] has no tool result right after it", tc.ID, i))
				}
			}
			i = j - 1
		case "tool":
			out = append(out, fmt.Sprintf("messages[%d] is a tool result (%q) that does not follow an assistant message with tool calls", i, m.ToolCallID))
		}
	}
	return out
}

// diff shows where two byte strings first differ, briefly.
func diff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(i-30, 0)
	clip := func(x []byte) string {
		end := min(i+50, len(x))
		if from > len(x) {
			return "<end>"
		}
		s := string(x[from:end])
		if from > 0 {
			s = "…" + s
		}
		if end < len(x) {
			s += "…"
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("at byte %d: was %s, now %s", i, clip(a), clip(b))
}
