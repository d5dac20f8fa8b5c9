package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// A nested AGENTS.md (or CLAUDE.md) joins the result of the first call
// that touches a path under its folder, top folder first, once a session —
// also across a resume; the context message's own files are not repeated,
// and the files shown are recorded on the result.
func TestNestedInstructionsJoinTheFirstResultUnderThem(t *testing.T) {
	read := func(id, path string) model.ToolCall {
		return model.ToolCall{ID: id, Name: "read", Arguments: `{"file_path":"` + path + `"}`}
	}
	h := newHarness(t,
		calls(read("r1", "pkg/deep/a.go")), calls(read("r2", "pkg/deep/b.go"), read("r3", "pkg/other.go")), text("done"),
		calls(read("r4", "pkg/deep/a.go"), read("r5", "lib/x.go")), text("done again"))
	files := map[string]string{
		"AGENTS.md": "ROOT RULES", "pkg/AGENTS.md": "PKG RULES", "pkg/deep/CLAUDE.md": "DEEP RULES",
		"lib/AGENTS.md": "LIB RULES", "pkg/deep/a.go": "package a", "pkg/deep/b.go": "package b",
		"pkg/other.go": "package p", "lib/x.go": "package lib",
	}
	for name, body := range files {
		p := filepath.Join(h.cwd, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := h.session()
	if res := run(t, s, "work"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn: %+v", res.Reason)
	}
	got := nestedResults(s.Events())
	r1 := got["r1"]
	if !strings.Contains(r1.text, "PKG RULES") || !strings.Contains(r1.text, "DEEP RULES") ||
		strings.Index(r1.text, "PKG RULES") > strings.Index(r1.text, "DEEP RULES") || strings.Contains(r1.text, "ROOT RULES") {
		t.Fatalf("the first result under pkg/deep: %q", r1.text)
	}
	if len(r1.files) != 2 || !strings.HasSuffix(r1.files[0].Path, "pkg/AGENTS.md") || !strings.HasSuffix(r1.files[1].Path, "pkg/deep/CLAUDE.md") {
		t.Fatalf("recorded instructions %+v", r1.files)
	}
	for _, id := range []string{"r2", "r3"} {
		if strings.Contains(got[id].text, "RULES") || len(got[id].files) != 0 {
			t.Fatalf("%s repeats instructions already shown: %q", id, got[id].text)
		}
	}
	s2 := reopen(t, s, h.newRuntime())
	if res := run(t, s2, "more"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn after resume: %+v", res.Reason)
	}
	got = nestedResults(s2.Events())
	if strings.Contains(got["r4"].text, "RULES") {
		t.Fatalf("shown again after a resume: %q", got["r4"].text)
	}
	if !strings.Contains(got["r5"].text, "LIB RULES") {
		t.Fatalf("lib's instructions not shown with its first result: %q", got["r5"].text)
	}
}

type nestedResult struct {
	text  string
	files []event.InstructionFile
}

func nestedResults(evs []event.Event) map[string]nestedResult {
	out := map[string]nestedResult{}
	for _, e := range evs {
		if e.Type != event.TypeToolResult {
			continue
		}
		tr, _ := event.Decode[event.ToolResult](e)
		out[tr.Message.Source.CallID] = nestedResult{text: event.ResultText(tr.Result()), files: tr.Instructions}
	}
	return out
}
