package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// TestRunAgentPromptAndCutOffRecovery runs the binary against the fake
// DeepSeek server from a subdirectory of a git repository: the request
// sends max_tokens 256000 and a context message before the prompt that
// lists the user's and the repository root's AGENTS.md; a reply cut off by
// the output cap inside a tool call does not fail the task: the cut call
// is told it did not run and the model finishes in the next step.
func TestRunAgentPromptAndCutOffRecovery(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	repo := w.Cwd
	if out, err := exec.Command("git", "init", "-q", "-b", "trunk", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for path, text := range map[string]string{
		filepath.Join(repo, "AGENTS.md"):                     "ROOT: run make check before you finish.\n",
		filepath.Join(repo, "pkg", "x.go"):                   "package pkg\n",
		filepath.Join(w.Home, ".config", "dsh", "AGENTS.md"): "USER: be terse.\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.Cwd = filepath.Join(repo, "pkg")

	cut := modeltest.NewStream().Role().Reasoning("write it all at once").
		ToolCall(0, "call_glob", "glob", `{"pattern":"*.none"}`, 1).
		ToolCall(1, "call_write", "write", `{"file_path":"big.txt","content":"aaaa`, 3).
		Finish("length").Usage(modeltest.DefaultUsage).Done().Reply()
	srv.Enqueue(cut, modeltest.TextReply("I will write it in parts."))
	r := w.run(nil, "run", "--quiet", "write the big file")
	wantExit(t, r, 0)
	if strings.TrimSpace(r.Stdout) != "I will write it in parts." {
		t.Fatalf("stdout %q", r.Stdout)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Errorf("model-side violations: %v", v)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	first := reqs[0].Body
	if first.MaxTokens == nil || *first.MaxTokens != 256000 {
		t.Errorf("max_tokens %v, want 256000", first.MaxTokens)
	}
	msgs := first.Messages
	if len(msgs) != 3 || msgs[0].Role != "system" || msgs[2].Text() != "write the big file" {
		t.Fatalf("first request: %d messages", len(msgs))
	}
	ctx := msgs[1].Text()
	if msgs[1].Role != "user" || !strings.HasPrefix(ctx, modeltest.ContextTag) {
		t.Fatalf("messages[1] is not the context message: %q", ctx)
	}
	for _, want := range []string{"Working directory: " + w.Cwd + "\n", "Git: repository at " + repo + ", branch trunk",
		"USER: be terse.", "ROOT: run make check", filepath.Join(repo, "AGENTS.md")} {
		if !strings.Contains(ctx, want) {
			t.Errorf("context message lacks %q:\n%s", want, ctx)
		}
	}
	if strings.Index(ctx, "USER:") > strings.Index(ctx, "ROOT:") {
		t.Error("the user's file does not come before the repository's")
	}
	if sys := msgs[0].Text(); strings.Contains(sys, w.Cwd) || !strings.Contains(sys, "Verify your work") {
		t.Errorf("system prompt holds the cwd or lacks the working rules:\n%s", sys)
	}
	var told string
	for _, m := range reqs[1].Body.Messages {
		if m.Role == "tool" && m.ToolCallID == "call_write" {
			told = m.Text()
		}
	}
	if !strings.Contains(told, "not run: your reply reached the output limit (max_tokens 256000, thinking included)") {
		t.Errorf("the cut call was told %q", told)
	}
	if _, err := os.Stat(filepath.Join(w.Cwd, "big.txt")); err == nil {
		t.Error("the cut-off write ran")
	}
}
