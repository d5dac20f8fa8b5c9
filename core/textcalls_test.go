package core

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

func reply(text string) stepFunc {
	return func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Text: text, FinishReason: "stop"}, nil
	}
}

const v3Write = "Writing it now.\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>write\n```json\n" +
	`{"file_path": "out.txt", "content": "from v3\n"}` + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"

const dsmlWrite = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"write\">\n" +
	"<｜DSML｜parameter name=\"file_path\" string=\"true\">out.txt</｜DSML｜parameter>\n" +
	"<｜DSML｜parameter name=\"content\" string=\"true\">from dsml\n</｜DSML｜parameter>\n" +
	"</｜DSML｜invoke>\n</｜DSML｜function_calls>"

func toolCalls(evs []event.Event) []event.ToolCall {
	var out []event.ToolCall
	for _, ev := range evs {
		if ev.Type == event.TypeToolCall {
			c, _ := event.Decode[event.ToolCall](ev)
			out = append(out, c)
		}
	}
	return out
}

// TestCallsWrittenAsText: both DeepSeek markups in a reply's text run as
// the calls they are, recorded fromText, the text around kept as text.
func TestCallsWrittenAsText(t *testing.T) {
	for name, c := range map[string]struct{ markup, want, text string }{
		"v3":   {v3Write, "from v3\n", "Writing it now."},
		"dsml": {dsmlWrite, "from dsml\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, reply(c.markup), text("written"))
			s := h.session()
			res := run(t, s, "write out.txt")
			if res.Reason.Kind != event.ReasonCompleted || res.Text != "written" {
				t.Fatalf("turn %+v", res)
			}
			got, err := os.ReadFile(filepath.Join(h.cwd, "out.txt"))
			if err != nil || string(got) != c.want {
				t.Fatalf("out.txt %q, %v", got, err)
			}
			tcs := toolCalls(s.Events())
			if len(tcs) != 1 || !tcs[0].FromText || tcs[0].Name != "write" {
				t.Fatalf("tool calls %+v", tcs)
			}
			// The next request sends the call as a call, and the text
			// around it without the markup.
			reqs := h.prov.requests()
			var asst *model.Message
			for i := range reqs[1].Messages {
				if reqs[1].Messages[i].Role == "assistant" {
					asst = &reqs[1].Messages[i]
				}
			}
			if asst == nil || len(asst.ToolCalls) != 1 || asst.Content != c.text || strings.Contains(asst.Content, "｜") {
				t.Fatalf("assistant message sent back %+v", asst)
			}
		})
	}
}

// TestMarkupUnknownTool: markup naming no tool gets the usual answer.
func TestMarkupUnknownTool(t *testing.T) {
	h := newHarness(t, reply(`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>shell<｜tool▁sep｜>{"cmd":"ls"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`),
		text("ok"))
	s := h.session()
	if res := run(t, s, "list"); res.Reason.Kind != event.ReasonCompleted || res.Text != "ok" {
		t.Fatalf("turn %+v", res)
	}
	for _, ev := range s.Events() {
		if ev.Type == event.TypeToolResult {
			tr, _ := event.Decode[event.ToolResult](ev)
			if txt := event.ResultText(tr.Result()); !strings.Contains(txt, `unknown tool "shell"`) {
				t.Fatalf("result %s", txt)
			}
			return
		}
	}
	t.Fatal("no tool result")
}

// TestBrokenMarkupIsCorrectedOnce: half-written markup is never the
// answer: the model is told and the step retried once; a second broken
// reply ends the turn with an error.
func TestBrokenMarkupIsCorrectedOnce(t *testing.T) {
	half := "Let me look.\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"glob\">\n<｜DSML｜parameter name=\"pattern\" string=\"true\">*.go"
	t.Run("corrected", func(t *testing.T) {
		h := newHarness(t, reply(half), text("no Go files"))
		s := h.session()
		res := run(t, s, "find go files")
		if res.Reason.Kind != event.ReasonCompleted || res.Text != "no Go files" {
			t.Fatalf("turn %+v", res)
		}
		reqs := h.prov.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		msgs := reqs[1].Messages
		last, prev := msgs[len(msgs)-1], msgs[len(msgs)-2]
		if prev.Role != "assistant" || prev.Content != half || last.Role != "user" ||
			!strings.Contains(last.Content, "could not be parsed (the DSML function_calls block is not closed") {
			t.Fatalf("retry ends with %+v / %+v", prev, last)
		}
		for _, ev := range s.Events() {
			if ev.Type == event.TypeAssistantMessage && strings.Contains(string(ev.Data), "DSML") {
				t.Fatalf("the broken reply was committed: %s", ev.Data)
			}
		}
	})
	t.Run("twice", func(t *testing.T) {
		h := newHarness(t, reply(half), reply(half))
		s := h.session()
		res := run(t, s, "find go files")
		if res.Reason.Kind != event.ReasonError || res.Reason.Error == nil || res.Reason.Error.Code != string(model.ClassMalformed) {
			t.Fatalf("turn %+v", res.Reason)
		}
		if res.Text != "" {
			t.Fatalf("the markup became the answer: %q", res.Text)
		}
	})
}

// TestFencedMarkupIsAnExample: markup the model shows in a fenced block
// (asked "show me the DSML format") is text, not a call.
func TestFencedMarkupIsAnExample(t *testing.T) {
	answer := "The DSML form looks like this:\n\n```\n" + dsmlWrite + "\n```\n"
	h := newHarness(t, reply(answer))
	s := h.session()
	res := run(t, s, "show me the DSML format")
	if res.Reason.Kind != event.ReasonCompleted || res.Text != answer {
		t.Fatalf("turn %+v", res)
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "out.txt")); err == nil {
		t.Fatal("the example ran")
	}
	if tcs := toolCalls(s.Events()); len(tcs) != 0 {
		t.Fatalf("calls %+v", tcs)
	}
}

// TestPromptRules: the system prompt holds the rules a real repository
// needs (a question answered without edits, git safety, file tools over
// cat/sed, tests before done, no interactive commands), byte-stable.
func TestPromptRules(t *testing.T) {
	h := newHarness(t)
	cfg := event.Config{Model: "deepseek-flash"}
	p := h.rt.systemPrompt(cfg, h.cwd, false)
	for _, want := range []string{"A question is not a request to change things", "edit no files",
		"stage the files you changed by name", "never skip hooks (no --no-verify)", "never --amend after a failed hook",
		"Never push, and never force anything", "not cat, head, tail, find, grep, sed or echo through bash",
		"run the project's own tests that cover it", "`git commit -m`, `--no-edit`, `--yes`"} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q", want)
		}
	}
	if p != h.rt.systemPrompt(cfg, h.cwd, false) {
		t.Fatal("the prompt is not byte-stable")
	}
}
