package core

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestContextGitRunsNoPlantedProgram: a repository whose config names an
// fsmonitor program and a clean filter (as a command the model ran could
// plant them) still gets its status in the context message, and dsh's own
// git runs neither program — which, unconfined and with dsh's
// environment, would have seen the API key.
func TestContextGitRunsNoPlantedProgram(t *testing.T) {
	repo := t.TempDir()
	gitInit(t, repo)
	writeFile(t, filepath.Join(repo, "a.txt"), "x\n")
	marks := t.TempDir()
	evil := filepath.Join(t.TempDir(), "evil.sh")
	writeFile(t, evil, "#!/bin/sh\nenv >>"+filepath.Join(marks, "ran")+"\nexit 1\n")
	if err := os.Chmod(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"core.fsmonitor", evil}, {"filter.x.clean", evil}, {"core.hooksPath", marks}} {
		if out, err := exec.Command("git", "-C", repo, "config", kv[0], kv[1]).CombinedOutput(); err != nil {
			t.Fatalf("git config: %v %s", err, out)
		}
	}
	writeFile(t, filepath.Join(repo, ".gitattributes"), "* filter=x\n")
	t.Setenv("DEEPSEEK_API_KEY", "sk-planted-test")

	h := newHarness(t, text("done"))
	rt := h.runtimeWith(func(*Config) {})
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: repo})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "hello")
	if data, err := os.ReadFile(filepath.Join(marks, "ran")); err == nil {
		t.Fatalf("dsh's git ran the planted program; it saw:\n%s", data)
	}
	ctxText := h.prov.requests()[0].Messages[1].Content
	if !strings.Contains(ctxText, "working tree now: 2 untracked") {
		t.Fatalf("the git status is missing:\n%s", ctxText)
	}
}
