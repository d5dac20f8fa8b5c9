package safegit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// plant is one config-driven program: the config it needs and the git
// commands that would run it.
type plant struct {
	name   string
	config [][2]string
	attrs  string   // .gitattributes line, if the plant needs one
	hook   string   // a hook file name planted in .git/hooks
	run    []string // the git command that triggers it
	prep   func(t *testing.T, repo string)
}

// clean restores a to the committed content, so a merge may start.
func clean(t *testing.T, repo string) {
	write(t, filepath.Join(repo, "a"), "four\n", 0o644)
}

// baseRepo makes, once per test binary, a repository with a branch
// "other" that changes a one way and HEAD the other, and a changed a in
// the working tree. Each plant copies it (no git runs per plant).
var baseRepo = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "safegit-base")
	if err != nil {
		return "", err
	}
	script := `set -e
git init -q
git config user.name t
git config user.email t@t
echo one >a; git add a; git commit -q -m init
git checkout -q -b other; echo three >a; git commit -q -am other
git checkout -q -; echo four >a; git commit -q -am mine
echo "two, longer" >a
`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return dir, nil
})

// plants are the settings git 2.39 documents as running a program that a
// repository can set, each with a command that runs it under plain git.
func plants() []plant {
	return []plant{
		{name: "fsmonitor", config: [][2]string{{"core.fsmonitor", "MARK"}}, run: []string{"status"}},
		{name: "hooksPath", config: [][2]string{{"core.hooksPath", "HOOKDIR"}}, run: []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{name: "hook", hook: "pre-commit", run: []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{name: "post-index-change", hook: "post-index-change", run: []string{"add", "-A"}},
		{name: "clean", config: [][2]string{{"filter.evil.clean", "MARK"}}, attrs: "* filter=evil", run: []string{"add", "-A"}},
		{name: "process", config: [][2]string{{"filter.evil.process", "MARK"}, {"filter.evil.required", "true"}}, attrs: "* filter=evil", run: []string{"add", "-A"}},
		{name: "smudge", config: [][2]string{{"filter.evil.smudge", "MARK"}}, attrs: "* filter=evil", run: []string{"checkout", "-q", "HEAD", "--", "."}},
		{name: "textconv", config: [][2]string{{"diff.evil.textconv", "MARK"}}, attrs: "* diff=evil", run: []string{"log", "-p", "-1"}},
		{name: "diffcommand", config: [][2]string{{"diff.evil.command", "MARK"}}, attrs: "* diff=evil", run: []string{"diff", "HEAD~0"}},
		{name: "external", config: [][2]string{{"diff.external", "MARK"}}, run: []string{"diff"}},
		{name: "gpg", config: [][2]string{{"commit.gpgSign", "true"}, {"gpg.program", "MARK"}}, run: []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{name: "gpgformat", config: [][2]string{{"commit.gpgSign", "true"}, {"gpg.format", "ssh"}, {"gpg.ssh.program", "MARK"}, {"user.signingKey", "key::ssh-ed25519 AAAA"}}, run: []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{name: "editor", config: [][2]string{{"core.editor", "MARK"}}, run: []string{"commit", "-q", "--allow-empty"}},
		{name: "sshCommand", config: [][2]string{{"core.sshCommand", "MARK"}, {"remote.o.url", "ssh://example.invalid/x"}}, run: []string{"ls-remote", "o"}},
		{name: "uploadpack", config: [][2]string{{"remote.o.uploadpack", "MARK"}, {"remote.o.url", "REPO"}}, run: []string{"ls-remote", "o"}},
		{name: "ext", config: [][2]string{{"protocol.ext.allow", "always"}, {"remote.o.url", "ext::MARK"}}, run: []string{"ls-remote", "o"}},
		{name: "askpass", config: [][2]string{{"core.askPass", "MARK"}, {"credential.helper", "MARK"}, {"remote.o.url", "HTTP"}}, run: []string{"ls-remote", "o"}},
		{name: "merge", config: [][2]string{{"merge.evil.driver", "MARK"}}, attrs: "* merge=evil", prep: clean, run: []string{"merge", "-q", "-m", "m", "other"}},
		{name: "extall", config: [][2]string{{"protocol.allow", "always"}, {"remote.o.url", "ext::MARK"}}, run: []string{"ls-remote", "o"}},
		{name: "include", config: [][2]string{{"include.path", "INCLUDED"}}, run: []string{"status"}},
	}
}

// setup copies the base repository and plants p; it returns the
// repository and the folder markers appear in.
func setup(t *testing.T, p plant, httpURL string) (string, string) {
	t.Helper()
	base, err := baseRepo()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	repo, marks := filepath.Join(dir, "repo"), filepath.Join(dir, "marks")
	if err := os.CopyFS(repo, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "evil.sh")
	body := "#!/bin/sh\necho ran >" + filepath.Join(marks, p.name) + "\nenv >" + filepath.Join(marks, p.name+".env") + "\nexit 1\n"
	write(t, script, body, 0o755)
	if p.prep != nil {
		p.prep(t, repo)
	}
	hookDir := filepath.Join(dir, "hooks")
	for _, h := range []string{"pre-commit", "commit-msg", "post-commit", "post-index-change", "reference-transaction", "post-checkout"} {
		write(t, filepath.Join(hookDir, h), body, 0o755)
	}
	if p.hook != "" {
		write(t, filepath.Join(repo, ".git", "hooks", p.hook), body, 0o755)
	}
	included := filepath.Join(dir, "included")
	write(t, included, "[core]\n\tfsmonitor = "+script+"\n", 0o644)
	var cfg strings.Builder
	for _, kv := range p.config {
		v := strings.NewReplacer("MARK", script, "HOOKDIR", hookDir, "REPO", repo, "INCLUDED", included, "HTTP", httpURL).Replace(kv[1])
		section, key, _ := strings.Cut(kv[0], ".")
		if i := strings.LastIndexByte(key, '.'); i >= 0 {
			section += fmt.Sprintf(" %q", key[:i])
			key = key[i+1:]
		}
		fmt.Fprintf(&cfg, "[%s]\n\t%s = %q\n", section, key, v)
	}
	f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(cfg.String()); err != nil {
		t.Fatal(err)
	}
	if p.attrs != "" {
		write(t, filepath.Join(repo, ".git", "info", "attributes"), p.attrs+"\n", 0o644)
	}
	return repo, marks
}

func TestPlantedProgramsDoNotRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	t.Setenv("DEEPSEEK_API_KEY", "sk-secret-test")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	for _, p := range plants() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			// Plain git runs the plant: the test would see it.
			repo, marks := setup(t, p, srv.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			plain := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, p.run...)...)
			plain.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
			if out, err := plain.CombinedOutput(); testing.Verbose() {
				t.Logf("plain git: %v: %s", err, out)
			}
			if _, err := os.Stat(filepath.Join(marks, p.name)); err != nil {
				t.Fatalf("plain git did not run the planted %s (the test plants it wrong): %v", p.name, err)
			}
			env, _ := os.ReadFile(filepath.Join(marks, p.name+".env"))
			if !strings.Contains(string(env), "sk-secret-test") {
				t.Fatalf("plain git's %s did not see the key (the test is wrong)", p.name)
			}

			repo, marks = setup(t, p, srv.URL)
			_, err := Repo{Dir: repo}.Output(ctx, p.run...)
			if _, serr := os.Stat(filepath.Join(marks, p.name)); serr == nil {
				t.Fatalf("safegit ran the planted %s (git said %v)", p.name, err)
			}
		})
	}
}

func TestStatusStillWorksWithPlants(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, name := range []string{"fsmonitor", "clean", "process", "include"} {
		i := slices.IndexFunc(plants(), func(p plant) bool { return p.name == name })
		repo, _ := setup(t, plants()[i], "")
		out, err := Repo{Dir: repo}.Output(context.Background(), "status", "--porcelain=v1", "--branch")
		if err != nil || !strings.Contains(string(out), " M a") {
			t.Fatalf("%s: status = %q, %v", name, out, err)
		}
	}
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("DEEPSEEK_API_KEY", "sk-secret-test")
	t.Setenv("OPENAI_API_KEY", "sk-other")
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("GIT_EXTERNAL_DIFF", "/bin/evil")
	t.Setenv("HOME", "/home/someone")
	env, err := Repo{Dir: "/", Env: []string{"GIT_INDEX_FILE=/tmp/idx"}}.environ()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	for _, bad := range []string{"sk-secret-test", "sk-other", "GIT_DIR", "GIT_EXTERNAL_DIFF"} {
		if strings.Contains(joined, bad) {
			t.Errorf("environment carries %s:\n%s", bad, joined)
		}
	}
	for _, want := range []string{"HOME=/home/someone", "GIT_INDEX_FILE=/tmp/idx", "GIT_TERMINAL_PROMPT=0"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment lacks %s", want)
		}
	}
	if _, err := (Repo{Dir: "/", Env: []string{"GIT_SSH_COMMAND=x"}}).environ(); err == nil {
		t.Error("GIT_SSH_COMMAND was accepted from the caller")
	}
}

func TestHangingIncludeIsBounded(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip(err)
	}
	git(t, dir, "config", "include.path", fifo)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := (Repo{Dir: dir}).Output(ctx, "status"); err == nil {
		t.Fatal("a config including a FIFO gave no error")
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := baseRepo(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}
