package core

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/model/modeltest"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// clock is a settable clock for context messages.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// runtimeWith builds a runtime over h's store and provider with cfg's
// extra settings.
func (h *harness) runtimeWith(extra func(*Config)) *Runtime {
	cfg := Config{
		Store:          store.New(h.root),
		NewProvider:    func(string) (model.Provider, error) { return h.prov, nil },
		Defaults:       event.Config{Provider: "test", Model: "m1"},
		PermissionMode: permission.ModeFull,
		Tools:          tool.Builtins(),
		Backoff:        func(int, time.Duration) time.Duration { return time.Millisecond },
	}
	extra(&cfg)
	rt, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// reopen closes s and resumes it in rt, as a new process would.
func reopen(t *testing.T, s *Session, rt *Runtime) *Session {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2, err := rt.Resume(context.Background(), s.ID(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s2
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", "init", "-q", "-b", "main", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

func TestContextTagsAgree(t *testing.T) {
	if model.ContextTag != modeltest.ContextTag {
		t.Fatalf("model.ContextTag %q, modeltest.ContextTag %q", model.ContextTag, modeltest.ContextTag)
	}
}

// TestContextMessageBeforeFirstPromptListsRepositoryInstructions starts a
// session two directories below a repository root: the context message
// comes before the prompt (which stays the last user message) and holds
// the user file, the root's AGENTS.md and the subdirectory's CLAUDE.md,
// in that order, plus the facts.
func TestContextMessageBeforeFirstPromptListsRepositoryInstructions(t *testing.T) {
	repo := t.TempDir()
	gitInit(t, repo)
	writeFile(t, filepath.Join(repo, "AGENTS.md"), "ROOT RULES: run go test.\n")
	writeFile(t, filepath.Join(repo, "sub", "CLAUDE.md"), "SUB RULES: keep it small.\n")
	writeFile(t, filepath.Join(repo, "sub", "deeper", "notes.txt"), "untracked\n")
	userFile := filepath.Join(t.TempDir(), "dsh", "AGENTS.md")
	writeFile(t, userFile, "USER RULES: answer in English.\n")
	cwd := filepath.Join(repo, "sub", "deeper")

	h := newHarness(t, text("done"))
	c := &clock{t: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)}
	rt := h.runtimeWith(func(cfg *Config) { cfg.UserInstructions = userFile; cfg.Now = c.now })
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "fix the bug")

	msgs := h.prov.requests()[0].Messages
	if len(msgs) != 3 || msgs[0].Role != "system" || !model.IsContext(msgs[1]) || msgs[2].Content != "fix the bug" {
		t.Fatalf("want system, context, prompt; got %d messages: %+v", len(msgs), msgs)
	}
	ctxText := msgs[1].Content
	for _, want := range []string{
		"Working directory: " + cwd + "\n",
		"Today's date: 2026-12-01 (Tuesday), time zone UTC (+00:00)\n",
		"Git: repository at " + repo + ", branch main; working tree now: 2 untracked; no commits yet\n",
		"Operating system: ",
		"Shell: /bin/bash",
	} {
		if !strings.Contains(ctxText, want) {
			t.Errorf("context message lacks %q:\n%s", want, ctxText)
		}
	}
	iUser := strings.Index(ctxText, "USER RULES")
	iRoot := strings.Index(ctxText, "ROOT RULES")
	iSub := strings.Index(ctxText, "SUB RULES")
	if iUser < 0 || iRoot < 0 || iSub < 0 || !(iUser < iRoot && iRoot < iSub) {
		t.Fatalf("instructions missing or out of order (user %d, root %d, sub %d):\n%s", iUser, iRoot, iSub, ctxText)
	}
	if !strings.Contains(ctxText, `<instructions path="`+filepath.Join(repo, "AGENTS.md")+`">`) {
		t.Fatalf("the root file is not named by path:\n%s", ctxText)
	}

	// The event is its own type, recorded before the user message.
	var envAt, userAt = -1, -1
	for i, ev := range s.Events() {
		switch ev.Type {
		case event.TypeEnvironment:
			envAt = i
			env, err := event.Decode[event.Environment](ev)
			if err != nil || env.Reason != "initial" || len(env.Facts.Instructions) != 3 || env.Facts.GitBranch != "main" {
				t.Fatalf("environment event %+v (%v)", env, err)
			}
		case event.TypeUserMessage:
			userAt = i
		}
	}
	if envAt < 0 || envAt > userAt {
		t.Fatalf("context/environment at %d, user/message at %d", envAt, userAt)
	}
}

// TestContextResentOnlyWhenAFactChanges: a second turn the same day sends
// no new context message; a new day does, before that turn's prompt, and
// history before it is untouched. A resume with unchanged facts sends none.
func TestContextResentOnlyWhenAFactChanges(t *testing.T) {
	h := newHarness(t, text("one"), text("two"), text("three"), text("four"))
	c := &clock{t: time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)}
	rt := h.runtimeWith(func(cfg *Config) { cfg.Now = c.now })
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "first")
	run(t, s, "second")
	c.set(time.Date(2026, 12, 2, 0, 5, 0, 0, time.UTC))
	run(t, s, "third")
	s2 := reopen(t, s, h.runtimeWith(func(cfg *Config) { cfg.Now = c.now }))
	run(t, s2, "fourth")

	reqs := h.prov.requests()
	contexts := func(r *model.Request) (n int, last int) {
		for i, m := range r.Messages {
			if model.IsContext(m) {
				n, last = n+1, i
			}
		}
		return n, last
	}
	for i, want := range []int{1, 1, 2, 2} {
		if n, _ := contexts(reqs[i]); n != want {
			t.Fatalf("request %d holds %d context messages, want %d", i, n, want)
		}
	}
	third := reqs[2].Messages
	_, at := contexts(reqs[2])
	if at != len(third)-2 || third[len(third)-1].Content != "third" {
		t.Fatalf("the new context message is not right before the third prompt (at %d of %d)", at, len(third))
	}
	if got := third[at].Content; !strings.Contains(got, "changed since the last context message (date)") ||
		!strings.Contains(got, "Today's date: 2026-12-02 (Wednesday)") || !strings.Contains(got, "Project instructions: unchanged.") {
		t.Fatalf("changed context message:\n%s", got)
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := marshalMsgs(reqs[i-1].Messages), marshalMsgs(reqs[i].Messages)
		for j := range prev {
			if prev[j] != cur[j] {
				t.Fatalf("request %d rewrote message %d", i, j)
			}
		}
	}
}

// TestSystemPromptAndToolsByteIdentical: across turns, a model change
// back and forth of max tokens, and a resume, the system prompt and tool
// list bytes never change; request/header carries tool descriptions and
// the provider's defaults.
func TestSystemPromptAndToolsByteIdentical(t *testing.T) {
	h := newHarness(t, text("a"), text("b"), text("c"))
	h.prov.caps.DefaultMaxTokens = 256000
	h.prov.caps.DefaultEffort = "high"
	s := h.session()
	run(t, s, "one")
	if err := s.SetConfig(event.Config{Provider: "test", Model: "m1", MaxTokens: 1000}); err != nil {
		t.Fatal(err)
	}
	run(t, s, "two")
	s2 := reopen(t, s, h.newRuntime())
	run(t, s2, "three")
	reqs := h.prov.requests()
	sys0, tools0 := reqs[0].Messages[0].Content, toolBytes(reqs[0].Tools)
	for i, r := range reqs {
		if r.Messages[0].Content != sys0 {
			t.Fatalf("request %d: system prompt changed", i)
		}
		if !bytes.Equal(toolBytes(r.Tools), tools0) {
			t.Fatalf("request %d: tool list changed", i)
		}
	}
	var hdr event.RequestHeader
	for _, ev := range s2.Events() {
		if ev.Type == event.TypeRequestHeader {
			hdr, _ = event.Decode[event.RequestHeader](ev)
			break
		}
	}
	var tools []struct{ Name, Description string }
	if err := json.Unmarshal(hdr.Header.Tools, &tools); err != nil || len(tools) != len(reqs[0].Tools) {
		t.Fatalf("request/header tools %s (%v)", hdr.Header.Tools, err)
	}
	for i, tl := range tools {
		if tl.Name != reqs[0].Tools[i].Name || tl.Description != reqs[0].Tools[i].Description {
			t.Fatalf("request/header tool %d: %+v, sent %+v", i, tl, reqs[0].Tools[i])
		}
	}
	if d := hdr.Header.AdapterDefaults; d == nil || !d.MaxTokens || hdr.Header.Config.MaxTokens != 256000 {
		t.Fatalf("adapter defaults %+v, config %+v", d, hdr.Header.Config)
	}
	if hdr.Header.System != sys0 {
		t.Fatal("request/header system differs from the system prompt sent")
	}
}

func toolBytes(ts []model.ToolSpec) []byte {
	b, _ := json.Marshal(ts)
	return b
}

// TestSubagentSessionGetsPreamble: a session with a parent (or started at
// a delegation depth) has the subagent preamble; a top-level one not.
func TestSubagentSessionGetsPreamble(t *testing.T) {
	h := newHarness(t, text("top"), text("child"))
	top := h.session()
	run(t, top, "go")
	child, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, ParentSession: top.ID(), Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	run(t, child, "task")
	reqs := h.prov.requests()
	if strings.Contains(reqs[0].Messages[0].Content, "You are a subagent") {
		t.Fatal("a top-level session got the subagent preamble")
	}
	if !strings.Contains(reqs[1].Messages[0].Content, "You are a subagent") {
		t.Fatal("a child session lacks the subagent preamble")
	}
}

func TestInstructionsBounded(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", maxInstructions+500)
	writeFile(t, filepath.Join(dir, "AGENTS.md"), big)
	writeFile(t, filepath.Join(dir, "CLAUDE.md"), "ignored: AGENTS.md wins")
	rd := (&Runtime{}).instructionReaders(dir, dir)
	in := readInstructions(rd, "", "", dir)
	if len(in) != 1 || in[0].file.Shown != maxInstructions || in[0].file.Bytes != int64(len(big)) {
		t.Fatalf("instructions %+v", in)
	}
	text := contextText(event.EnvFacts{Date: "2026-12-01"}, in, nil)
	if !strings.Contains(text, "[... cut: 65536 of 66036 bytes shown; read "+filepath.Join(dir, "AGENTS.md")+" for the rest]") {
		t.Fatalf("no cut note in %s", text[len(text)-300:])
	}
	// A symlinked CLAUDE.md in a deeper directory is the same file: once.
	sub := filepath.Join(dir, "sub")
	writeFile(t, filepath.Join(sub, "x"), "")
	if err := os.Symlink(filepath.Join(dir, "AGENTS.md"), filepath.Join(sub, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if in := readInstructions(rd, "", dir, sub); len(in) != 1 {
		t.Fatalf("the same file was read %d times", len(in))
	}
}

func TestParseGitStatus(t *testing.T) {
	for _, c := range []struct{ out, branch, status string }{
		{"## main\n", "main", "clean"},
		{"## main...origin/main [ahead 2, behind 1]\n M a.go\nA  b.go\n?? c\nUU d\n", "main",
			"2 changed, 1 untracked, 1 with merge conflicts; ahead 2, behind 1 of origin/main"},
		{"## No commits yet on trunk\n?? x\n", "trunk", "1 untracked; no commits yet"},
		{"## HEAD (no branch)\n", "(detached HEAD)", "clean"},
	} {
		b, st := parseGitStatus([]byte(c.out))
		if b != c.branch || st != c.status {
			t.Errorf("%q: got %q, %q; want %q, %q", c.out, b, st, c.branch, c.status)
		}
	}
}

// TestPrefixStableAcrossCompactionAndResume: the system prompt and the
// tool list are byte-identical across turns, a compaction (its summary
// call included) and a resume after it; the context message is kept by
// the compaction, still first after the system prompt, and is not sent
// again after it or after the resume, the facts being unchanged.
func TestPrefixStableAcrossCompactionAndResume(t *testing.T) {
	h := newHarness(t, text("one"), text("the summary"), text("two"), text("three"))
	s := h.session()
	run(t, s, "first task")
	if err := s.Wait(context.Background()); err != nil { // idle, so Compact is not refused as busy
		t.Fatal(err)
	}
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	run(t, s, "second")
	s2 := reopen(t, s, h.newRuntime())
	run(t, s2, "third")

	reqs := h.prov.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	sys0, tools0 := reqs[0].Messages[0].Content, toolBytes(reqs[0].Tools)
	for i, r := range reqs {
		if r.Messages[0].Content != sys0 || !bytes.Equal(toolBytes(r.Tools), tools0) {
			t.Fatalf("request %d: the system prompt or tool list changed", i)
		}
		n := 0
		for _, m := range r.Messages {
			if model.IsContext(m) {
				n++
			}
		}
		if n != 1 || !model.IsContext(r.Messages[1]) {
			t.Fatalf("request %d: %d context messages, messages[1] context: %v", i, n, model.IsContext(r.Messages[1]))
		}
		if r.Messages[1].Content != reqs[0].Messages[1].Content {
			t.Fatalf("request %d: the context message changed", i)
		}
	}
	after := reqs[2].Messages
	if after[len(after)-1].Content != "second" || !strings.Contains(after[len(after)-2].Content, "the summary") {
		t.Fatalf("after the compaction the request does not end with the summary, then the new prompt: %+v", after[len(after)-2:])
	}
	envs := 0
	all, err := s2.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range all {
		if ev.Type == event.TypeEnvironment {
			envs++
		}
	}
	if envs != 1 {
		t.Fatalf("%d context/environment events, want 1", envs)
	}
}

// BenchmarkEnvironment is the cost a turn pays to gather the facts of its
// context message in a git repository with an AGENTS.md (one git status).
func BenchmarkEnvironment(b *testing.B) {
	repo := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		b.Skipf("git init: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, "AGENTS.md"), []byte("rules\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	rt, err := New(Config{Store: store.New(b.TempDir()), Tools: tool.Builtins()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(context.Background())
	for b.Loop() {
		if f, _ := rt.environment(context.Background(), repo); f.GitBranch == "" {
			b.Fatal("no branch")
		}
	}
}

// TestHeadBranchWithoutGit: the branch is read from HEAD when git cannot
// run, following a worktree's "gitdir:" file.
func TestHeadBranchWithoutGit(t *testing.T) {
	main := t.TempDir()
	writeFile(t, filepath.Join(main, ".git", "HEAD"), "ref: refs/heads/trunk\n")
	if b := headBranch(main); b != "trunk" {
		t.Fatalf("branch %q", b)
	}
	wt := t.TempDir()
	writeFile(t, filepath.Join(main, ".git", "worktrees", "wt", "HEAD"), "0123456789abcdef0123456789abcdef01234567\n")
	writeFile(t, filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(main, ".git", "worktrees", "wt")+"\n")
	if b := headBranch(wt); b != "(detached HEAD)" {
		t.Fatalf("worktree branch %q", b)
	}
	if r := gitRoot(filepath.Join(wt, "a", "b")); r != wt {
		t.Fatalf("root %q, want %q", r, wt)
	}
}
