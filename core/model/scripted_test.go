package model

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustScript(t testing.TB, js string) Provider {
	t.Helper()
	s, err := ParseScript([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return NewScripted(s)
}

// conv builds a request whose history holds n completed steps.
func conv(first string, n int) *Request {
	r := &Request{Model: "m", Messages: []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: first}}}
	for i := range n {
		r.Messages = append(r.Messages, Message{Role: "assistant", Content: fmt.Sprint("step ", i)},
			Message{Role: "user", Content: "next"})
	}
	return r
}

func TestScriptedSteps(t *testing.T) {
	p := mustScript(t, `{"steps":[
		{"reasoning":"think","text":"hello"},
		{"toolCalls":[{"name":"bash","arguments":{"command": "ls",  "description":"list files"}},
		              {"id":"mine","name":"write","arguments":"{not json"}]},
		{"text":"cut","finishReason":"length","usage":{"inputTokens":10,"outputTokens":2,"cacheReadTokens":90,"reasoningTokens":1}}
	]}`)
	var log deltaLog
	resp, err := p.Stream(context.Background(), conv("hi", 0), log.add)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "think" || resp.Text != "hello" || resp.FinishReason != "stop" || resp.Usage == nil || resp.Usage.OutputTokens == 0 {
		t.Fatalf("resp %+v", resp)
	}
	if fmt.Sprint(log.deltas) != fmt.Sprint([]Delta{{Kind: DeltaReasoning, Text: "think"}, {Kind: DeltaText, Text: "hello"}}) {
		t.Fatalf("deltas %+v", log.deltas)
	}
	resp, err = p.Stream(context.Background(), conv("hi", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{{ID: "call_1_0", Name: "bash", Arguments: `{"command":"ls","description":"list files"}`},
		{ID: "mine", Name: "write", Arguments: "{not json"}}
	if resp.FinishReason != "tool_calls" || fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("resp %+v", resp)
	}
	resp, err = p.Stream(context.Background(), conv("hi", 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Usage
	if resp.FinishReason != "length" || u.InputTokens != 10 || *u.CacheReadTokens != 90 || *u.TotalTokens != 102 {
		t.Fatalf("resp %+v usage %+v", resp, u)
	}
	_, err = p.Stream(context.Background(), conv("hi", 3), nil)
	if e := asError(t, err); e.Class != ClassScript || e.Retryable() || !strings.Contains(e.Message, "exhausted") {
		t.Fatalf("err = %v", e)
	}
}

func TestScriptedRepeat(t *testing.T) {
	last := mustScript(t, `{"repeat":"last","steps":[{"text":"a"},{"text":"b"}]}`)
	cycle := mustScript(t, `{"repeat":"cycle","steps":[{"text":"a"},{"text":"b"}]}`)
	var gotLast, gotCycle string
	for n := range 5 {
		r, err := last.Stream(context.Background(), conv("x", n), nil)
		if err != nil {
			t.Fatal(err)
		}
		gotLast += r.Text
		r, err = cycle.Stream(context.Background(), conv("x", n), nil)
		if err != nil {
			t.Fatal(err)
		}
		gotCycle += r.Text
	}
	if gotLast != "abbbb" || gotCycle != "ababa" {
		t.Fatalf("last %q cycle %q", gotLast, gotCycle)
	}
}

func TestScriptedBareArray(t *testing.T) {
	p := mustScript(t, `[{"text":"only"}]`)
	if r, err := p.Stream(context.Background(), conv("x", 0), nil); err != nil || r.Text != "only" {
		t.Fatalf("r %+v err %v", r, err)
	}
}

func TestScriptedFailuresByAttempt(t *testing.T) {
	p := mustScript(t, `{"steps":[{"text":"made it","errors":[
		{"class":"RATE_LIMIT","status":429,"retryAfterMs":250},
		{"class":"SERVER","status":500,"message":"boom"}]}]}`)
	req := conv("x", 0)
	_, err := p.Stream(context.Background(), req, nil)
	e := asError(t, err)
	if e.Class != ClassRateLimit || e.Status != 429 || e.RetryAfter != 250*time.Millisecond || !e.Retryable() {
		t.Fatalf("attempt 0: %+v", e)
	}
	req.Attempt = 1
	_, err = p.Stream(context.Background(), req, nil)
	if e := asError(t, err); e.Class != ClassServer || e.Message != "boom" {
		t.Fatalf("attempt 1: %+v", e)
	}
	req.Attempt = 2
	if r, err := p.Stream(context.Background(), req, nil); err != nil || r.Text != "made it" {
		t.Fatalf("attempt 2: %+v %v", r, err)
	}
}

func TestScriptedMidStreamFailure(t *testing.T) {
	p := mustScript(t, `[{"text":"partial answer","chunkRunes":4,"errors":[{"class":"STREAM_CLOSED","midStream":true}]}]`)
	var log deltaLog
	_, err := p.Stream(context.Background(), conv("x", 0), log.add)
	if e := asError(t, err); e.Class != ClassStreamClosed {
		t.Fatalf("err %v", e)
	}
	if n := log.count(DeltaText); n != 4 {
		t.Fatalf("%d text deltas before the failure, want 4", n)
	}
}

func TestScriptedInsufficientResource(t *testing.T) {
	p := mustScript(t, `[{"text":"x","finishReason":"insufficient_system_resource"}]`)
	_, err := p.Stream(context.Background(), conv("x", 0), nil)
	if e := asError(t, err); e.Class != ClassOverloaded || !e.Retryable() {
		t.Fatalf("err %v", e)
	}
}

func TestScriptedChunksAndDelays(t *testing.T) {
	p := mustScript(t, `{"chunkRunes":2,"deltaDelayMs":5,"steps":[
		{"reasoning":"abcde","text":"✓✓✓","toolCalls":[{"name":"bash","arguments":"{}"}]}]}`)
	var log deltaLog
	start := time.Now()
	resp, err := p.Stream(context.Background(), conv("x", 0), log.add)
	if err != nil {
		t.Fatal(err)
	}
	want := []Delta{{Kind: DeltaReasoning, Text: "ab"}, {Kind: DeltaReasoning, Text: "cd"}, {Kind: DeltaReasoning, Text: "e"},
		{Kind: DeltaText, Text: "✓✓"}, {Kind: DeltaText, Text: "✓"},
		{Kind: DeltaToolCall, Text: "{}", Name: "bash", ID: "call_0_0"}}
	if fmt.Sprint(log.deltas) != fmt.Sprint(want) {
		t.Fatalf("deltas %+v", log.deltas)
	}
	if time.Since(start) < 25*time.Millisecond {
		t.Fatal("deltaDelayMs not applied")
	}
	if resp.Text != "✓✓✓" {
		t.Fatalf("text %q", resp.Text)
	}
}

func TestScriptedDelayHonoursCancel(t *testing.T) {
	for name, js := range map[string]string{
		"before first delta": `[{"delayMs":60000,"text":"never"}]`,
		"between deltas":     `[{"deltaDelayMs":60000,"chunkRunes":1,"text":"never"}]`,
		"before an error":    `[{"delayMs":60000,"text":"x","errors":[{"class":"SERVER"}]}]`,
	} {
		t.Run(name, func(t *testing.T) {
			p := mustScript(t, js)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(30*time.Millisecond, cancel)
			start := time.Now()
			_, err := p.Stream(ctx, conv("x", 0), nil)
			e := asError(t, err)
			if e.Class != ClassAborted || !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v", e)
			}
			if el := time.Since(start); el > time.Second {
				t.Fatalf("took %v", el)
			}
		})
	}
}

func TestScriptedEffortOffDropsReasoning(t *testing.T) {
	p := mustScript(t, `[{"reasoning":"hidden","text":"shown"}]`)
	req := conv("x", 0)
	req.ReasoningEffort = "off"
	r, err := p.Stream(context.Background(), req, nil)
	if err != nil || r.Reasoning != "" || r.Text != "shown" {
		t.Fatalf("r %+v err %v", r, err)
	}
}

func TestScriptedConversations(t *testing.T) {
	p := mustScript(t, `{
		"steps":[{"text":"default"}],
		"conversations":[
			{"match":"alpha","steps":[{"text":"a1"},{"text":"a2"}]},
			{"match":"beta","repeat":"last","steps":[{"text":"b1"}]}
		]}`)
	var wg sync.WaitGroup
	results := make([]string, 6)
	reqs := []*Request{conv("task alpha", 0), conv("task alpha", 1), conv("beta task", 0), conv("beta task", 4),
		conv("something else", 0), conv("task alpha", 2)}
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		wg.Go(func() {
			resp, err := p.Stream(context.Background(), r, nil)
			errs[i] = err
			if resp != nil {
				results[i] = resp.Text
			}
		})
	}
	wg.Wait()
	if got := strings.Join(results[:5], ","); got != "a1,a2,b1,b1,default" {
		t.Fatalf("got %s", got)
	}
	if e := asError(t, errs[5]); e.Class != ClassScript || !strings.Contains(e.Message, `conversation "alpha"`) {
		t.Fatalf("err %v", e)
	}

	noDefault := mustScript(t, `{"conversations":[{"match":"alpha","steps":[{"text":"a"}]}]}`)
	_, err := noDefault.Stream(context.Background(), conv("gamma", 0), nil)
	if e := asError(t, err); e.Class != ClassScript || !strings.Contains(e.Message, "gamma") {
		t.Fatalf("err %v", e)
	}
}

func TestScriptValidation(t *testing.T) {
	for js, want := range map[string]string{
		``:                            "not a valid script",
		`{}`:                          "no steps",
		`[]`:                          "no steps",
		`{"steps":[{"txt":"typo"}]}`:  `unknown field "txt"`,
		`{"steps":[{"text":"a"}]} {}`: "trailing data",
		`{"repeat":"forever","steps":[{"text":"a"}]}`:                           `"forever" is not one of`,
		`{"steps":[{"finishReason":"done"}]}`:                                   `steps[0].finishReason`,
		`{"steps":[{"toolCalls":[{"arguments":{}}]}]}`:                          "steps[0].toolCalls[0]: name is required",
		`{"steps":[{"toolCalls":[{"name":"x","arguments":[1]}]}]}`:              "must be a JSON object or a string",
		`{"steps":[{"errors":[{"class":"OOPS"}]}]}`:                             `"OOPS" is not a known error class`,
		`{"steps":[{"delayMs":-1}]}`:                                            "must not be negative",
		`{"conversations":[{"match":"","steps":[{"text":"a"}]}]}`:               "match must not be empty",
		`{"conversations":[{"match":"a","steps":[]}]}`:                          "conversations[0]: no steps",
		`{"conversations":[{"match":"a","steps":[{"errors":[{"class":""}]}]}]}`: "conversations[0].steps[0].errors[0].class",
	} {
		_, err := ParseScript([]byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", js, err, want)
		}
	}
}

func TestExampleScripts(t *testing.T) {
	hello, err := New(ProviderScripted, Options{ScriptPath: filepath.Join("..", "..", "examples", "hello.json")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := hello.Stream(context.Background(), conv("hi", 0), nil)
	if err != nil || r.Reasoning == "" || r.Text == "" || r.FinishReason != "stop" {
		t.Fatalf("hello: %+v %v", r, err)
	}
	tools, err := New(ProviderScripted, Options{ScriptPath: filepath.Join("..", "..", "examples", "tools.json")})
	if err != nil {
		t.Fatal(err)
	}
	r, err = tools.Stream(context.Background(), conv("hi", 0), nil)
	if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "bash" ||
		r.ToolCalls[0].Arguments != `{"command":"ls","description":"list files"}` {
		t.Fatalf("tools: %+v %v", r, err)
	}
	if r, err = tools.Stream(context.Background(), conv("hi", 1), nil); err != nil || r.Text == "" {
		t.Fatalf("tools step 2: %+v %v", r, err)
	}
}

func TestLoadScriptErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"steps":[{"text":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(ProviderScripted, Options{ScriptPath: bad})
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkScriptedStep is the provider's share of a step: pick the step,
// build the response and its deltas.
func BenchmarkScriptedStep(b *testing.B) {
	p := mustScript(b, `{"repeat":"cycle","steps":[
		{"reasoning":"I should list the files.","toolCalls":[{"name":"bash","arguments":{"command":"ls","description":"list"}}]},
		{"text":"Here they are."}]}`)
	req := conv("bench", 40)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Stream(ctx, req, func(Delta) {}); err != nil {
			b.Fatal(err)
		}
	}
}
