package core

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// floodTool stands for a tool that does not bound its own output (an MCP
// tool, a subagent): 20,000 numbered rows.
type floodTool struct{}

func (floodTool) Name() string            { return "flood" }
func (floodTool) Description() string     { return "prints a lot" }
func (floodTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (floodTool) Kind() tool.Kind         { return tool.KindRead }
func (floodTool) ParallelSafe() bool      { return true }
func (floodTool) Inspect(json.RawMessage, *tool.Env) (tool.Access, error) {
	return tool.Access{Title: "flood"}, nil
}
func (floodTool) Run(context.Context, json.RawMessage, *tool.Env) tool.Result {
	var b strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&b, "row %d\n", i)
	}
	return tool.TextResult(b.String())
}

// TestOversizedResultSpillsAndReadsInReadOnly: a result over the budget is
// cut once, on lines, and saved whole under the session's directory; a
// read-only session with nobody to ask pages its own spill file, and is
// refused another session's.
func TestOversizedResultSpillsAndReadsInReadOnly(t *testing.T) {
	var spillPath string
	var first int
	otherSpill := filepath.Join(t.TempDir(), "spill", "c-1.txt")
	if err := os.MkdirAll(filepath.Dir(otherSpill), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherSpill, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	readSpill := func(_ context.Context, req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		m := regexp.MustCompile(`lines (\d+)-\d+ \(\d+ bytes\) of 20000 not shown; the whole output is saved in (\S+):`).FindStringSubmatch(last)
		if m == nil {
			return nil, fmt.Errorf("no spill note in %q", last[len(last)-300:])
		}
		fmt.Sscan(m[1], &first)
		spillPath = m[2]
		return &model.Response{FinishReason: "tool_calls", ToolCalls: []model.ToolCall{
			{ID: "r1", Name: "read", Arguments: fmt.Sprintf(`{"file_path":%q,"offset":%d,"limit":2}`, spillPath, first)},
			{ID: "r2", Name: "read", Arguments: fmt.Sprintf(`{"file_path":%q}`, otherSpill)},
		}}, nil
	}
	h := newHarness(t, calls(model.ToolCall{ID: "f", Name: "flood", Arguments: `{}`}), readSpill, text("done"))
	rt, err := New(Config{Store: store.New(h.root), NewProvider: func(string) (model.Provider, error) { return h.prov, nil },
		Defaults: event.Config{Provider: "test", Model: "m"}, PermissionMode: permission.ModeReadOnly,
		Tools: append(tool.Builtins(), floodTool{})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "flood then page"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	if filepath.Dir(filepath.Dir(spillPath)) != s.Dir() {
		t.Fatalf("spill file %s is not under the session's directory %s", spillPath, s.Dir())
	}
	results := map[string]event.ToolResult{}
	for _, e := range s.Events() {
		if e.Type == event.TypeToolResult {
			tr, _ := event.Decode[event.ToolResult](e)
			results[tr.Message.Source.CallID] = tr
		}
	}
	flood := event.ResultText(results["f"].Message.Content[0])
	if len(flood) > tool.OutputBudget {
		t.Fatalf("recorded flood result is %d bytes", len(flood))
	}
	page := results["r1"]
	if page.Error != nil || !strings.Contains(event.ResultText(page.Message.Content[0]), fmt.Sprintf("\trow %d\n", first)) {
		t.Fatalf("reading the own spill file: %+v", page)
	}
	if other := results["r2"]; other.Error == nil || other.Error.Code != event.ToolPermissionDenied {
		t.Fatalf("another session's spill file was not refused: %+v", other)
	}
	// Spill files go with the session.
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := store.New(h.root).Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spillPath); !os.IsNotExist(err) {
		t.Fatalf("spill file left after the session was removed: %v", err)
	}
}

// TestHugeEditEventIsBounded: editing a 12 MB file commits a tool/result
// event of bounded size (it was 46 MiB: both texts whole, and the diff).
func TestHugeEditEventIsBounded(t *testing.T) {
	var b strings.Builder
	for b.Len() < 12<<20 {
		b.WriteString("an ordinary line of a generated file, nothing to see\n")
	}
	h := newHarness(t,
		calls(model.ToolCall{ID: "r", Name: "read", Arguments: `{"file_path":"big.txt","limit":1}`}),
		calls(model.ToolCall{ID: "e", Name: "edit", Arguments: `{"file_path":"big.txt","old_string":"ordinary","new_string":"special","replace_all":true}`}),
		text("done"))
	if err := os.WriteFile(filepath.Join(h.cwd, "big.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := h.session()
	if res := runWithin(t, s, "edit it", 3*time.Minute); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	for _, e := range s.Events() {
		if e.Type != event.TypeToolResult {
			continue
		}
		tr, _ := event.Decode[event.ToolResult](e)
		if tr.Error != nil {
			t.Fatalf("call %s failed: %s", tr.Message.Source.CallID, event.ResultText(tr.Message.Content[0]))
		}
		if len(e.Data) > 2<<20 {
			t.Fatalf("tool/result of call %s is %d bytes", tr.Message.Source.CallID, len(e.Data))
		}
	}
	if got, _ := os.ReadFile(filepath.Join(h.cwd, "big.txt")); !strings.HasPrefix(string(got), "an special line") {
		t.Fatal("the edit was not made")
	}
}
