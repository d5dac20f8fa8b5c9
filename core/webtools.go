package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// DeepSeek's server-side web tools (deepseek_web_search, deepseek_read_url)
// run at DeepSeek, inside the model call: the reply carries their result
// blocks, which the provider keeps as model.ServerFields and the loop
// commits verbatim as event.BlockServer blocks of the assistant message,
// so every later request (and a resume) sends them back unchanged.
//
// So that the user sees what was searched or read, each search or page
// read found in the blocks is also committed, with the message, as a
// tool/call with its facts (kind search or fetch, the queries or the URL
// as title) and a tool/result saying the server ran it: every door shows
// them as it shows any call, and the model-facing history ignores them
// (they are no calls of the model's message).

// Names of the server tools as the calls recording their use name them.
const (
	WebSearchTool = "deepseek_web_search"
	ReadURLTool   = "deepseek_read_url"
)

// maxWebUses bounds the calls recorded for one reply's blocks.
const maxWebUses = 32

// webUse is one search or page read found in a reply's server blocks.
type webUse struct {
	tool    string // WebSearchTool or ReadURLTool
	queries []string
	url     string
}

// webUses finds the searches and page reads in server blocks: an object
// with "queries" or "query" is a search (the shape of the Responses API's
// web_search_call action and of Anthropic-style server_tool_use input); an
// object whose type, name or action names a read, an open or a fetch and
// that has a "url" is a page read. The objects inside a use (its results,
// whose urls are sources, not reads) are not searched further. Blocks in
// which neither is found still count as one search, so the user sees
// that the server went to the web.
func webUses(fields []model.ServerField) []webUse {
	var out []webUse
	for _, f := range fields {
		var v any
		if json.Unmarshal(f.Value, &v) != nil {
			continue
		}
		n := len(out)
		out = collectWebUses(v, out)
		if len(out) == n && strings.Contains(strings.ToLower(f.Name), "search") {
			out = append(out, webUse{tool: WebSearchTool})
		}
		if len(out) >= maxWebUses {
			return out[:maxWebUses]
		}
	}
	return out
}

func collectWebUses(v any, out []webUse) []webUse {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			out = collectWebUses(e, out)
		}
	case map[string]any:
		if u, ok := webUseOf(x); ok {
			return append(out, u)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the order the uses are shown in
		for _, k := range keys {
			out = collectWebUses(x[k], out)
		}
	}
	return out
}

// webUseOf is the use one object records, if any.
func webUseOf(m map[string]any) (webUse, bool) {
	var qs []string
	if q, ok := m["query"].(string); ok && q != "" {
		qs = append(qs, q)
	}
	if arr, ok := m["queries"].([]any); ok {
		for _, q := range arr {
			if s, ok := q.(string); ok && s != "" {
				qs = append(qs, s)
			}
		}
	}
	if len(qs) > 0 {
		return webUse{tool: WebSearchTool, queries: qs}, true
	}
	url, _ := m["url"].(string)
	if url == "" {
		return webUse{}, false
	}
	for _, k := range []string{"type", "name", "action"} {
		s, _ := m[k].(string)
		s = strings.ToLower(s)
		if strings.Contains(s, "read") || strings.Contains(s, "open") || strings.Contains(s, "fetch") {
			return webUse{tool: ReadURLTool, url: url}, true
		}
	}
	return webUse{}, false
}

// call is the tool/call recording the use, with its facts.
func (u webUse) call(turn, step, i int, msgID string) event.ToolCall {
	tc := event.ToolCall{Turn: turn, Step: step, CallID: fmt.Sprintf("web_%s_%d", strings.ReplaceAll(msgID, "-", ""), i), Name: u.tool}
	var args []byte
	facts := event.ToolFacts{Kind: "search", Title: "Web search (DeepSeek)"}
	if u.tool == ReadURLTool {
		args, _ = json.Marshal(map[string]string{"url": u.url})
		facts = event.ToolFacts{Kind: "fetch", Title: "Read " + clipTitle(u.url)}
	} else {
		args, _ = json.Marshal(map[string][]string{"queries": u.queries})
		if len(u.queries) > 0 {
			facts.Title = "Web search: " + clipTitle(strings.Join(u.queries, "; "))
		}
	}
	tc.Arguments, tc.Facts = string(args), &facts
	return tc
}

// result is the tool/result that closes the use's call.
func (u webUse) result(tc event.ToolCall) event.ToolResult {
	text := "Run by DeepSeek's server; its results are part of the model's reply."
	return event.ToolResult{Turn: tc.Turn, Step: tc.Step, Message: event.Message{
		ID: uuid.NewString(), Role: "user", Source: event.Source{Kind: "tool", CallID: tc.CallID},
		Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: tc.CallID,
			Content: []event.ContentBlock{event.Text(text)}}},
	}}
}

// clipTitle keeps a title to one line of at most 160 bytes.
func clipTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= 160 {
		return s
	}
	cut := 157
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

// serverBlocks are a reply's server fields as the blocks the assistant
// message records, and the tool/call and tool/result events of the web
// uses they show.
func serverBlocks(turn, step int, msgID string, fields []model.ServerField) ([]event.ContentBlock, []event.Event, []any) {
	if len(fields) == 0 {
		return nil, nil, nil
	}
	blocks := make([]event.ContentBlock, 0, len(fields))
	for _, f := range fields {
		blocks = append(blocks, event.ContentBlock{Type: event.BlockServer, Name: f.Name, Text: string(f.Value)})
	}
	var evs []event.Event
	var payloads []any
	for i, u := range webUses(fields) {
		tc := u.call(turn, step, i, msgID)
		tr := u.result(tc)
		evs = append(evs, event.New(event.TypeToolCall, tc), event.New(event.TypeToolResult, tr))
		payloads = append(payloads, tc, tr)
	}
	return blocks, evs, payloads
}
