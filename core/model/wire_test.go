package model

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func historyRequest() *Request {
	return &Request{
		Model: "deepseek-flash",
		Messages: []Message{
			{Role: "system", Content: "You are dsh.\nBe brief."},
			{Role: "user", Content: "list <files> & \"dirs\""},
			{Role: "assistant", Reasoning: "use bash", ToolCalls: []ToolCall{
				{ID: "call_1", Name: "bash", Arguments: "{\"command\": \"ls\"}"}, // raw: a space, kept
			}},
			{Role: "tool", ToolCallID: "call_1", Content: "a.go\nb.go"},
			{Role: "assistant", Content: "Two files."}, // no reasoning: "" must be sent
			{Role: "user", Content: "look", Images: []Image{{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}},
		},
		Tools: []ToolSpec{{Name: "bash", Description: "Run a command.",
			Parameters: []byte("{\n  \"type\": \"object\"\n}")}},
	}
}

const wantDeepSeekBody = `{"model":"deepseek-flash","messages":[` +
	`{"role":"system","content":"You are dsh.\nBe brief."},` +
	`{"role":"user","content":"list \u003cfiles\u003e \u0026 \"dirs\""},` +
	`{"role":"assistant","content":"","reasoning_content":"use bash","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"a.go\nb.go"},` +
	`{"role":"assistant","content":"Two files.","reasoning_content":""},` +
	`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]}` +
	`],"tools":[{"type":"function","function":{"name":"bash","description":"Run a command.","parameters":{` + "\n" + `  "type": "object"` + "\n" + `}}}],` +
	`"max_tokens":256000,"thinking":{"type":"enabled"},"reasoning_effort":"high","stream":true,"stream_options":{"include_usage":true}}`

func deepseekBody(t *testing.T, req *Request) []byte {
	t.Helper()
	p := newHTTPProvider(ProviderDeepSeek, dialectDeepSeek, "http://127.0.0.1:1", Options{APIKey: "k"})
	plan, err := p.plan(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeBody(req, plan)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBodyGolden(t *testing.T) {
	got := deepseekBody(t, historyRequest())
	if string(got) != wantDeepSeekBody {
		t.Fatalf("body:\n%s\nwant:\n%s", got, wantDeepSeekBody)
	}
	if !json.Valid(got) {
		t.Fatal("invalid JSON")
	}
}

func TestBodyByteStable(t *testing.T) {
	a := deepseekBody(t, historyRequest())
	b := deepseekBody(t, historyRequest())
	if !bytes.Equal(a, b) {
		t.Fatal("same request, different bytes")
	}
	// A longer history byte-extends the shorter one inside "messages".
	short := historyRequest()
	short.Messages = short.Messages[:4]
	sb := deepseekBody(t, short)
	cut := bytes.Index(sb, []byte(`],"tools"`))
	if !bytes.HasPrefix(a, sb[:cut]) {
		t.Fatal("history prefix not byte-stable")
	}
}

func TestBodyThinkingOff(t *testing.T) {
	req := historyRequest()
	req.ReasoningEffort = "off"
	got := string(deepseekBody(t, req))
	if strings.Contains(got, "reasoning_content") || strings.Contains(got, "reasoning_effort") ||
		!strings.Contains(got, `"thinking":{"type":"disabled"}`) {
		t.Fatalf("body %s", got)
	}
	for _, k := range []string{"temperature", "top_p"} {
		if strings.Contains(got, k) {
			t.Fatalf("%s sent", k)
		}
	}
}

func TestBodyOpenAI(t *testing.T) {
	p := newHTTPProvider(ProviderOpenAI, dialectOpenAI, "http://127.0.0.1:1", Options{APIKey: "k"})
	req := historyRequest()
	plan, err := p.plan(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeBody(req, plan)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if strings.Count(got, "reasoning_content") != 1 || strings.Contains(got, "thinking") ||
		strings.Contains(got, "max_tokens") || strings.Contains(got, "reasoning_effort") {
		t.Fatalf("body %s", got)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "ctl \x00\x01\x1f\b\f\t\r\n",
		"html <a href='x'>&amp;</a>", "unicode ✓ 中文 😀", "sep \u2028 \u2029", "bad \xff\xfe utf8", "\x7f del"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s want %s", s, got, want)
		}
	}
}

func BenchmarkEncodeBody(b *testing.B) {
	req := historyRequest()
	for range 50 {
		req.Messages = append(req.Messages, Message{Role: "user", Content: strings.Repeat("some words ", 200)},
			Message{Role: "assistant", Content: strings.Repeat("an answer ", 200), Reasoning: strings.Repeat("thoughts ", 100)})
	}
	p := newHTTPProvider(ProviderDeepSeek, dialectDeepSeek, "http://127.0.0.1:1", Options{APIKey: "k"})
	plan, _ := p.plan(req)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeBody(req, plan); err != nil {
			b.Fatal(err)
		}
	}
}

// DeepSeek's thinking mode does not support tool_choice: it is never sent
// with thinking on, and still sent with thinking off.
func TestNoToolChoiceWithThinking(t *testing.T) {
	req := &Request{Model: "m", Messages: []Message{{Role: "user", Content: "x"}}, ToolChoice: "none",
		Tools: []ToolSpec{{Name: "t", Description: "d", Parameters: []byte(`{"type":"object"}`)}}}
	for thinking, want := range map[string]bool{"enabled": false, "disabled": true, "": true} {
		body, err := encodeBody(req, bodyPlan{dialect: dialectDeepSeek, thinking: thinking})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(body), `"tool_choice"`); got != want {
			t.Errorf("thinking %q: tool_choice sent %v, want %v: %s", thinking, got, want, body)
		}
	}
}
