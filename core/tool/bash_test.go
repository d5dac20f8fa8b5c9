package tool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func TestBash(t *testing.T) {
	te := newTestEnv(t)
	te.file(t, "sub/f.txt", "x")
	outside := filepath.Dir(te.ws)
	if err := os.Symlink(outside, filepath.Join(te.ws, "out")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEEPSEEK_API_KEY", "sk-deepseek")
	t.Setenv("OPENAI_API_KEY", "sk-openai")
	t.Setenv("GITHUB_TOKEN", "ghp")
	t.Setenv("My_Client_Secret", "s")
	t.Setenv("db_password", "p")
	t.Setenv("DSH_PROVIDER_API_KEY", "k")
	t.Setenv("DSH_HARMLESS", "kept-value")

	tests := []struct {
		name    string
		args    obj
		wantErr bool
		has     []string
		not     []string
	}{
		{name: "echo", args: obj{"command": "echo hello", "description": "say hello"}, has: []string{"hello\n[exit code: 0]"}},
		{name: "stderr merged, exit code", args: obj{"command": "echo out; echo err >&2; exit 3", "description": "fail"}, has: []string{"out\n", "err\n", "[exit code: 3]"}},
		{name: "stdin is empty", args: obj{"command": "cat; echo done", "description": "cat"}, has: []string{"done\n[exit code: 0]"}},
		{name: "runs in workspace", args: obj{"command": "pwd", "description": "pwd"}, has: []string{te.ws + "\n"}},
		{name: "workdir relative", args: obj{"command": "pwd; ls", "description": "pwd", "workdir": "sub"}, has: []string{filepath.Join(te.ws, "sub") + "\nf.txt\n"}},
		{name: "pager", args: obj{"command": "echo $PAGER $GIT_PAGER", "description": "pager"}, has: []string{"cat cat\n"}},
		{name: "environment by allow-list", args: obj{"command": "env", "description": "env"}, has: []string{"PATH=", "HOME="}, not: []string{"DSH_HARMLESS", "sk-deepseek", "sk-openai", "GITHUB_TOKEN", "My_Client_Secret", "db_password", "DSH_PROVIDER_API_KEY"}},
		{name: "timeout clamped", args: obj{"command": "true", "description": "t", "timeout_ms": 3_600_000}, has: []string{"over the 10 minute maximum; using 600000", "[exit code: 0]"}},
		{name: "workdir dotdot", args: obj{"command": "pwd", "description": "x", "workdir": ".."}, wantErr: true, has: []string{"is outside the workspace"}},
		{name: "workdir symlink out", args: obj{"command": "pwd", "description": "x", "workdir": "out"}, wantErr: true, has: []string{outside + " is outside the workspace"}},
		{name: "workdir missing", args: obj{"command": "pwd", "description": "x", "workdir": "nope"}, wantErr: true, has: []string{"workdir nope does not exist"}},
		{name: "workdir a file", args: obj{"command": "pwd", "description": "x", "workdir": "sub/f.txt"}, wantErr: true, has: []string{"is not a folder"}},
		{name: "empty command", args: obj{"command": "  ", "description": "x"}, wantErr: true, has: []string{"command is required"}},
		{name: "zero timeout", args: obj{"command": "true", "description": "x", "timeout_ms": 0}, wantErr: true, has: []string{"timeout_ms must be a positive number"}},
		{name: "string timeout", args: obj{"command": "true", "description": "x", "timeout_ms": "5"}, wantErr: true, has: []string{"timeout_ms must be a number"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tBash, te.Env, tc.args)
			if r.IsError != tc.wantErr {
				t.Fatalf("IsError = %v: %s", r.IsError, text(r))
			}
			contains(t, text(r), tc.has...)
			for _, n := range tc.not {
				if strings.Contains(text(r), n) {
					t.Fatalf("output contains %q:\n%s", n, text(r))
				}
			}
		})
	}
	passed := call(t, bashTool{envPass: []string{"DSH_HARM*", "DEEPSEEK_API_KEY"}}, te.Env, obj{"command": "env", "description": "env"})
	contains(t, text(passed), "DSH_HARMLESS=kept-value")
	if strings.Contains(text(passed), "sk-deepseek") {
		t.Fatalf("commandEnv passed a model API key:\n%s", text(passed))
	}
	r := call(t, tBash, te.Env, obj{"command": "exit 4", "description": "x"})
	if r.Meta == nil || r.Meta.Kind != "execute" || r.Meta.ExitCode == nil || *r.Meta.ExitCode != 4 {
		t.Fatalf("meta = %+v", r.Meta)
	}
	acc, err := tBash.Inspect(args(t, obj{"command": "ls -la", "description": "List files"}), te.Env)
	if err != nil || acc.Command != "ls -la" || acc.Title != "List files" || acc.Paths[0] != te.ws || acc.Write {
		t.Fatalf("access = %+v %v", acc, err)
	}
}

func TestBashTimeout(t *testing.T) {
	te := newTestEnv(t)
	start := time.Now()
	// 1.5 s: long enough for the reaper and bash to start and echo on a
	// loaded CI machine (200 ms was not), short beside the sleep.
	r := call(t, tBash, te.Env, obj{"command": "echo begun; sleep 30", "description": "x", "timeout_ms": 1500})
	if d := time.Since(start); d > 6*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	mustErr(t, r, "begun\n", "[command timed out after 1.5s; it and everything it started were killed]", "[exit code: -1]")
}

func TestBashHugeOutputIsBounded(t *testing.T) {
	te := newTestEnv(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	// 50 MB: a head line, 50 MB of 'a', a tail line.
	r := call(t, tBash, te.Env, obj{"command": "echo FIRST; head -c 50000000 /dev/zero | tr '\\0' a; echo; echo LAST", "description": "flood"})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	out := mustOK(t, r)
	if len(out) > bashOutputLimit+200 {
		t.Fatalf("output is %d bytes", len(out))
	}
	contains(t, out, "FIRST\n", "LAST\n[exit code: 0]", " bytes cut: line 2 of 3 ...]")
	if !r.Meta.Truncated {
		t.Fatal("meta not truncated")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("allocated %d bytes for a 50 MB output", alloc)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("took %v", elapsed)
	}
	cut := out[strings.Index(out, "[... ")+5:]
	n, err := strconv.Atoi(cut[:strings.IndexByte(cut, ' ')])
	if err != nil || n < 50_000_000-bashOutputLimit {
		t.Fatalf("cut count %d %v", n, err)
	}
}

// TestBashCancelKillsProcessGroup cancels a command whose background
// grandchild would otherwise live on, and proves the whole group is gone
// within 2 seconds.
func TestBashCancelKillsProcessGroup(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"plain", "sleep 100 & sleep 100; wait"},
		{"ignores SIGTERM", "trap '' TERM; sleep 100 & sleep 100; wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t)
			pidFile := filepath.Join(te.ws, "pid")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan Result, 1)
			go func() {
				done <- tBash.Run(ctx, args(t, obj{"command": "echo $$ > pid; " + tc.script, "description": "sleep"}), te.Env)
			}()
			pgid := waitPid(t, pidFile)
			if err := syscall.Kill(-pgid, 0); err != nil {
				t.Fatalf("process group %d not running: %v", pgid, err)
			}
			waitGroupSize(t, pgid, 3) // bash and both sleeps
			start := time.Now()
			cancel()
			var r Result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			mustErr(t, r, "[command cancelled")
			for syscall.Kill(-pgid, 0) != syscall.ESRCH {
				if time.Since(start) > 2*time.Second {
					t.Fatalf("process group %d still alive 2 s after cancel: %v", pgid, groupMembers(pgid))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestBashBackgroundDoesNotOutliveCommand: a command that exits leaving a
// child behind returns, and the child is killed.
func TestBashBackgroundDoesNotOutliveCommand(t *testing.T) {
	te := newTestEnv(t)
	start := time.Now()
	r := call(t, tBash, te.Env, obj{"command": "echo $$ > pid; sleep 100 & echo started", "description": "bg"})
	contains(t, mustOK(t, r), "started\n[exit code: 0]")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
	pgid := waitPid(t, filepath.Join(te.ws, "pid"))
	if err := syscall.Kill(-pgid, 0); err != syscall.ESRCH {
		t.Fatalf("background child survived: %v %v", err, groupMembers(pgid))
	}
}

func TestLocalExecDirect(t *testing.T) {
	t.Setenv("SOME_API_KEY", "leak")
	ex := LocalExec()
	res, err := ex.Exec(context.Background(), ExecRequest{Command: "echo ${SOME_API_KEY:-none}", Workdir: t.TempDir()})
	if err != nil || res.Output != "none\n" || res.ExitCode != 0 {
		t.Fatalf("nil Env must be scrubbed: %+v %v", res, err)
	}
	if _, err := ex.Exec(context.Background(), ExecRequest{Command: ""}); err == nil {
		t.Fatal("empty command ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ex.Exec(ctx, ExecRequest{Command: "true"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	res, err = ex.Exec(context.Background(), ExecRequest{Command: "true", Workdir: "/does/not/exist"})
	if err == nil || res.ExitCode != -1 {
		t.Fatalf("bad workdir: %+v %v", res, err)
	}
}

func waitPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the command never wrote its pid")
	return 0
}

// groupMembers lists the pids whose process group is pgid (from /proc).
func groupMembers(pgid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

func waitGroupSize(t *testing.T, pgid, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(groupMembers(pgid)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("group %d has members %v, want %d", pgid, groupMembers(pgid), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestScrubEnv(t *testing.T) {
	in := []string{
		"PATH=/bin", "HOME=/root", "DEEPSEEK_API_KEY=a", "OPENAI_API_KEY=b", "GITHUB_TOKEN=c",
		"aws_secret=d", "X_KEY=e", "Db_Password=f", "DSH_X_API_KEY=g", "KEYRING=h", "TOKENIZER=i",
		"SSH_AUTH_SOCK=j", "NOVALUE", "MONKEY=k",
	}
	want := []string{"PATH=/bin", "HOME=/root", "KEYRING=h", "TOKENIZER=i", "SSH_AUTH_SOCK=j", "NOVALUE", "MONKEY=k"}
	if got := ScrubEnv(in); !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestHeadTail(t *testing.T) {
	w := newHeadTail(10)
	for _, s := range []string{"01", "234", "56789abc", "def"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.String(); got != "01234\n[... 6 bytes cut ...]\nbcdef" || !w.truncated() {
		t.Fatalf("got %q", got)
	}
	small := newHeadTail(100)
	_, _ = small.Write([]byte("short"))
	if small.String() != "short" || small.truncated() {
		t.Fatal("short output changed")
	}
	// Cuts land on character boundaries.
	u := newHeadTail(7)
	_, _ = u.Write([]byte(strings.Repeat("é", 20)))
	got := u.String()
	if !utf8.ValidString(got) || !strings.Contains(got, "bytes cut") {
		t.Fatalf("got %q", got)
	}
	// One large write larger than the tail.
	big := newHeadTail(8)
	_, _ = big.Write([]byte("abcdefghijklmnopqrstuvwxyz"))
	if got := big.String(); got != "abcd\n[... 18 bytes cut ...]\nwxyz" {
		t.Fatalf("got %q", got)
	}
}

// TestBashNonInteractive: a command that would open an editor, a pager or a
// prompt fails or prints at once instead of waiting for the timeout, even
// when the user's own EDITOR would wait; background jobs get the same.
func TestBashNonInteractive(t *testing.T) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("git not installed")
	}
	te := newTestEnv(t)
	withJobs(t, te)
	t.Setenv("EDITOR", "sleep 100")
	t.Setenv("GIT_EDITOR", "sleep 100")
	t.Setenv("VISUAL", "sleep 100")
	start := time.Now()
	r := call(t, tBash, te.Env, obj{"description": "commit", "timeout_ms": 20_000, "command": "git init -q . && " +
		"git -c user.name=t -c user.email=t@x -c commit.gpgsign=false commit -q --allow-empty; echo \"EDITOR=$EDITOR VISUAL=$VISUAL\""})
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("git commit waited %s", took)
	}
	contains(t, text(r), "problem with the editor", "EDITOR=false VISUAL=false")
	r = call(t, tBash, te.Env, obj{"description": "env", "run_in_background": true,
		"command": "echo \"$GIT_EDITOR $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT\""})
	contains(t, text(r), "false cat cat 0")
}
