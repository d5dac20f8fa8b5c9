package core

import (
	"context"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/core/model"
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

// TestInstructionLinksToSecretsAndOutsideAreNotRead: a repository whose
// AGENTS.md links to the user's private key (in a fake HOME), or whose
// nested CLAUDE.md links outside the repository, or is a FIFO, shows
// none of them to the model; a link inside the repository still works.
func TestInstructionLinksToSecretsAndOutsideAreNotRead(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	key := filepath.Join(home, ".ssh", "id_ed25519")
	writeFile(t, key, "-----BEGIN OPENSSH PRIVATE KEY----- SECRETKEY\n")
	outside := filepath.Join(t.TempDir(), "notes.md")
	writeFile(t, outside, "OUTSIDE TEXT\n")

	repo := filepath.Join(home, "project")
	gitInit(t, repo)
	link := func(target, at string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, at); err != nil {
			t.Fatal(err)
		}
	}
	link(key, filepath.Join(repo, "AGENTS.md"))
	link(outside, filepath.Join(repo, "a", "AGENTS.md"))
	writeFile(t, filepath.Join(repo, "docs", "rules.md"), "INSIDE RULES\n")
	link("../../docs/rules.md", filepath.Join(repo, "a", "b", "AGENTS.md"))
	if err := syscall.Mkfifo(filepath.Join(repo, "a", "b", "c", "CLAUDE.md"), 0o600); err != nil {
		writeFile(t, filepath.Join(repo, "a", "b", "c", "x"), "")
		_ = syscall.Mkfifo(filepath.Join(repo, "a", "b", "c", "CLAUDE.md"), 0o600)
	}
	cwd := filepath.Join(repo, "a", "b", "c")

	h := newHarness(t, text("done"))
	rt := h.runtimeWith(func(*Config) {})
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "hello")
	ctxText := h.prov.requests()[0].Messages[1].Content
	for _, bad := range []string{"SECRETKEY", "OUTSIDE TEXT"} {
		if strings.Contains(ctxText, bad) {
			t.Fatalf("the context message carries %s:\n%s", bad, ctxText)
		}
	}
	if !strings.Contains(ctxText, "INSIDE RULES") {
		t.Fatalf("a link inside the repository was not followed:\n%s", ctxText)
	}
}

// TestTurnThatPlantsAHookIsReported: a turn whose tool writes
// .git/hooks/pre-commit ends with a warning in dsh's log naming it (the
// user's own next commit would run it); a turn that touches neither
// hooks nor config says nothing.
func TestTurnThatPlantsAHookIsReported(t *testing.T) {
	repo := t.TempDir()
	gitInit(t, repo)
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	args := `{"file_path":` + strconv.Quote(hook) + `,"content":"#!/bin/sh\necho planted\n"}`
	h := newHarness(t, calls(model.ToolCall{ID: "w", Name: "write", Arguments: args}), text("done"), text("again"))
	var logs syncBuffer
	rt := h.runtimeWith(func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: repo})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "plant it")
	if got := logs.String(); !strings.Contains(got, "changed the repository's git config or hooks") || !strings.Contains(got, hook) {
		t.Fatalf("no warning naming the hook:\n%s", got)
	}
	before := len(logs.String())
	run(t, s, "nothing")
	if strings.Contains(logs.String()[before:], "git config or hooks") {
		t.Fatalf("a quiet turn warned:\n%s", logs.String()[before:])
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSaveAttachmentChecksEveryImage: an image a client or server sends
// passes read's checks: a PNG header claiming 100000x100000 pixels is
// refused as bad input (ErrImageRefused), not stored.
func TestSaveAttachmentChecksEveryImage(t *testing.T) {
	h := newHarness(t, text("done"))
	s := h.session()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x06\x00\x00\x00")
	png = append(png, crc(png[12:29])...)
	if _, err := s.SaveAttachment("image/png", png); !errors.Is(err, ErrImageRefused) {
		t.Fatalf("got %v", err)
	}
}

func crc(b []byte) []byte {
	c := crc32.ChecksumIEEE(b)
	return []byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)}
}
