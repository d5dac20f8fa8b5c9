package core

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
)

// commitCommand is a command file as Claude Code users write one: it
// may stage and commit without asking, and runs on another model.
const commitCommand = "---\ndescription: Commit the staged work\nallowed-tools: Bash(git add:*), Bash(git commit:*), Read\nmodel: deepseek-v4-pro\n---\nCommit: $ARGUMENTS\n"

// askRecorder answers every permission request with allow once and keeps
// the requests.
type askRecorder struct {
	mu    sync.Mutex
	asked []permission.Request
}

func (a *askRecorder) Ask(_ context.Context, r permission.Request) (permission.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	return permission.AllowOnce, nil
}

func (a *askRecorder) commands() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, r := range a.asked {
		out = append(out, r.Command)
	}
	return out
}

// runCommandTurn runs /name args as a door does and waits for its turn.
func runCommandTurn(t *testing.T, s *Session, name, args string) TurnResult {
	t.Helper()
	res, err := s.RunCommand(context.Background(), name, args)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := s.PromptWith(context.Background(), []event.ContentBlock{event.Text(res.Prompt)}, PromptOptions{Command: res.Turn})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tk.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("turn did not end")
	}
	return tk.Result()
}

func TestCommandModelAndAllowedToolsHoldForItsTurn(t *testing.T) {
	steps := []stepFunc{
		calls(model.ToolCall{ID: "add", Name: "bash", Arguments: `{"command":"git add -A"}`},
			model.ToolCall{ID: "ls", Name: "bash", Arguments: `{"command":"echo listed"}`}),
		text("committed"),
		calls(model.ToolCall{ID: "add2", Name: "bash", Arguments: `{"command":"git add -A"}`}),
		text("staged"),
	}
	h := extHarness(t, true, map[string]string{".claude/commands/commit.md": commitCommand}, steps...)
	asker := &askRecorder{}
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, PermissionMode: permission.ModeAsk, Asker: asker})
	if err != nil {
		t.Fatal(err)
	}
	if res := runCommandTurn(t, s, "commit", "the parser fix"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	// The listed command ran without a question; the unlisted one asked.
	if got := asker.commands(); !slices.Equal(got, []string{"echo listed"}) {
		t.Errorf("asked about %q, want only the unlisted command", got)
	}
	reqs := h.prov.requests()
	if reqs[0].Model != "deepseek-v4-pro" || reqs[1].Model != "deepseek-v4-pro" {
		t.Errorf("the command's turn ran on %q, %q", reqs[0].Model, reqs[1].Model)
	}
	var start event.TurnStart
	var decided []event.PermissionDecision
	for _, e := range s.Events() {
		switch e.Type {
		case event.TypeTurnStart:
			if start.Turn == 0 {
				start, _ = event.Decode[event.TurnStart](e)
			}
		case event.TypePermissionDecision:
			d, _ := event.Decode[event.PermissionDecision](e)
			decided = append(decided, d)
		}
	}
	if start.Model != "deepseek-v4-pro" || start.Command == nil || start.Command.Name != "commit" ||
		!slices.Equal(start.Command.AllowedTools, []string{"bash(git add)", "bash(git commit)", "read(*)"}) {
		t.Errorf("turn/start %+v %+v", start, start.Command)
	}
	if len(decided) < 1 || decided[0].By != permission.ByRule || !strings.Contains(decided[0].Rule, "allowed-tools of /commit") {
		t.Errorf("decisions %+v", decided)
	}

	// The next prompt is an ordinary turn: the session's model, and the
	// same command asks again.
	if res := run(t, s, "stage again"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	if m := h.prov.requests()[2].Model; m != "m1" {
		t.Errorf("the next turn ran on %q", m)
	}
	if got := asker.commands(); !slices.Equal(got, []string{"echo listed", "git add -A"}) {
		t.Errorf("asked about %q: the grant outlived its turn", got)
	}
}

func TestCommandTurnOptionsSurviveAResume(t *testing.T) {
	h := extHarness(t, true, map[string]string{".dsh/commands/pro.md": "---\nmodel: deepseek-v4-pro\n---\nThink hard.\n"}, text("ok"), text("ok too"))
	s := h.session()
	res, err := s.RunCommand(context.Background(), "pro", "")
	if err != nil || res.Turn == nil || res.Turn.Model != "deepseek-v4-pro" {
		t.Fatalf("%+v %v", res, err)
	}
	// Queued behind a busy turn, then the process goes away: the resumed
	// session runs the prompt with what its command asked.
	if _, err := s.emit(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Inserted: []event.Message{{ID: "m-pro",
		Role: "user", Content: []event.ContentBlock{event.Text(res.Prompt)}, Source: event.Source{Kind: "user"}, Command: res.Turn}}}); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, s, h.rt)
	run(t, s2, "and then this")
	reqs := h.prov.requests()
	if len(reqs) < 1 || reqs[0].Model != "deepseek-v4-pro" {
		t.Fatalf("the requeued command prompt ran on %q", reqs[0].Model)
	}
	if last := reqs[0].Messages[len(reqs[0].Messages)-1].Content; !strings.HasPrefix(last, "Think hard.") {
		t.Errorf("the command's turn took along another prompt: %q", last)
	}
}

func TestCommandModelUnknownOrClaudes(t *testing.T) {
	files := map[string]string{
		".dsh/commands/gpt.md":    "---\nmodel: gpt-4o\n---\nHi.\n",
		".dsh/commands/haiku.md":  "---\nmodel: claude-3-5-haiku-20241022\n---\nHi.\n",
		".dsh/commands/sonnet.md": "---\nmodel: sonnet\nallowed-tools: Bash\n---\nHi.\n",
	}
	h := &harness{t: t, prov: &testProvider{}, root: t.TempDir(), cwd: t.TempDir()}
	writeTree(t, h.cwd, files)
	h.rt = h.runtimeWith(func(c *Config) { c.Defaults.Provider = model.ProviderDeepSeek })
	s := h.session()
	_, err := s.RunCommand(context.Background(), "gpt", "")
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), `model "gpt-4o"`) || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("unknown model: %v", err)
	}
	for _, name := range []string{"haiku", "sonnet"} {
		// Claude's models run on the session's; an untrusted project's
		// allowed-tools widen nothing.
		res, err := s.RunCommand(context.Background(), name, "")
		if err != nil || res.Turn != nil {
			t.Errorf("/%s: %+v %v", name, res.Turn, err)
		}
	}
	if n := len(h.prov.requests()); n != 0 {
		t.Errorf("%d model calls", n)
	}
}
