package tool

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

func TestBuiltins(t *testing.T) {
	tools := Builtins()
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	want := []string{"bash", "edit", "glob", "grep", "job_kill", "job_list", "job_output", "multi_edit", "read", "todo_write", "web_fetch", "write"}
	if !slices.Equal(names, want) {
		t.Fatalf("names = %v", names)
	}
	kinds := map[string]Kind{"bash": KindExecute, "edit": KindMutate, "glob": KindRead, "grep": KindRead, "multi_edit": KindMutate, "job_kill": KindExempt, "job_list": KindExempt, "job_output": KindExempt, "read": KindRead, "todo_write": KindExempt, "web_fetch": KindExecute, "write": KindMutate}
	for i, tl := range tools {
		if tl.Kind() != kinds[tl.Name()] {
			t.Errorf("%s kind %s", tl.Name(), tl.Kind())
		}
		if tl.Description() == "" {
			t.Errorf("%s has no description", tl.Name())
		}
		if tl.ParallelSafe() != (tl.Kind() == KindRead) {
			t.Errorf("%s ParallelSafe = %v", tl.Name(), tl.ParallelSafe())
		}
		// Schemas are valid, compact JSON objects whose required fields exist.
		raw := tl.Schema()
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" {
			t.Fatalf("%s schema: %v", tl.Name(), err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil || !bytes.Equal(compact.Bytes(), raw) {
			t.Errorf("%s schema is not compact", tl.Name())
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s requires unknown %s", tl.Name(), r)
			}
		}
		if !bytes.Equal(Builtins()[i].Schema(), raw) {
			t.Errorf("%s schema not stable", tl.Name())
		}
	}
	rev := slices.Clone(tools)
	slices.Reverse(rev)
	if sorted := Sort(rev); sorted[0].Name() != "bash" || rev[0].Name() != "write" {
		t.Fatal("Sort must sort a copy")
	}
}
