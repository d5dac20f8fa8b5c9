package core

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// The scenario suite: one row per way a real model misbehaves, each driven
// by the scripted provider through the real loop and tools, checking how
// the turn ends and what the model is told.

type scenario struct {
	name   string
	script model.Script
	// reason is the turn's end kind; detail a substring of its detail (or
	// of its error code and message).
	reason, detail string
	// told are substrings of the tool results, each found in the result
	// of the same index (results in call order across the turn).
	told map[int][]string
	// requests is the number of model calls the turn makes (0: unchecked).
	requests int
	stepCap  int // 0: the default
	check    func(t *testing.T, sc *scenarioRun)
}

type scenarioRun struct {
	cwd     string
	events  []event.Event
	results []string // tool result texts, in order
	reqs    int
}

// countingProvider counts the model calls of a provider.
type countingProvider struct {
	model.Provider
	n int
}

func (p *countingProvider) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	p.n++
	return p.Provider.Stream(ctx, req, d)
}

func call(name string, args any) model.ScriptToolCall {
	raw, _ := json.Marshal(args)
	if s, ok := args.(string); ok {
		raw, _ = json.Marshal(s) // verbatim, possibly invalid JSON
	}
	return model.ScriptToolCall{Name: name, Arguments: raw}
}

func runScenario(t *testing.T, sc scenario) *scenarioRun {
	t.Helper()
	if err := sc.script.Validate(); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	prov := &countingProvider{Provider: model.NewScripted(&sc.script)}
	rt := h.runtimeWith(func(cfg *Config) {
		cfg.NewProvider = func(string) (model.Provider, error) { return prov, nil }
		cfg.Defaults = event.Config{Provider: "scripted", Model: "deepseek-flash"}
		cfg.StepCap = sc.stepCap
	})
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, s, "do the task")
	r := &scenarioRun{cwd: h.cwd, events: s.Events(), reqs: prov.n}
	for _, ev := range r.events {
		if ev.Type == event.TypeToolResult {
			tr, _ := event.Decode[event.ToolResult](ev)
			r.results = append(r.results, event.ResultText(tr.Result()))
		}
	}
	got := res.Reason.Kind
	detail := res.Reason.Detail
	if res.Reason.Error != nil {
		detail += res.Reason.Error.Code + ": " + res.Reason.Error.Message
	}
	if got != sc.reason || !strings.Contains(detail, sc.detail) {
		t.Fatalf("turn ended %s (%q), want %s (%q)\nresults: %q", got, detail, sc.reason, sc.detail, r.results)
	}
	for i, wants := range sc.told {
		if i >= len(r.results) {
			t.Fatalf("no result %d (of %d): %q", i, len(r.results), r.results)
		}
		for _, w := range wants {
			if !strings.Contains(r.results[i], w) {
				t.Errorf("result %d lacks %q:\n%s", i, w, r.results[i])
			}
		}
	}
	if sc.requests > 0 && r.reqs != sc.requests {
		t.Errorf("%d model calls, want %d", r.reqs, sc.requests)
	}
	if sc.check != nil {
		sc.check(t, r)
	}
	return r
}

func steps(st ...model.ScriptStep) model.Script { return model.Script{Steps: st} }

// editMiss is an edit of f.txt whose old_string is not there.
func editMiss(what string) model.ScriptStep {
	return model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("edit",
		map[string]string{"file_path": "f.txt", "old_string": "not " + what, "new_string": "x"})}}
}

func TestScenarios(t *testing.T) {
	missing := map[string]string{"pattern": "*.none"}
	rows := []scenario{{
		name: "duplicate parallel calls are not a loop",
		script: steps(
			model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("glob", missing), call("glob", missing),
				call("glob", missing), call("glob", missing), call("glob", missing)}},
			model.ScriptStep{Text: "nothing there"}),
		reason: event.ReasonCompleted, requests: 2,
		check: func(t *testing.T, r *scenarioRun) {
			if len(r.results) != 5 {
				t.Fatalf("%d results", len(r.results))
			}
			for _, res := range r.results {
				if strings.Contains(res, "loop check") {
					t.Fatalf("a parallel batch was warned as a loop: %s", res)
				}
			}
		},
	}, {
		name:   "an empty reply is retried as EMPTY_RESPONSE, bounded",
		script: steps(model.ScriptStep{Reasoning: "I should answer, but…"}),
		reason: event.ReasonError, detail: "EMPTY_RESPONSE: the model's reply had neither text nor tool calls",
		requests: maxRetries + 1,
		check: func(t *testing.T, r *scenarioRun) {
			attempts := 0
			for _, ev := range r.events {
				switch ev.Type {
				case event.TypeAssistantAttempt:
					a, _ := event.Decode[event.AssistantAttempt](ev)
					if a.Error == nil || a.Error.Code != string(model.ClassEmpty) || a.Usage == nil {
						t.Fatalf("attempt %s", ev.Data)
					}
					attempts++
				case event.TypeAssistantMessage:
					t.Fatal("an empty reply was committed")
				}
			}
			if attempts != maxRetries+1 {
				t.Fatalf("%d attempts", attempts)
			}
		},
	}, {
		name: "a tool call cut off by the output cap: not run, and the turn goes on once",
		script: steps(
			model.ScriptStep{FinishReason: "length", ToolCalls: []model.ScriptToolCall{
				call("glob", missing), call("write", `{"file_path":"big.txt","content":"aaaa`)}},
			model.ScriptStep{Text: "I will write it in parts."}),
		reason: event.ReasonCompleted, requests: 2,
		told: map[int][]string{
			0: {"No files"},
			1: {"not run: your reply reached the output limit (max_tokens 256000, thinking included)", "Split the work"},
		},
		check: func(t *testing.T, r *scenarioRun) {
			if _, err := os.Stat(filepath.Join(r.cwd, "big.txt")); err == nil {
				t.Fatal("the cut-off write ran")
			}
		},
	}, {
		name: "cut off twice in one turn ends it max-tokens",
		script: steps(
			model.ScriptStep{FinishReason: "length", ToolCalls: []model.ScriptToolCall{call("write", `{"file_path":"a","content":"x`)}},
			model.ScriptStep{FinishReason: "length", ToolCalls: []model.ScriptToolCall{call("write", `{"file_path":"a","cont`)}}),
		reason: event.ReasonMaxTokens, requests: 2,
		told: map[int][]string{0: {"not run: your reply reached"}, 1: {"not run: the response was cut off"}},
	}, {
		name: "a tool name wrong only by case or -/_ is repaired and recorded",
		script: steps(
			model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("Glob", missing),
				call("todo-write", map[string]any{"todos": []map[string]string{{"content": "x", "status": "pending"}}})}},
			model.ScriptStep{Text: "ok"}),
		reason: event.ReasonCompleted,
		told: map[int][]string{
			0: {`[dsh: there is no tool "Glob"; this call ran "glob". Use the exact tool names.]`, "No files"},
			1: {`there is no tool "todo-write"; this call ran "todo_write"`},
		},
		check: func(t *testing.T, r *scenarioRun) {
			var repaired []string
			for _, ev := range r.events {
				if ev.Type == event.TypeToolCall {
					c, _ := event.Decode[event.ToolCall](ev)
					repaired = append(repaired, c.Name+"→"+c.RepairedName)
				}
			}
			if strings.Join(repaired, ",") != "Glob→glob,todo-write→todo_write" {
				t.Fatalf("tool/call records %v", repaired)
			}
		},
	}, {
		name: "an unknown tool is told the real tool names",
		script: steps(
			model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("search_files", map[string]string{"q": "x"})}},
			model.ScriptStep{Text: "I will use grep."}),
		reason: event.ReasonCompleted,
		told:   map[int][]string{0: {`unknown tool "search_files"; the call was not run. The tools are: bash, edit, glob, grep, `, "read", "write."}},
	}, {
		name: "the same call with the same result back to back is warned at the 4th, stopped at the 6th",
		script: model.Script{Repeat: model.RepeatLast, Steps: []model.ScriptStep{
			{ToolCalls: []model.ScriptToolCall{call("glob", map[string]string{"pattern": "b*"})}},
			{ToolCalls: []model.ScriptToolCall{call("glob", map[string]string{"pattern": "a*"})}},
		}},
		reason: event.ReasonBlocked, detail: "loop: the same glob call returned the same result 6 times in a row",
		requests: 7,
		told:     map[int][]string{4: {"[dsh loop check: this exact call has now returned this exact result 4 times in a row", "2 more times"}},
		check: func(t *testing.T, r *scenarioRun) {
			for i, res := range r.results {
				if strings.Contains(res, "loop check") != (i == 4) {
					t.Fatalf("result %d: %s", i, res)
				}
			}
		},
	}, {
		name: "edit, then the same build, five times over is work, not a loop",
		script: func() model.Script {
			var st []model.ScriptStep
			for i := range 5 {
				st = append(st,
					model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("write", map[string]string{"file_path": "f.txt", "content": fmt.Sprint(i)})}},
					model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("bash", map[string]string{"command": "echo build failed", "description": "build"})}})
			}
			return steps(append(st, model.ScriptStep{Text: "fixed"})...)
		}(),
		reason: event.ReasonCompleted, requests: 11,
		check: func(t *testing.T, r *scenarioRun) {
			for i, res := range r.results {
				if strings.Contains(res, "loop check") {
					t.Fatalf("result %d warned: %s", i, res)
				}
			}
		},
	}, {
		name: "a cycle of different calls is not a repeat (the step cap bounds it)",
		script: model.Script{Repeat: model.RepeatCycle, Steps: []model.ScriptStep{
			{ToolCalls: []model.ScriptToolCall{call("glob", map[string]string{"pattern": "a*"})}},
			{ToolCalls: []model.ScriptToolCall{call("glob", map[string]string{"pattern": "b*"})}},
		}},
		reason: event.ReasonBlocked, detail: "step cap", requests: 30, stepCap: 30,
	}, {
		name: "a streak of the same failure is warned, then stopped",
		script: steps(
			model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("write", map[string]string{"file_path": "f.txt", "content": "hello\n"})}},
			editMiss("one"), editMiss("two"),
			model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("glob", missing)}}, // another tool between
			editMiss("three"), editMiss("four"), editMiss("five"),
			model.ScriptStep{Text: "never reached"}),
		reason: event.ReasonBlocked, detail: "failure streak: edit failed the same way 5 times in a row: old_string was not found in f.txt",
		requests: 7,
		told:     map[int][]string{5: {"old_string was not found", "[dsh loop check: edit has now failed the same way 4 times in a row."}},
	}, {
		name: "malformed arguments are quoted where they broke",
		script: steps(
			model.ScriptStep{ToolCalls: []model.ScriptToolCall{
				call("glob", `{"pattern": "*.go",, "path": "."}`),
				call("glob", `{"pattern": "*.g`),
				call("glob", `["*.go"]`)}},
			model.ScriptStep{Text: "fixed"}),
		reason: event.ReasonCompleted,
		told: map[int][]string{
			0: {`invalid arguments: not valid JSON: invalid character ',' looking for beginning of object key string at byte 20: …"{\"pattern\": \"*.go\","⟨here⟩", \"path\": \".\"}"`, "The call was not run"},
			1: {`not valid JSON: the arguments end after 16 bytes in the middle of a value: …"{\"pattern\": \"*.g"⟨end⟩`},
			2: {"invalid arguments: expected a JSON object, got an array."},
		},
	}, {
		name: "polling a silent background job is not a loop",
		script: func() model.Script {
			st := []model.ScriptStep{{ToolCalls: []model.ScriptToolCall{call("bash",
				map[string]any{"command": "sleep 30", "description": "wait", "run_in_background": true})}}}
			for range DefaultLoopStopAt + 1 {
				st = append(st, model.ScriptStep{ToolCalls: []model.ScriptToolCall{call("job_output", map[string]string{"job_id": "job-1"})}})
			}
			return steps(append(st, model.ScriptStep{Text: "still building"})...)
		}(),
		reason: event.ReasonCompleted, requests: DefaultLoopStopAt + 3,
		told: map[int][]string{DefaultLoopStopAt + 1: {"(no new output)"}},
		check: func(t *testing.T, r *scenarioRun) {
			for i, res := range r.results {
				if strings.Contains(res, "loop check") {
					t.Fatalf("result %d warned: %s", i, res)
				}
			}
		},
	}, {
		name:   "a refusal ends the turn, empty or not, without a retry",
		script: steps(model.ScriptStep{FinishReason: "content_filter"}),
		reason: event.ReasonRefusal, requests: 1,
	}}
	for _, sc := range rows {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

// TestEmptyReplyThenAnswer: a retried empty reply that is answered the
// second time completes the turn with the answer; the empty attempt is an
// assistant/attempt, not a message.
func TestEmptyReplyThenAnswer(t *testing.T) {
	empty := func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Reasoning: "hmm", FinishReason: "stop"}, nil
	}
	h := newHarness(t, empty, text("the answer"))
	s := h.session()
	res := run(t, s, "q")
	if res.Reason.Kind != event.ReasonCompleted || res.Text != "the answer" {
		t.Fatalf("turn %+v", res)
	}
	var kinds []string
	for _, ev := range s.Events() {
		if ev.Type == event.TypeAssistantAttempt || ev.Type == event.TypeAssistantMessage {
			kinds = append(kinds, ev.Type)
		}
	}
	if fmt.Sprint(kinds) != "[assistant/attempt assistant/message]" {
		t.Fatalf("events %v", kinds)
	}
}
