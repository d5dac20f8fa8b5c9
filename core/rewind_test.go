package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

func writeCall(id, path, content string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "write", Arguments: fmt.Sprintf(`{"file_path":%q,"content":%q}`, path, content)}
}

func bashCall(id, cmd string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "bash", Arguments: fmt.Sprintf(`{"command":%q,"description":"change files"}`, cmd)}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// userTexts are the user prompts of the last model request.
func userTexts(reqs []*model.Request) []string {
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" && m.Kind == "" && !model.IsContext(m) {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestRewindRestoresToolAndCommandChangesAndUndo(t *testing.T) {
	h := newHarness(t)
	cwd := h.cwd
	os.WriteFile(filepath.Join(cwd, "keep.txt"), []byte("v0"), 0o644)
	os.WriteFile(filepath.Join(cwd, "doomed.txt"), []byte("d0"), 0o644)
	h.prov.steps = []stepFunc{
		calls(writeCall("w1", filepath.Join(cwd, "tool.txt"), "t1"), bashCall("b0", "printf v1 > keep.txt")), text("turn one done"),
		calls(bashCall("b1", "echo new > created.txt; echo v2 > keep.txt; rm doomed.txt tool.txt; mkdir -p sub/deep && echo x > sub/deep/f")),
		text("turn two done"),
		text("turn three after rewind"),
	}
	s := h.session()
	run(t, s, "first")
	run(t, s, "second")
	if readFile(t, filepath.Join(cwd, "created.txt")) != "new\n" {
		t.Fatal("the command did not run")
	}

	turns, err := s.Turns()
	if err != nil || len(turns) != 2 || turns[1].Prompt != "second" || !turns[1].Files {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	res, err := s.Rewind(context.Background(), RewindRequest{Turn: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(cwd, "keep.txt")); got != "v1" {
		t.Errorf("keep.txt = %q, want the first turn's v1", got)
	}
	if got := readFile(t, filepath.Join(cwd, "doomed.txt")); got != "d0" {
		t.Errorf("doomed.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(cwd, "tool.txt")); got != "t1" {
		t.Errorf("the write tool's file = %q", got)
	}
	for _, gone := range []string{"created.txt", "sub"} {
		if _, err := os.Stat(filepath.Join(cwd, gone)); !os.IsNotExist(err) {
			t.Errorf("%s still exists: %v", gone, err)
		}
	}
	if res.ChangeCount != 5 || !slices.Equal(res.RewoundTurns, []int{2}) {
		t.Errorf("result = %+v", res.Rewind)
	}

	// The conversation continues from before turn 2: the model never sees it.
	run(t, s, "third")
	if got := userTexts(h.prov.requests()); !slices.Equal(got, []string{"first", "third"}) {
		t.Fatalf("the model saw prompts %q", got)
	}
	turns, _ = s.Turns()
	if len(turns) != 3 || !turns[1].Rewound || turns[2].Turn != 3 || turns[2].Rewound {
		t.Fatalf("turns after rewind = %+v", turns)
	}
	if _, err := s.Rewind(context.Background(), RewindRequest{Turn: 2}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("rewind of a rewound turn: %v", err)
	}

	// Undo puts files and conversation back as just before the rewind.
	if _, err := s.Rewind(context.Background(), RewindRequest{Undo: true}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(cwd, "keep.txt")); got != "v2\n" {
		t.Errorf("after undo keep.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(cwd, "sub/deep/f")); got != "x\n" {
		t.Errorf("after undo sub/deep/f = %q", got)
	}
	if _, err := s.Rewind(context.Background(), RewindRequest{Undo: true}); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("second undo: %v", err)
	}
	set := Rewound(mustTranscript(t, s))
	turns, _ = s.Turns()
	if turns[1].Rewound || !turns[2].Rewound || set.Empty() {
		t.Fatalf("turns after undo = %+v", turns)
	}

	// A resume rebuilds the same conversation: turns 1 and 2, not 3.
	s2 := reopen(t, s, h.rt)
	h.prov.steps = append(h.prov.steps, text("four"))
	run(t, s2, "fourth")
	if got := userTexts(h.prov.requests()); !slices.Equal(got, []string{"first", "second", "fourth"}) {
		t.Fatalf("after resume the model saw prompts %q", got)
	}
}

func mustTranscript(t *testing.T, s *Session) []event.Event {
	t.Helper()
	evs, err := s.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestRewindScopesAndConflicts(t *testing.T) {
	h := newHarness(t)
	cwd := h.cwd
	f := filepath.Join(cwd, "f.txt")
	os.WriteFile(f, []byte("v0"), 0o644)
	h.prov.steps = []stepFunc{
		calls(bashCall("b1", "printf v1 > f.txt")), text("one"),
		calls(bashCall("b2", "printf v2 > f.txt")), text("two"),
		text("three"),
	}
	s := h.session()
	run(t, s, "first")
	run(t, s, "second")

	// Files only: the conversation keeps both turns.
	if _, err := s.Rewind(context.Background(), RewindRequest{Turn: 2, Scope: event.ScopeFiles}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f); got != "v1" {
		t.Fatalf("files-only rewind: f = %q", got)
	}
	turns, _ := s.Turns()
	if turns[1].Rewound {
		t.Fatal("a files-only rewind took the turn out of the conversation")
	}
	if _, err := s.Rewind(context.Background(), RewindRequest{Undo: true}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f); got != "v2" {
		t.Fatalf("undo of files-only: f = %q", got)
	}

	// A change made outside the agent is not overwritten unless forced.
	os.WriteFile(f, []byte("mine"), 0o644)
	_, err := s.Rewind(context.Background(), RewindRequest{Turn: 1})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrRewindConflict) || !slices.Equal(ce.Files, []string{f}) {
		t.Fatalf("conflict: %v", err)
	}
	if got := readFile(t, f); got != "mine" {
		t.Fatalf("a refused rewind changed the file: %q", got)
	}
	// Conversation only leaves the files alone.
	if _, err := s.Rewind(context.Background(), RewindRequest{Turn: 2, Scope: event.ScopeConversation}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f); got != "mine" {
		t.Fatalf("conversation-only rewind changed the file: %q", got)
	}
	run(t, s, "third")
	if got := userTexts(h.prov.requests()); !slices.Equal(got, []string{"first", "third"}) {
		t.Fatalf("the model saw prompts %q", got)
	}
	// Forced: restored, and the undo brings back the outside change.
	res, err := s.Rewind(context.Background(), RewindRequest{Turn: 1, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f); got != "v0" || !slices.Equal(res.Conflicts, []string{f}) {
		t.Fatalf("forced: f = %q, conflicts %v", got, res.Conflicts)
	}
	if _, err := s.Rewind(context.Background(), RewindRequest{Undo: true}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f); got != "mine" {
		t.Fatalf("undo of a forced rewind: f = %q", got)
	}
}

func TestRewindRefusals(t *testing.T) {
	started := make(chan struct{})
	h := newHarness(t, text("one"), func(ctx context.Context, _ *model.Request) (*model.Response, error) {
		close(started)
		<-ctx.Done()
		return nil, &model.Error{Class: model.ClassAborted, Message: "cancelled", Err: ctx.Err()}
	})
	s := h.session()
	if _, err := s.Rewind(context.Background(), RewindRequest{Turn: 1}); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "no turns yet") {
		t.Fatalf("no turns: %v", err)
	}
	run(t, s, "first")
	for _, req := range []RewindRequest{{Turn: 5}, {Turn: 0}, {Turn: 1, Scope: "everything"}} {
		if _, err := s.Rewind(context.Background(), req); !errors.Is(err, ErrBadInput) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	if _, err := s.Rewind(context.Background(), RewindRequest{Undo: true}); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("undo with none: %v", err)
	}
	tk, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("long")})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := s.Rewind(context.Background(), RewindRequest{Turn: 1}); !errors.Is(err, ErrBusy) {
		t.Fatalf("rewind during a turn: %v", err)
	}
	s.Cancel(nil)
	<-tk.Done()
}

func TestRewindAdditionalRootAndNonGitWorkspace(t *testing.T) {
	h := newHarness(t)
	extra := t.TempDir()
	other := filepath.Join(extra, "lib.go")
	h.prov.steps = []stepFunc{
		calls(bashCall("b1", fmt.Sprintf("echo changed > %q; echo made > here.txt", other))), text("done"),
	}
	os.WriteFile(other, []byte("orig"), 0o644)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, AdditionalDirs: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "change both")
	if _, err := s.Rewind(context.Background(), RewindRequest{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, other); got != "orig" {
		t.Fatalf("the additional root's file = %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "here.txt")); !os.IsNotExist(err) {
		t.Fatal("the workspace file is still there")
	}
}
