package model

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

func TestParseTextCalls(t *testing.T) {
	v3 := "I will list the files.\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>bash\n```json\n" +
		`{"command": "ls", "description": "list"}` + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
	v31 := `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read<｜tool▁sep｜>{"file_path":"a.go"}<｜tool▁call▁end｜>` +
		`<｜tool▁call▁begin｜>glob<｜tool▁sep｜>{"pattern":"*.go"}<｜tool▁call▁end｜><｜tool▁calls▁end｜> done`
	dsml := "Let me check.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"bash\">\n" +
		"<｜DSML｜parameter name=\"command\" string=\"true\">echo \"hi\" && ls</｜DSML｜parameter>\n" +
		"<｜DSML｜parameter name=\"timeout_ms\" string=\"false\">5000</｜DSML｜parameter>\n" +
		"</｜DSML｜invoke>\n<｜DSML｜invoke name=\"todo_write\">\n" +
		"<｜DSML｜parameter name=\"todos\" string=\"false\">[{\"content\":\"x\",\"status\":\"pending\"}]</｜DSML｜parameter>\n" +
		"</｜DSML｜invoke>\n</｜DSML｜function_calls>"
	rows := []struct {
		name, text, rest string
		calls            []ToolCall
		broken           string // substring; "" = none
	}{
		{name: "plain text", text: "no calls here", rest: "no calls here"},
		{name: "v3 with type and fence", text: v3, rest: "I will list the files.",
			calls: []ToolCall{{Name: "bash", Arguments: `{"command": "ls", "description": "list"}`}}},
		{name: "v3.1 two calls, text after", text: v31, rest: "done",
			calls: []ToolCall{{Name: "read", Arguments: `{"file_path":"a.go"}`}, {Name: "glob", Arguments: `{"pattern":"*.go"}`}}},
		{name: "ascii bars", text: `<|tool_calls_begin|><|tool_call_begin|>glob<|tool_sep|>{}<|tool_call_end|><|tool_calls_end|>`,
			calls: []ToolCall{{Name: "glob", Arguments: `{}`}}},
		{name: "bare v3 call", text: `x <｜tool▁call▁begin｜>glob<｜tool▁sep｜>{"pattern":"a"}<｜tool▁call▁end｜>`, rest: "x",
			calls: []ToolCall{{Name: "glob", Arguments: `{"pattern":"a"}`}}},
		{name: "dsml", text: dsml, rest: "Let me check.",
			calls: []ToolCall{{Name: "bash", Arguments: `{"command":"echo \"hi\" && ls","timeout_ms":5000}`},
				{Name: "todo_write", Arguments: `{"todos":[{"content":"x","status":"pending"}]}`}}},
		{name: "half-written v3", text: "ok <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>bash\n```json\n{\"comm",
			broken: "not closed"},
		{name: "half-written dsml", text: "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"bash\">\n<｜DSML｜parameter name=\"command\" string=\"true\">ls",
			broken: "not closed"},
		{name: "dsml junk inside", text: "<｜DSML｜function_calls>\nplease run ls\n</｜DSML｜function_calls>", broken: "unexpected text"},
		{name: "bare invoke cut", text: "<｜DSML｜invoke name=\"bash\">", broken: "not complete"},
		{name: "fenced example stays text", text: "The format is:\n```\n" + dsml[len("Let me check.\n\n"):] + "\n```\nThat is all.",
			rest: "The format is:\n```\n" + dsml[len("Let me check.\n\n"):] + "\n```\nThat is all."},
		{name: "inline code example", text: "Calls start with `<｜DSML｜function_calls>` in V3.2.",
			rest: "Calls start with `<｜DSML｜function_calls>` in V3.2."},
		{name: "call after a closed fence runs", text: "```go\nx := 1\n```\n" + v31, rest: "```go\nx := 1\n```\n done",
			calls: []ToolCall{{Name: "read", Arguments: `{"file_path":"a.go"}`}, {Name: "glob", Arguments: `{"pattern":"*.go"}`}}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got := ParseTextCalls(r.text)
			if r.broken != "" {
				if !strings.Contains(got.Broken, r.broken) || len(got.Calls) != 0 && got.Broken == "" {
					t.Fatalf("broken %q, want %q (calls %v)", got.Broken, r.broken, got.Calls)
				}
				return
			}
			if got.Broken != "" {
				t.Fatalf("broken: %s", got.Broken)
			}
			if got.Text != r.rest {
				t.Errorf("text %q, want %q", got.Text, r.rest)
			}
			if len(got.Calls) != len(r.calls) {
				t.Fatalf("calls %+v, want %+v", got.Calls, r.calls)
			}
			for i, c := range got.Calls {
				if c != r.calls[i] {
					t.Errorf("call %d %+v, want %+v", i, c, r.calls[i])
				}
				if !json.Valid([]byte(c.Arguments)) {
					t.Errorf("call %d arguments not JSON: %s", i, c.Arguments)
				}
			}
		})
	}
}

// The fake server tells summary calls by the instruction's first words.
func TestSummaryInstructionStartMatchesTheFakeServer(t *testing.T) {
	if modeltest.SummaryInstructionStart != SummaryInstructionStart {
		t.Fatal("modeltest.SummaryInstructionStart differs from model's")
	}
}
