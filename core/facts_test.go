package core

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/tool"
)

// panicky is a tool whose Inspect panics: no door, and not the turn, may
// go down with it.
type panicky struct{ tool.Tool }

func (panicky) Name() string { return "panicky" }
func (panicky) Inspect(json.RawMessage, *tool.Env) (tool.Access, error) {
	panic("inspect blew up")
}

// A committed tool/call carries the facts every door shows: the title,
// kind and paths of the tool that ran (the repaired one when the model
// misspelled its name), computed once by core; a call of an old log gets
// them on read; a tool whose Inspect panics costs its call only.
func TestToolFactsRecordedAtCommit(t *testing.T) {
	h := newHarness(t)
	file := filepath.Join(h.cwd, "notes.txt")
	if err := os.WriteFile(file, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.prov.steps = []stepFunc{calls(
		model.ToolCall{ID: "c0", Name: "Read", Arguments: `{"file_path":"notes.txt"}`},
		model.ToolCall{ID: "c1", Name: "grep", Arguments: `{"pattern":"x"}`},
		model.ToolCall{ID: "c2", Name: "nosuch", Arguments: `{}`},
		model.ToolCall{ID: "c3", Name: "panicky", Arguments: `{}`},
	), text("done")}
	for _, bt := range tool.Builtins() {
		if bt.Name() == "read" {
			h.rt.RegisterTool(panicky{Tool: bt})
		}
	}
	s := h.session()
	defer s.Close(context.Background())
	if res := run(t, s, "look"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("reason %+v", res.Reason)
	}
	got := map[string]event.ToolCall{}
	for _, e := range s.Events() {
		if e.Type == event.TypeToolCall {
			tc, err := event.Decode[event.ToolCall](e)
			if err != nil {
				t.Fatal(err)
			}
			got[tc.CallID] = tc
		}
	}
	want := map[string]event.ToolFacts{
		"c0": {Title: "Read notes.txt", Kind: event.ToolKindRead, Paths: []string{file}},
		"c1": {Title: `Grep "x" in .`, Kind: event.ToolKindSearch, Paths: []string{h.cwd}},
		"c2": {Title: "nosuch", Kind: event.ToolKindOther},
		"c3": {Title: "panicky", Kind: event.ToolKindRead},
	}
	for id, w := range want {
		f := got[id].Facts
		if f == nil || f.Title != w.Title || f.Kind != w.Kind || len(f.Paths) != len(w.Paths) || (len(w.Paths) > 0 && f.Paths[0] != w.Paths[0]) {
			t.Errorf("%s facts = %+v, want %+v", id, f, w)
		}
	}
	if got["c0"].RepairedName != "read" || got["c0"].Tool() != "read" {
		t.Errorf("Read's repaired name %q", got["c0"].RepairedName)
	}
	// An old log's call has no facts: they are computed on read, the same.
	old := got["c0"]
	old.Facts = nil
	if f := s.ToolFacts(old); f.Title != "Read notes.txt" || f.Kind != event.ToolKindRead || len(f.Paths) != 1 {
		t.Errorf("facts of an old call = %+v", f)
	}
	if f := s.ToolFacts(event.ToolCall{CallID: "x", Name: "gone_tool", Arguments: "{"}); f.Title != "gone_tool" || f.Kind != event.ToolKindOther {
		t.Errorf("facts of an old call of a tool that is gone = %+v, want the name and kind other", f)
	}
}
