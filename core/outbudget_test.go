package core

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// TestRequestsAskForWhatTheWindowLeaves: max_tokens is the cap only while
// it fits beside the prompt; the summary call asks for at most 32,768, and
// neither sends tool_choice.
func TestRequestsAskForWhatTheWindowLeaves(t *testing.T) {
	h := newHarness(t, text("one"), text("SUMMARY"))
	h.prov.caps = model.Caps{Efforts: []string{"off", "high"}, ContextWindow: 200_000, DefaultMaxTokens: 256_000}
	s := h.session()
	run(t, s, "hello")
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	reqs := h.prov.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	step, sum := reqs[0], reqs[1]
	if step.MaxTokens <= 0 || step.MaxTokens > 200_000-200_000/32 || step.MaxTokens < 150_000 {
		t.Fatalf("step max_tokens %d for a 200k window", step.MaxTokens)
	}
	if !sum.Summary || sum.ToolChoice != "" || sum.MaxTokens != summaryMaxTokens {
		t.Fatalf("summary call: summary %v tool_choice %q max_tokens %d", sum.Summary, sum.ToolChoice, sum.MaxTokens)
	}
	last := sum.Messages[len(sum.Messages)-1]
	if !strings.HasPrefix(last.Content, model.SummaryInstructionStart) || !strings.Contains(last.Content, "Do not call any tool") {
		t.Fatalf("summary instruction %q", last.Content)
	}
}

// TestRefusalNamingTheCompletionLowersIt: "P in the messages, K in the
// completion" is answered by asking for what fits, at once, without a
// compaction.
func TestRefusalNamingTheCompletionLowersIt(t *testing.T) {
	refuse := func(context.Context, *model.Request) (*model.Response, error) {
		return nil, &model.Error{Class: model.ClassContextWindow, Status: 400, Message: "deepseek-official: HTTP 400: " +
			"This model's maximum context length is 131072 tokens. However, you requested 265000 tokens (9000 in the messages, " +
			"256000 in the completion). Please reduce the length of the messages or completion."}
	}
	h := newHarness(t, refuse, text("fits"))
	h.prov.caps = model.Caps{Efforts: []string{"off", "high"}, ContextWindow: 1_000_000, DefaultMaxTokens: 256_000}
	s := h.session()
	if res := run(t, s, "hello"); res.Reason.Kind != event.ReasonCompleted || res.Text != "fits" {
		t.Fatalf("turn %+v", res)
	}
	reqs := h.prov.requests()
	if len(reqs) != 2 || reqs[1].MaxTokens != 131072-9000-131072/64 {
		t.Fatalf("%d requests, retry max_tokens %d", len(reqs), reqs[len(reqs)-1].MaxTokens)
	}
	for _, ev := range s.Events() {
		if strings.HasPrefix(ev.Type, "compaction/") {
			t.Fatalf("compacted: %s", ev.Type)
		}
	}
}

// TestSummaryToolCallIsDroppedAndAskedAgain: a tool call in the summary
// reply is not run and the summary is asked for once more.
func TestSummaryToolCallIsDroppedAndAskedAgain(t *testing.T) {
	h := newHarness(t, text("one"), calls(model.ToolCall{ID: "x", Name: "glob", Arguments: `{"pattern":"*"}`}), text("SUMMARY"))
	s := h.session()
	run(t, s, "hello")
	cp, err := s.Compact(context.Background(), "")
	if err != nil || !strings.Contains(cp.Summary, "SUMMARY") {
		t.Fatalf("compact %v %+v", err, cp)
	}
	if n := len(h.prov.requests()); n != 3 {
		t.Fatalf("%d requests", n)
	}
	for _, ev := range s.Events() {
		if ev.Type == event.TypeToolCall || ev.Type == event.TypeToolResult {
			t.Fatalf("the summary's call was recorded: %s", ev.Type)
		}
	}
}

// TestOverloadRetriesDoubleWithinTheBudget: 503s are retried after 0.5, 1,
// 2, 4 … s (jittered), Retry-After wins, until about 2 minutes of waiting;
// then the turn says the service is overloaded. The clock is injected.
func TestOverloadRetriesDoubleWithinTheBudget(t *testing.T) {
	busy := func(after time.Duration) stepFunc {
		return func(context.Context, *model.Request) (*model.Response, error) {
			return nil, &model.Error{Class: model.ClassServer, Status: 503, RetryAfter: after, Message: "HTTP 503: busy"}
		}
	}
	steps := []stepFunc{busy(0), busy(0), busy(0), busy(7 * time.Second)}
	for range 30 {
		steps = append(steps, busy(0))
	}
	h := newHarness(t, steps...)
	var waits []time.Duration
	rt := h.runtimeWith(func(cfg *Config) {
		cfg.Backoff = model.Backoff
		cfg.After = func(d time.Duration) <-chan time.Time {
			waits = append(waits, d)
			ch := make(chan time.Time, 1)
			ch <- time.Time{}
			return ch
		}
	})
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, s, "hello")
	if res.Reason.Kind != event.ReasonError || !strings.Contains(res.Reason.Error.Message, "the model service is overloaded") {
		t.Fatalf("turn %+v", res.Reason.Error)
	}
	within := func(d, want time.Duration) bool { return d >= want*9/10 && d <= want*11/10 }
	if len(waits) < 6 || !within(waits[0], 500*time.Millisecond) || !within(waits[1], time.Second) ||
		!within(waits[2], 2*time.Second) || waits[3] != 7*time.Second || !within(waits[4], 8*time.Second) {
		t.Fatalf("waits %v", waits)
	}
	total := time.Duration(0)
	for _, w := range waits {
		total += w
	}
	if total > DefaultRetryBudget || total < DefaultRetryBudget-40*time.Second {
		t.Fatalf("waited %s in all (%v)", total, waits)
	}
}

// TestCompactionKeepsWorkingState: the todo list and the running jobs are
// in every summary exactly, and the instruction asks for the user's words
// verbatim and the previous summary merged.
func TestCompactionKeepsWorkingState(t *testing.T) {
	h := newHarness(t,
		calls(model.ToolCall{ID: "t", Name: "todo_write", Arguments: `{"todos":[{"content":"fix the parser","status":"in_progress"},{"content":"run the tests","status":"pending"}]}`},
			model.ToolCall{ID: "b", Name: "bash", Arguments: `{"command":"exec sleep 1000","description":"serve","run_in_background":true}`}),
		text("working"), text("SUMMARY"))
	s := h.session()
	run(t, s, "fix it; never touch the vendor folder")
	cp, err := s.Compact(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SUMMARY", "## Todo list", "- [in_progress] fix the parser", "- [pending] run the tests",
		"## Background jobs still running", "job-1 (running since", "exec sleep 1000"} {
		if !strings.Contains(cp.Summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, cp.Summary)
		}
	}
	instr := h.prov.requests()[2].Messages
	last := instr[len(instr)-1].Content
	if !strings.Contains(last, "word for word") || !strings.Contains(last, "merge it in") {
		t.Fatalf("instruction %q", last)
	}
}

// TestSmallCapIsSentAsGiven: the floor on the room left does not raise a
// cap the user set below it (--max-tokens 777 is sent as 777).
func TestSmallCapIsSentAsGiven(t *testing.T) {
	h := newHarness(t, text("one"))
	h.prov.caps = model.Caps{Efforts: []string{"off", "high"}, ContextWindow: 200_000, DefaultMaxTokens: 777}
	run(t, h.session(), "hello")
	if reqs := h.prov.requests(); len(reqs) != 1 || reqs[0].MaxTokens != 777 {
		t.Fatalf("requests %d, max_tokens %d, want 777", len(reqs), reqs[0].MaxTokens)
	}
}
