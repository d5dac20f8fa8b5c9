package e2e

// End-to-end tests of the headless door, `dsh run` (issue 5; seed 002 and
// spec dsh-protocols.md §6): the built binary against the fake DeepSeek
// server, one test per rule of the contract.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model/modeltest"
	"github.com/dsh-dev/dsh/core/store"
)

// The --json bounds of the contract, restated here on purpose: the test
// pins the numbers, not whatever the implementation's constants say.
const (
	maxJSONString = 8 << 10
	maxJSONLine   = 32 << 10
)

// jsonEvent is one decoded --json line.
type jsonEvent struct {
	Raw    string
	Fields map[string]any
}

func (e jsonEvent) Type() string { s, _ := e.Fields["type"].(string); return s }

func (e jsonEvent) Str(k string) string { s, _ := e.Fields[k].(string); return s }

func (e jsonEvent) Truncated() bool { b, _ := e.Fields["truncated"].(bool); return b }

// kind is the type of a line, with the phase for status lines
// ("status:turn_start").
func (e jsonEvent) kind() string {
	if e.Type() == "status" {
		return "status:" + e.Str("phase")
	}
	return e.Type()
}

// parseJSONStream decodes stdout of a --json run, checking the contract
// every line must meet: one JSON object per line and nothing else, every
// line (newline included) within 32 KiB, every string and key within
// 8 KiB — except the text of `final`, which is deliberately unbounded.
func parseJSONStream(t *testing.T, stdout string) []jsonEvent {
	t.Helper()
	if stdout == "" {
		t.Fatal("--json: stdout is empty")
	}
	if !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("--json: stdout does not end with a newline: %q", shortTail(stdout, 200))
	}
	var out []jsonEvent
	for i, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("--json line %d is not a JSON object: %v: %q", i+1, err, shortHead(line, 300))
		}
		if dec.More() {
			t.Fatalf("--json line %d holds more than one value: %q", i+1, shortHead(line, 300))
		}
		ev := jsonEvent{Raw: line, Fields: m}
		if ev.Type() != "final" {
			if n := len(line) + 1; n > maxJSONLine {
				t.Errorf("--json line %d (%s) is %d bytes with its newline, over %d", i+1, ev.Type(), n, maxJSONLine)
			}
			checkJSONStrings(t, fmt.Sprintf("line %d (%s)", i+1, ev.Type()), m)
		}
		out = append(out, ev)
	}
	return out
}

// checkStrings fails if any string or key in v exceeds 8 KiB.
func checkJSONStrings(t *testing.T, where string, v any) {
	t.Helper()
	switch x := v.(type) {
	case string:
		if len(x) > maxJSONString {
			t.Errorf("%s: a string of %d bytes, over %d", where, len(x), maxJSONString)
		}
	case map[string]any:
		for k, e := range x {
			if len(k) > maxJSONString {
				t.Errorf("%s: a key of %d bytes, over %d", where, len(k), maxJSONString)
			}
			checkJSONStrings(t, where, e)
		}
	case []any:
		for _, e := range x {
			checkJSONStrings(t, where, e)
		}
	}
}

// checkDshStderr fails unless every stderr line is a `dsh:` diagnostic.
func checkDshStderr(t *testing.T, stderr string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "dsh: ") {
			t.Errorf("stderr carries a non-dsh line in --json mode: %q\nstderr:\n%s", shortHead(line, 200), shortHead(stderr, 2000))
			return
		}
	}
}

func streamKinds(evs []jsonEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.kind()
	}
	return out
}

func shortHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func shortTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// lastUserText is the text of the last user message of a model request.
func lastUserText(t *testing.T, req *modeltest.Request) string {
	t.Helper()
	for i := len(req.Body.Messages) - 1; i >= 0; i-- {
		if m := req.Body.Messages[i]; m.Role == "user" {
			return m.Text()
		}
	}
	t.Fatalf("request #%d has no user message", req.Seq)
	return ""
}

// wantCode fails with the run's output when its exit code is not want.
func wantExit(t *testing.T, r result, want int) {
	t.Helper()
	if r.Code != want {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, want, shortHead(r.Stdout, 3000), shortHead(r.Stderr, 3000))
	}
}

// runJSON runs a --json invocation and checks the stream-wide rules: the
// line bounds, and stderr holding only dsh: lines.
func runJSON(t *testing.T, w *world, stdin io.Reader, args ...string) ([]jsonEvent, result) {
	t.Helper()
	r := w.run(stdin, args...)
	checkDshStderr(t, r.Stderr)
	return parseJSONStream(t, r.Stdout), r
}

// checkRunStream checks the shape of a --json stream of a run that reached
// its turn: `session` first, `final` last, no `error`.
func checkRunStream(t *testing.T, w *world, evs []jsonEvent) (sessionID string) {
	t.Helper()
	if len(evs) < 2 {
		t.Fatalf("--json stream too short: %v", streamKinds(evs))
	}
	first, last := evs[0], evs[len(evs)-1]
	if first.Type() != "session" || first.Str("sessionId") == "" || first.Str("cwd") != w.Cwd {
		t.Fatalf("first line = %s, want session{sessionId, cwd:%q}", first.Raw, w.Cwd)
	}
	if last.Type() != "final" {
		t.Fatalf("last line = %s, want final", shortHead(last.Raw, 300))
	}
	for _, e := range evs[1 : len(evs)-1] {
		if e.Type() == "session" || e.Type() == "final" || e.Type() == "error" {
			t.Errorf("unexpected %s line mid-stream: %s", e.Type(), shortHead(e.Raw, 300))
		}
	}
	return first.Str("sessionId")
}

// readLine reads one line from a running process's stdout, failing after
// timeout.
func readStdoutLine(t *testing.T, br *bufio.Reader, timeout time.Duration) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := br.ReadString('\n')
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reading stdout: %v (got %q)", r.err, r.s)
		}
		return r.s
	case <-time.After(timeout):
		t.Fatalf("no stdout line within %v", timeout)
		return ""
	}
}

// ---------------------------------------------------------------------------
// Default mode

func TestHeadlessDefaultMode(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)

	t.Run("text only: one stdout line, nothing on stderr with --quiet, exit 0", func(t *testing.T) {
		srv.Enqueue(modeltest.TextReply("Hello there."))
		r := w.run(nil, "run", "--quiet", "say hello")
		wantExit(t, r, 0)
		if r.Stdout != "Hello there.\n" {
			t.Errorf("stdout = %q, want the final message and a newline", r.Stdout)
		}
		if r.Stderr != "" {
			t.Errorf("stderr = %q, want nothing for a quiet text-only run", r.Stderr)
		}
	})

	t.Run("text only: the progress view says how it ended and the session", func(t *testing.T) {
		srv.Enqueue(modeltest.TextReply("Hello there."))
		r := w.run(nil, "run", "say hello")
		wantExit(t, r, 0)
		if r.Stdout != "Hello there.\n" {
			t.Errorf("stdout = %q, want the final message only", r.Stdout)
		}
		lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "dsh: sandbox ") || !strings.HasPrefix(lines[1], "dsh: completed · 1 step · ") || !strings.HasPrefix(lines[2], "dsh: session session-") {
			t.Errorf("stderr = %q, want the sandbox line, the summary and the session line", r.Stderr)
		}
	})

	t.Run("reasoning streams to stderr, the answer to stdout", func(t *testing.T) {
		srv.Enqueue(modeltest.NewStream().Role().
			Reasoning("First I ").Reasoning("think it over.").
			Text("The answer ").Text("is 42.").
			Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply())
		r := w.run(nil, "run", "-q", "what is the answer")
		wantExit(t, r, 0)
		if r.Stdout != "The answer is 42.\n" {
			t.Errorf("stdout = %q", r.Stdout)
		}
		if want := "dsh: reasoning:\nFirst I think it over.\n"; r.Stderr != want {
			t.Errorf("stderr = %q, want %q", r.Stderr, want)
		}
	})

	t.Run("the headless profile is the same door", func(t *testing.T) {
		for _, args := range [][]string{{"--profile", "headless", "-q", "hi"}, {"--profile=headless", "hi", "--quiet"}} {
			srv.Enqueue(modeltest.TextReply("profiled"))
			r := w.run(nil, args...)
			wantExit(t, r, 0)
			if r.Stdout != "profiled\n" || r.Stderr != "" {
				t.Errorf("%v: stdout %q stderr %q", args, r.Stdout, r.Stderr)
			}
		}
		r := w.run(nil, "--profile", "headless", "--bogus")
		wantExit(t, r, 2)
		if r.Stderr != "dsh: unknown option '--bogus'\n" {
			t.Errorf("stderr = %q", r.Stderr)
		}
	})

	t.Run("multi-line answer printed whole", func(t *testing.T) {
		srv.Enqueue(modeltest.TextReply("line one\nline two"))
		r := w.run(nil, "run", "two lines")
		wantExit(t, r, 0)
		if r.Stdout != "line one\nline two\n" {
			t.Errorf("stdout = %q", r.Stdout)
		}
	})
}

func TestHeadlessExitStatus(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)

	t.Run("401 ends the turn in error: exit 1, dsh: AUTH on stderr", func(t *testing.T) {
		srv.Enqueue(modeltest.ErrorReply(401, "Authentication Fails, Your api key is invalid"))
		r := w.run(nil, "run", "hello")
		wantExit(t, r, 1)
		if r.Stdout != "" {
			t.Errorf("stdout = %q, want nothing (no answer)", r.Stdout)
		}
		if !strings.Contains(r.Stderr, "dsh: AUTH: ") {
			t.Errorf("stderr lacks `dsh: AUTH: …`: %q", r.Stderr)
		}
	})

	t.Run("--json: an in-turn failure still ends with final and no error event", func(t *testing.T) {
		srv.Enqueue(modeltest.ErrorReply(401, "Authentication Fails"))
		evs, r := runJSON(t, w, nil, "run", "--json", "hello")
		wantExit(t, r, 1)
		checkRunStream(t, w, evs)
		var end *jsonEvent
		for i := range evs {
			if evs[i].kind() == "status:turn_end" {
				end = &evs[i]
			}
		}
		if end == nil {
			t.Fatalf("no turn_end: %v", streamKinds(evs))
		}
		reason, _ := end.Fields["reason"].(map[string]any)
		if reason["kind"] != "error" {
			t.Errorf("turn_end reason = %v, want kind error", end.Fields["reason"])
		}
		if e, _ := reason["error"].(map[string]any); e["code"] != "AUTH" {
			t.Errorf("turn_end reason error = %v, want code AUTH", reason["error"])
		}
	})

	t.Run("max-tokens is not completed: exit 1, partial answer still printed", func(t *testing.T) {
		srv.Enqueue(modeltest.NewStream().Role().Text("partial ans").Finish("length").Usage(modeltest.DefaultUsage).Done().Reply())
		r := w.run(nil, "run", "write a lot")
		wantExit(t, r, 1)
		if r.Stdout != "partial ans\n" {
			t.Errorf("stdout = %q", r.Stdout)
		}
		if !strings.Contains(r.Stderr, "dsh: ") {
			t.Errorf("stderr gives no reason: %q", r.Stderr)
		}
	})

	t.Run("missing credential: exit 1 before any request", func(t *testing.T) {
		w2 := newWorld(t, "DSH_PROVIDER=deepseek-official", "DEEPSEEK_BASE_URL="+srv.URL)
		before := srv.Count()
		r := w2.run(nil, "run", "hello")
		wantExit(t, r, 1)
		if !strings.HasPrefix(r.Stderr, "dsh: ") {
			t.Errorf("stderr = %q", r.Stderr)
		}
		if srv.Count() != before {
			t.Errorf("a request was sent without a key")
		}
	})

	t.Run("--help exits 0", func(t *testing.T) {
		r := w.run(nil, "run", "--help")
		wantExit(t, r, 0)
		if !strings.Contains(r.Stdout, "--session-id") {
			t.Errorf("help does not document --session-id: %q", shortHead(r.Stdout, 500))
		}
	})
}

// ---------------------------------------------------------------------------
// Usage errors

func TestHeadlessUsageErrors(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t) // nothing is enqueued: no case may reach the model
	w := newWorld(t, srv.Env()...)
	cases := []struct {
		name  string
		args  []string
		stdin string // "" → /dev/null
		want  string // the message, without "dsh: "
	}{
		{"unknown option", []string{"--bogus", "task"}, "", "unknown option '--bogus'"},
		{"missing option value", []string{"--session-id"}, "", "option '--session-id' argument missing"},
		{"blank session id", []string{"--session-id", "  ", "task"}, "", "must not be blank"},
		{"dash then word", []string{"-", "more"}, "piped", "`-` must be the only task argument"},
		{"word then dash", []string{"do", "-"}, "piped", "`-` must be the only task argument"},
		{"blank positional", []string{"   "}, "piped task", "a task is required"},
		{"blank positionals", []string{" ", "\t"}, "piped task", "a task is required"},
		{"blank stdin", nil, "  \n\t\n", "a task is required"},
		{"blank stdin via dash", []string{"-"}, "\n", "a task is required"},
		{"no task, stdin /dev/null", nil, "", "a task is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in io.Reader
			if c.stdin != "" {
				in = strings.NewReader(c.stdin)
			}
			r := w.run(in, append([]string{"run"}, c.args...)...)
			wantExit(t, r, 2)
			if r.Stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.Stdout)
			}
			if strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "dsh: ") || !strings.HasSuffix(r.Stderr, "\n") {
				t.Errorf("stderr = %q, want one `dsh: ` line", r.Stderr)
			}
			if !strings.Contains(r.Stderr, c.want) {
				t.Errorf("stderr = %q, want it to contain %q", r.Stderr, c.want)
			}
			if strings.Contains(r.Stderr, "error: ") {
				t.Errorf("stderr carries an `error: ` prefix: %q", r.Stderr)
			}
		})
		t.Run(c.name+" --json", func(t *testing.T) {
			var in io.Reader
			if c.stdin != "" {
				in = strings.NewReader(c.stdin)
			}
			args := append([]string{"run", "--json"}, c.args...)
			evs, r := runJSON(t, w, in, args...)
			wantExit(t, r, 2)
			if len(evs) != 1 || evs[0].Type() != "error" {
				t.Fatalf("stdout = %q, want exactly one error event", r.Stdout)
			}
			msg := evs[0].Str("message")
			if !strings.Contains(msg, c.want) || strings.HasPrefix(msg, "error:") {
				t.Errorf("error message = %q, want %q without an `error:` prefix", msg, c.want)
			}
			if r.Stderr != "" {
				t.Errorf("stderr = %q, want nothing (the error is the event)", r.Stderr)
			}
		})
	}

	t.Run("exact unknown-option event", func(t *testing.T) {
		for _, args := range [][]string{{"run", "--json", "--bogus"}, {"run", "--bogus", "--json"}} {
			r := w.run(nil, args...)
			wantExit(t, r, 2)
			if want := `{"type":"error","message":"unknown option '--bogus'"}` + "\n"; r.Stdout != want {
				t.Errorf("%v: stdout = %q, want %q", args, r.Stdout, want)
			}
		}
	})

	t.Run("--json as an option value or after -- is not special", func(t *testing.T) {
		// The id is "--json": it does not exist, so exit 1 in default mode.
		r := w.run(nil, "run", "--session-id", "--json", "task")
		wantExit(t, r, 1)
		if r.Stdout != "" || !strings.Contains(r.Stderr, `session "--json" does not exist`) {
			t.Errorf("stdout = %q, stderr = %q", r.Stdout, r.Stderr)
		}
		// After --, "--json" is a task word and "-" mixes with it.
		r = w.run(nil, "run", "--", "--json", "-")
		wantExit(t, r, 2)
		if r.Stdout != "" || !strings.Contains(r.Stderr, "`-` must be the only task argument") {
			t.Errorf("stdout = %q, stderr = %q", r.Stdout, r.Stderr)
		}
	})

	if n := srv.Count(); n != 0 {
		t.Errorf("%d model requests were made by usage errors", n)
	}
}

// A blank positional is a usage error that never reads a pipe: the bytes
// stay in the pipe for whoever meant them, and the process does not wait
// for the writer to close it.
func TestHeadlessBlankPositionalKeepsPipe(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	const piped = "this belongs to someone else\n"
	if _, err := pw.WriteString(piped); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := w.run(pr, "run", "  ")
	wantExit(t, r, 2)
	if !strings.Contains(r.Stderr, "a task is required") {
		t.Errorf("stderr = %q", r.Stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v: did it wait on the pipe?", d)
	}
	// The write end is still open, so a read can only see what is left.
	if err := pr.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, err := pr.Read(buf)
	if err != nil || string(buf[:n]) != piped {
		t.Fatalf("pipe holds %q (err %v), want %q untouched", buf[:n], err, piped)
	}
}

// Stdin that cannot be read is a runner failure (exit 1), not a usage
// error: the command line was fine.
func TestHeadlessUnreadableStdin(t *testing.T) {
	t.Parallel()
	w := newWorld(t, modeltest.New(t).Env()...)
	dir, err := os.Open(t.TempDir()) // read(2) on a directory: EISDIR
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	r := w.run(dir, "run")
	wantExit(t, r, 1)
	if !strings.HasPrefix(r.Stderr, "dsh: ") || !strings.Contains(r.Stderr, "stdin") {
		t.Errorf("stderr = %q", r.Stderr)
	}
	r = w.run(dir, "run", "--json")
	wantExit(t, r, 1)
	if !strings.HasPrefix(r.Stdout, `{"type":"error","message":"read task from stdin`) {
		t.Errorf("stdout = %q", r.Stdout)
	}
}

// openPTY returns the two ends of a new pseudo-terminal (Linux only).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("pty via /dev/ptmx ioctls is Linux-only here")
	}
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	const tiocgptn, tiocsptlck = 0x80045430, 0x40045431 // asm-generic ioctl numbers
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), tiocgptn, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Skipf("no pty: TIOCGPTN: %v", e)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), tiocsptlck, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Skipf("no pty: TIOCSPTLCK: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// No task while stdin is a terminal is a usage error: the run must not sit
// waiting for the keyboard.
func TestHeadlessNoTaskOnTerminal(t *testing.T) {
	t.Parallel()
	_, tty := openPTY(t)
	w := newWorld(t)
	for _, json := range []bool{false, true} {
		args := []string{"run"}
		if json {
			args = append(args, "--json")
		}
		r := w.run(tty, args...)
		wantExit(t, r, 2)
		out := r.Stderr
		if json {
			out = r.Stdout
		}
		if !strings.Contains(out, "a task is required") {
			t.Errorf("json=%v: stdout %q stderr %q, want the task-required usage error", json, r.Stdout, r.Stderr)
		}
	}
}

// ---------------------------------------------------------------------------
// The task

func TestHeadlessTaskSources(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	cases := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"joined positionals", []string{"fix", "the  bug", "now"}, "", "fix the  bug now"},
		{"positionals are the task, a pipe its context", []string{"from", "argv"}, "from the pipe\n",
			"from argv\n\nThe input piped to this run (stdin, 14 bytes):\n<stdin>\nfrom the pipe\n</stdin>"},
		{"pipe without positionals, verbatim", nil, "  indented task\nsecond line\n\n", "  indented task\nsecond line\n\n"},
		{"lone dash reads the pipe", []string{"-"}, "dash task\n", "dash task\n"},
		{"after --, a dash-looking word is a task", []string{"--", "--not-a-flag"}, "", "--not-a-flag"},
		{"non-ASCII", []string{"重构", "ça"}, "", "重构 ça"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv.Enqueue(modeltest.TextReply("ok"))
			var in io.Reader
			if c.stdin != "" {
				in = strings.NewReader(c.stdin)
			}
			before := srv.Count()
			r := w.run(in, append([]string{"run"}, c.args...)...)
			wantExit(t, r, 0)
			reqs := srv.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("%d requests, want 1", len(reqs)-before)
			}
			if got := lastUserText(t, reqs[before]); got != c.want {
				t.Errorf("the model saw %q, want %q", got, c.want)
			}
		})
	}
}

// A 1 MB prompt arrives on stdin and reaches the model whole.
func TestHeadlessLargePromptFromStdin(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "line %07d: the quick brown fox jumps over the lazy dog\n", i)
	}
	prompt := b.String()
	srv.Enqueue(modeltest.TextReply("read it all"))
	evs, r := runJSON(t, w, strings.NewReader(prompt), "run", "--json")
	wantExit(t, r, 0)
	checkRunStream(t, w, evs)
	if got := lastUserText(t, srv.Last()); got != prompt {
		t.Fatalf("the model saw %d bytes, want the %d-byte prompt verbatim", len(got), len(prompt))
	}
	// user/message echoes are not projected, so the 1 MB never hits stdout.
	if len(r.Stdout) > 8<<10 {
		t.Errorf("stdout is %d bytes: the prompt was echoed?", len(r.Stdout))
	}
}

// ---------------------------------------------------------------------------
// --json

// The exact line order of a turn whose first step reasons, says something
// and calls a tool, and whose second step answers.
func TestHeadlessJSONOrder(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	srv.Enqueue(
		modeltest.NewStream().Role().
			Reasoning("I should ").Reasoning("look at the files.").
			Text("Let me check.").
			ToolCall(0, "call_ls", "bash", `{"command":"echo hello-from-bash","description":"say hello"}`, 3).
			Finish("tool_calls").Usage(modeltest.DefaultUsage).Done().Reply(),
		modeltest.ReasoningReply("It printed hello.", "All done."),
	)
	evs, r := runJSON(t, w, nil, "run", "--json", "look around")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)

	want := []string{
		"session",
		"status:turn_start", "status:step_start",
		"thinking", "text", "tool_call", "tool_result",
		"status:step_end", "status:step_start",
		"thinking", "text",
		"status:step_end", "status:turn_end",
		"final",
	}
	if got := streamKinds(evs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("line order\n got %v\nwant %v\nstdout:\n%s", got, want, r.Stdout)
	}
	exact := map[int]string{
		1:  `{"type":"status","phase":"turn_start","turn":1}`,
		2:  `{"type":"status","phase":"step_start","turn":1,"step":1}`,
		3:  `{"type":"thinking","text":"I should look at the files."}`,
		4:  `{"type":"text","text":"Let me check."}`,
		5:  `{"type":"tool_call","callId":"call_ls","tool":"bash","input":{"command":"echo hello-from-bash","description":"say hello"}}`,
		6:  `{"type":"tool_result","callId":"call_ls","status":"completed","result":"hello-from-bash\n[exit code: 0]"}`,
		8:  `{"type":"status","phase":"step_start","turn":1,"step":2}`,
		9:  `{"type":"thinking","text":"It printed hello."}`,
		10: `{"type":"text","text":"All done."}`,
		12: `{"type":"status","phase":"turn_end","turn":1,"reason":{"kind":"completed"}}`,
		13: `{"type":"final","text":"All done."}`,
	}
	for i, line := range exact {
		if evs[i].Raw != line {
			t.Errorf("line %d\n got %s\nwant %s", i+1, evs[i].Raw, line)
		}
	}
	// step_end carries the usage the server reported (one attempt each).
	for _, i := range []int{7, 11} {
		u, ok := evs[i].Fields["usage"].(map[string]any)
		if !ok {
			t.Errorf("line %d has no usage: %s", i+1, evs[i].Raw)
			continue
		}
		in, _ := u["inputTokens"].(json.Number).Int64()
		cache, _ := u["cacheReadTokens"].(json.Number).Int64()
		out, _ := u["outputTokens"].(json.Number).Int64()
		if in+cache != int64(modeltest.DefaultUsage.PromptTokens) || out != int64(modeltest.DefaultUsage.CompletionTokens) {
			t.Errorf("line %d usage = %v, want prompt %d (input+cache) and completion %d", i+1, u,
				modeltest.DefaultUsage.PromptTokens, modeltest.DefaultUsage.CompletionTokens)
		}
	}
	// No reasoning on stderr in --json mode.
	if strings.Contains(r.Stderr, "look at the files") || strings.Contains(r.Stderr, "reasoning") {
		t.Errorf("reasoning reached stderr in --json mode: %q", r.Stderr)
	}
	// The stream is a projection of the durable log: the log has the same
	// session and the same committed answer.
	_, log, err := store.New(w.Root).Read(id)
	if err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1]; last.Type != event.TypeTurnEnd {
		t.Errorf("log ends with %s, want turn/end", last.Type)
	}
}

// A retried attempt leaves no trace: only the committed attempt's text is
// projected, and step usage is summed over the attempts only when every
// attempt reported one.
func TestHeadlessJSONRetryProjectsCommitOnly(t *testing.T) {
	t.Parallel()
	u1 := modeltest.Usage{PromptTokens: 50, CompletionTokens: 7}
	u2 := modeltest.Usage{PromptTokens: 100, CompletionTokens: 20}
	for _, c := range []struct {
		name      string
		attempt   modeltest.Reply // fails after streaming text: retried
		wantUsage string          // "" = no usage on step_end
	}{
		{"attempt without usage", modeltest.NewStream().Role().Text("discarded words").Reply(), ""},
		{"attempt with usage", modeltest.NewStream().Role().Text("discarded words").Usage(u1).Reply(),
			`{"cacheReadTokens":0,"inputTokens":150,"outputTokens":27,"reasoningTokens":0,"totalTokens":177}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.New(t)
			w := newWorld(t, srv.Env()...)
			srv.Enqueue(c.attempt,
				modeltest.NewStream().Role().Text("kept words").Finish("stop").Usage(u2).Done().Reply())
			evs, r := runJSON(t, w, nil, "run", "--json", "retry me")
			wantExit(t, r, 0)
			checkRunStream(t, w, evs)
			if srv.Count() != 2 {
				t.Fatalf("%d requests, want a retry", srv.Count())
			}
			if strings.Contains(r.Stdout, "discarded") {
				t.Errorf("a discarded attempt's text was projected:\n%s", r.Stdout)
			}
			var texts []string
			for _, e := range evs {
				switch e.kind() {
				case "text":
					texts = append(texts, e.Str("text"))
				case "status:step_end":
					var got string
					if u, ok := e.Fields["usage"]; ok {
						b, _ := json.Marshal(u)
						got = string(b)
					}
					switch {
					case got == c.wantUsage:
					default:
						t.Errorf("step_end usage = %s, want %q", got, c.wantUsage)
					}
				}
			}
			if strings.Join(texts, "|") != "kept words" {
				t.Errorf("text events = %q, want just the committed one", texts)
			}
		})
	}
}

func TestHeadlessJSONBounds(t *testing.T) {
	t.Parallel()

	t.Run("a 9 KiB error message is cut to 8 KiB", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, modeltest.New(t).Env()...)
		id := strings.Repeat("k", 9<<10)
		evs, r := runJSON(t, w, nil, "run", "--json", "--session-id", id, "task")
		wantExit(t, r, 1)
		if len(evs) != 1 || evs[0].Type() != "error" {
			t.Fatalf("stdout = %q, want one error event", shortHead(r.Stdout, 500))
		}
		msg := evs[0].Str("message")
		if len(msg) != maxJSONString {
			t.Errorf("message is %d bytes, want cut to exactly %d", len(msg), maxJSONString)
		}
		if !strings.HasPrefix(msg, `session "kkkk`) {
			t.Errorf("message = %q…", shortHead(msg, 60))
		}
		if !evs[0].Truncated() {
			t.Errorf("a cut error event lacks truncated:true: %s", shortTail(evs[0].Raw, 100))
		}
		// Default mode prints the whole message on stderr.
		r = w.run(nil, "run", "--session-id", id, "task")
		wantExit(t, r, 1)
		if !strings.Contains(r.Stderr, id+`" does not exist`) {
			t.Errorf("default mode cut the message: %d bytes", len(r.Stderr))
		}
	})

	t.Run("a cut multi-byte string stays valid UTF-8", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, modeltest.New(t).Env()...)
		id := strings.Repeat("界", 3<<10) // 9 KiB of 3-byte runes
		evs, r := runJSON(t, w, nil, "run", "--json", "--session-id", id, "task")
		wantExit(t, r, 1)
		msg := evs[0].Str("message")
		if len(msg) > maxJSONString || len(msg) < maxJSONString-3 || !utf8.ValidString(msg) || strings.ContainsRune(msg, utf8.RuneError) {
			t.Errorf("message: %d bytes, valid=%v", len(msg), utf8.ValidString(msg))
		}
		if !evs[0].Truncated() {
			t.Error("no truncated:true")
		}
	})

	t.Run("an over-long line keeps its scalars; deep nesting is cut", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t)
		w := newWorld(t, srv.Env()...)
		var wide strings.Builder
		wide.WriteString("{")
		for i := range 6 {
			if i > 0 {
				wide.WriteString(",")
			}
			fmt.Fprintf(&wide, "%q:%q", fmt.Sprintf("k%d", i), strings.Repeat("v", 9<<10))
		}
		wide.WriteString("}")
		deep := `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
		srv.Enqueue(
			modeltest.ToolCallsReply("",
				modeltest.Call{ID: "call_wide", Name: "no_such_tool", Args: wide.String()},
				modeltest.Call{ID: "call_deep", Name: "no_such_tool", Args: deep}),
			modeltest.TextReply("done"),
		)
		evs, r := runJSON(t, w, nil, "run", "--json", "odd calls")
		wantExit(t, r, 0)
		checkRunStream(t, w, evs)
		n := 0
		for _, e := range evs {
			if e.Type() != "tool_call" {
				continue
			}
			n++
			switch e.Str("callId") {
			case "call_wide":
				// 6 × 8 KiB cannot fit in 32 KiB: the input goes, the
				// scalar fields stay.
				if _, has := e.Fields["input"]; has || e.Str("tool") != "no_such_tool" || !e.Truncated() {
					t.Errorf("wide call = %s", shortHead(e.Raw, 300))
				}
			case "call_deep":
				if !strings.Contains(e.Raw, `"[truncated: depth]"`) || !e.Truncated() {
					t.Errorf("deep call = %s", shortHead(e.Raw, 600))
				}
			}
		}
		if n != 2 {
			t.Errorf("%d tool_call lines, want 2: %v", n, streamKinds(evs))
		}
	})

	t.Run("1 MB tool output and 1 MB tool input are bounded; final is not", func(t *testing.T) {
		t.Parallel()
		srv := modeltest.New(t)
		// Debug logging too: stderr must still carry only dsh: lines.
		w := newWorld(t, append(srv.Env(), "DSH_LOG_LEVEL=debug")...)
		bigArgs := modeltest.BigArgs(1 << 20) // write big.txt, 1 MB of x
		bigFinal := strings.Repeat("The end. ", 5000)
		srv.Enqueue(
			modeltest.ToolCallsReply("print a lot",
				modeltest.Call{ID: "call_big_out", Name: "bash",
					Args: `{"command":"yes 0123456789abcdef | head -c 1048576","description":"print 1 MB"}`},
				modeltest.Call{ID: "call_big_in", Name: "write", Args: bigArgs, Fragments: 64},
			),
			modeltest.TextReply(bigFinal),
		)
		evs, r := runJSON(t, w, nil, "run", "--json", "make noise")
		wantExit(t, r, 0)
		checkRunStream(t, w, evs)
		seen := map[string]bool{}
		for _, e := range evs {
			switch {
			case e.Type() == "tool_result" && e.Str("callId") == "call_big_out":
				seen["out"] = true
				res := e.Str("result")
				if len(res) != maxJSONString || !strings.HasPrefix(res, "0123456789abcdef\n") || !e.Truncated() {
					t.Errorf("bash result: %d bytes, truncated=%v, starts %q", len(res), e.Truncated(), shortHead(res, 40))
				}
			case e.Type() == "tool_call" && e.Str("callId") == "call_big_in":
				seen["in"] = true
				in, _ := e.Fields["input"].(map[string]any)
				content, _ := in["content"].(string)
				if in["file_path"] != "big.txt" || len(content) != maxJSONString || !e.Truncated() {
					t.Errorf("write input: file_path %v, content %d bytes, truncated=%v", in["file_path"], len(content), e.Truncated())
				}
			case e.Type() == "tool_result" && e.Str("callId") == "call_big_in":
				if e.Str("status") != "completed" {
					t.Errorf("write failed: %s", shortHead(e.Raw, 500))
				}
			case e.Type() == "final":
				if e.Str("text") != bigFinal || e.Truncated() {
					t.Errorf("final: %d bytes, want the %d-byte answer whole", len(e.Str("text")), len(bigFinal))
				}
			}
		}
		if !seen["out"] || !seen["in"] {
			t.Fatalf("missing events: %v", streamKinds(evs))
		}
		if fi, err := os.Stat(filepath.Join(w.Cwd, "big.txt")); err != nil || fi.Size() < 1<<20-64 {
			t.Errorf("big.txt: %v %v: the tool ran with the whole input?", fi, err)
		}
		if !srv.WaitCount(2, time.Second) {
			t.Fatal("no second request")
		}
		// The model itself got the tool's output (as the tool bounds it),
		// well beyond the 8 KiB the supervisor sees.
		for _, m := range srv.Requests()[1].Body.Messages {
			if m.Role == "tool" && m.ToolCallID == "call_big_out" && len(m.Text()) <= maxJSONString {
				t.Errorf("the model got only %d bytes of the bash output", len(m.Text()))
			}
		}
	})
}

// ---------------------------------------------------------------------------
// --session-id

func TestHeadlessSessionIDTwoWakes(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)

	// Wake 1 mints the id and reports it first.
	srv.Enqueue(modeltest.ReasoningReply("first thoughts", "The secret word is PAPAYA."))
	evs, r := runJSON(t, w, nil, "run", "--json", "remember a secret word")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)
	if !strings.HasPrefix(id, "session-") {
		t.Errorf("minted id %q, want session-<uuid>", id)
	}

	// Wake 2 names it and continues the history.
	srv.Enqueue(modeltest.TextReply("It was PAPAYA."))
	evs, r = runJSON(t, w, strings.NewReader("what was the word?\n"), "run", "--json", "--session-id", id)
	wantExit(t, r, 0)
	if got := checkRunStream(t, w, evs); got != id {
		t.Fatalf("wake 2 reported session %q, want %q", got, id)
	}
	if evs[1].Raw != `{"type":"status","phase":"turn_start","turn":2}` {
		t.Errorf("wake 2 turn_start = %s, want turn 2", evs[1].Raw)
	}
	req := srv.Last()
	var roles, texts []string
	for _, m := range req.Body.Messages {
		if m.Role == "system" || strings.HasPrefix(m.Text(), modeltest.ContextTag) {
			continue
		}
		roles = append(roles, m.Role)
		texts = append(texts, m.Text())
	}
	if strings.Join(roles, ",") != "user,assistant,user" ||
		texts[0] != "remember a secret word" || texts[1] != "The secret word is PAPAYA." || texts[2] != "what was the word?\n" {
		t.Errorf("wake 2 request history: roles %v texts %q", roles, texts)
	}
	// (modeltest also checked that wake 2's request byte-extends wake 1's.)

	// Wake 3 in default mode continues too.
	srv.Enqueue(modeltest.TextReply("Still PAPAYA."))
	r = w.run(nil, "run", "--session-id", id, "and now?")
	wantExit(t, r, 0)
	if r.Stdout != "Still PAPAYA.\n" {
		t.Errorf("wake 3 stdout = %q", r.Stdout)
	}
	if n := len(srv.Last().Body.Messages); n != 7 { // system + context + 3 user + 2 assistant
		t.Errorf("wake 3 sent %d messages, want 7", n)
	}

	// The alias names the same door.
	srv.Enqueue(modeltest.TextReply("Via the profile."))
	evs, r = runJSON(t, w, nil, "--profile", "headless", "--json", "--session-id", id, "once more")
	wantExit(t, r, 0)
	if checkRunStream(t, w, evs) != id {
		t.Error("profile alias did not adopt the session")
	}
}

func TestHeadlessSessionIDRefusals(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t) // nothing enqueued: no refusal may reach the model
	w := newWorld(t, srv.Env()...)
	st := store.New(w.Root)
	mk := func(h store.Header) string {
		t.Helper()
		lg, err := st.Create(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := lg.Close(); err != nil {
			t.Fatal(err)
		}
		return h.ID
	}
	other := t.TempDir()
	cases := []struct {
		name string
		id   string
		want string
	}{
		{"missing", "session-nope", `session "session-nope" does not exist; omit --session-id to start a new session`},
		{"another cwd", mk(store.Header{ID: "elsewhere", Cwd: other, Origin: "run"}), "belongs to " + other},
		{"no cwd", mk(store.Header{ID: "nowhere", Origin: "sdk"}), "recorded no working directory"},
		{"subagent (parentSession)", mk(store.Header{ID: "child", Cwd: w.Cwd, ParentSession: "p", Origin: "subagent", DelegationDepth: 1}), "subagent"},
		{"forked (parentSession only)", mk(store.Header{ID: "fork", Cwd: w.Cwd, ParentSession: "p"}), "subagent's or forked session; it cannot be adopted"},
		{"subagent (origin only)", mk(store.Header{ID: "child2", Cwd: w.Cwd, Origin: "subagent"}), "subagent"},
		{"whitespace is part of the id", " session-nope ", `session " session-nope " does not exist`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.run(strings.NewReader("unread\n"), "run", "--session-id", c.id, "task")
			wantExit(t, r, 1)
			if r.Stdout != "" {
				t.Errorf("stdout = %q", r.Stdout)
			}
			if !strings.HasPrefix(r.Stderr, "dsh: ") || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("stderr = %q, want a dsh: line containing %q", r.Stderr, c.want)
			}
			evs, r := runJSON(t, w, nil, "run", "--json", "--session-id", c.id, "task")
			wantExit(t, r, 1)
			if len(evs) != 1 || evs[0].Type() != "error" || !strings.Contains(evs[0].Str("message"), c.want) {
				t.Errorf("--json stdout = %q, want one error event containing %q", r.Stdout, c.want)
			}
		})
	}
	// Refusals write nothing: the refused logs are as created.
	for _, id := range []string{"elsewhere", "nowhere", "child", "fork", "child2"} {
		if _, evs, err := st.Read(id); err != nil || len(evs) != 0 {
			t.Errorf("session %s: %d events, err %v: a refused adoption wrote to the log", id, len(evs), err)
		}
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d model requests were made by refused adoptions", n)
	}
}

// A session whose lease a live dsh holds cannot be adopted; once that run
// ends, it can.
func TestHeadlessSessionIDLeased(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	gate := make(chan struct{})
	srv.Enqueue(modeltest.NewStream().Role().Text("slow ").Gate(gate).Text("answer").
		Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply())

	cmd, stdin, stdout, errb := w.start("run", "--json", "a slow task")
	stdin.Close()
	br := bufio.NewReader(stdout)
	var sess struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(readStdoutLine(t, br, 10*time.Second)), &sess); err != nil || sess.Type != "session" {
		t.Fatalf("first line: %v %+v", err, sess)
	}
	if !srv.WaitCount(1, 10*time.Second) {
		t.Fatal("the slow run never asked the model")
	}

	r := w.run(nil, "run", "--session-id", sess.SessionID, "cut in")
	wantExit(t, r, 1)
	if want := fmt.Sprintf("session %q is open for writing in another process", sess.SessionID); !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr = %q, want %q", r.Stderr, want)
	}
	evs, r := runJSON(t, w, nil, "run", "--json", "--session-id", sess.SessionID, "cut in")
	wantExit(t, r, 1)
	if len(evs) != 1 || evs[0].Type() != "error" || !strings.Contains(evs[0].Str("message"), "open for writing in another process") {
		t.Errorf("--json: %q", r.Stdout)
	}
	if srv.Count() != 1 {
		t.Errorf("%d requests: a refused run reached the model", srv.Count())
	}

	close(gate) // release the first run
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first run: %v\nstderr: %s", err, errb.String())
	}
	if !strings.Contains(string(rest), `{"type":"final","text":"slow answer"}`) {
		t.Errorf("first run's stream: %s", rest)
	}

	// Released: now it adopts.
	srv.Enqueue(modeltest.TextReply("adopted"))
	r = w.run(nil, "run", "--session-id", sess.SessionID, "now me")
	wantExit(t, r, 0)
	if r.Stdout != "adopted\n" {
		t.Errorf("stdout = %q", r.Stdout)
	}
}

// ---------------------------------------------------------------------------
// Signals

// SIGTERM mid-turn: the process exits 1 promptly, the stream still ends
// with final, and the log closes the turn as aborted (a real turn/end, not
// a synthetic closer of a crashed log).
func TestHeadlessSIGTERM(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	srv.Enqueue(modeltest.NewStream().Role().Reasoning("thinking for a long time").Stall().Reply())

	cmd, stdin, stdout, errb := w.start("run", "--json", "take forever")
	stdin.Close()
	br := bufio.NewReader(stdout)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(readStdoutLine(t, br, 10*time.Second)), &sess); err != nil || sess.SessionID == "" {
		t.Fatalf("first line: %v", err)
	}
	if !srv.WaitCount(1, 10*time.Second) {
		t.Fatal("no model request")
	}
	req := srv.Requests()[0]

	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	err := cmd.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1\nstderr: %s", err, errb.String())
	}
	if took > 3*time.Second {
		t.Errorf("exit took %v after SIGTERM, want prompt", took)
	}
	checkDshStderr(t, errb.String())
	evs := parseJSONStream(t, string(rest))
	if last := evs[len(evs)-1]; last.Type() != "final" {
		t.Errorf("stream after SIGTERM ends with %s, want final: %v", last.Type(), streamKinds(evs))
	}
	var endReason any
	for _, e := range evs {
		if e.kind() == "status:turn_end" {
			endReason = e.Fields["reason"]
		}
	}
	if m, _ := endReason.(map[string]any); m["kind"] != "aborted" {
		t.Errorf("turn_end reason = %v, want aborted", endReason)
	}
	select {
	case <-req.Disconnected():
	case <-time.After(2 * time.Second):
		t.Error("the model request was not cancelled")
	}

	_, log, err := store.New(w.Root).Read(sess.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	last := log[len(log)-1]
	if last.Type != event.TypeTurnEnd {
		t.Fatalf("log ends with %s, want turn/end", last.Type)
	}
	end, err := event.Decode[event.TurnEnd](last)
	if err != nil {
		t.Fatal(err)
	}
	if end.Reason.Kind != event.ReasonAborted {
		t.Errorf("log's last turn/end reason = %+v, want aborted (interrupted = synthetic closer: the log was not closed)", end.Reason)
	}
	// The lease was released: another wake can adopt at once.
	if leased, err := store.New(w.Root).Leased(sess.SessionID); err != nil || leased {
		t.Errorf("lease still held after exit: %v %v", leased, err)
	}
}

// The default-mode stream after SIGTERM: exit 1 and a dsh: line saying why.
func TestHeadlessSIGTERMDefaultMode(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	srv.Enqueue(modeltest.NewStream().Role().Stall().Reply())
	cmd, stdin, stdout, errb := w.start("run", "take forever")
	stdin.Close()
	if !srv.WaitCount(1, 10*time.Second) {
		t.Fatal("no model request")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(stdout)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want 1", err)
	}
	if len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("stdout = %q, want nothing", out)
	}
	if !strings.Contains(errb.String(), "dsh: turn ended aborted") {
		t.Errorf("stderr = %q", errb.String())
	}
}

// SIGTERM while a tool runs: the tool's process is killed and reaped, the
// call gets an aborted result and the turn ends aborted.
func TestHeadlessSIGTERMDuringTool(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	// Unconfined: the test checks the pid the command prints, which is a
	// host pid only outside the sandbox's PID namespace.
	w := newWorld(t, append(srv.Env(), "DSH_SANDBOX=off")...)
	srv.Enqueue(modeltest.ToolCallsReply("", modeltest.Call{ID: "call_sleep", Name: "bash",
		Args: `{"command":"echo $$ > child.pid; exec sleep 30","description":"wait"}`}))
	started := newFIFO(t, filepath.Join(w.Cwd, "child.pid"))
	cmd, stdin, stdout, errb := w.start("run", "--json", "wait a while")
	stdin.Close()
	br := bufio.NewReader(stdout)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(readStdoutLine(t, br, 10*time.Second)), &sess); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(started.wait(t, 10*time.Second, "the tool never started")), &pid); err != nil {
		t.Fatalf("child.pid: %v\nstderr: %s", err, errb.String())
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	err := cmd.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want 1\nstderr: %s", err, errb.String())
	}
	if took > 3*time.Second {
		t.Errorf("exit took %v after SIGTERM", took)
	}
	// The sleep is gone: dsh killed and reaped its tool before it exited.
	if syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the tool's process %d outlived dsh", pid)
	}
	evs := parseJSONStream(t, string(rest))
	var result jsonEvent
	for _, e := range evs {
		if e.Type() == "tool_result" {
			result = e
		}
	}
	if result.Str("callId") != "call_sleep" || result.Str("status") != "error" {
		t.Errorf("tool_result = %s, want an error result for call_sleep", result.Raw)
	}
	if last := evs[len(evs)-1]; last.Type() != "final" {
		t.Errorf("stream ends with %s", last.Type())
	}
	_, log, err := store.New(w.Root).Read(sess.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	end, err := event.Decode[event.TurnEnd](log[len(log)-1])
	if err != nil || end.Reason.Kind != event.ReasonAborted {
		t.Errorf("log ends with %s %+v (%v), want turn/end aborted", log[len(log)-1].Type, end.Reason, err)
	}
}

// A wake killed outright (SIGKILL mid-tool) leaves an unfinished turn; the
// next wake adopts the session, the store closes the turn, and the model
// gets a well-formed history (modeltest checks that every tool call is
// answered and that the request extends the crashed one).
func TestHeadlessAdoptAfterCrash(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	// Unconfined: the cleanup below signals the pid the command prints,
	// a host pid only outside the sandbox's PID namespace.
	w := newWorld(t, append(srv.Env(), "DSH_SANDBOX=off")...)
	srv.Enqueue(modeltest.ToolCallsReply("run it", modeltest.Call{ID: "call_hang", Name: "bash",
		Args: `{"command":"echo $$ > child.pid; exec sleep 30","description":"hang"}`}))
	started := newFIFO(t, filepath.Join(w.Cwd, "child.pid"))
	cmd, stdin, stdout, _ := w.start("run", "--json", "crash during a tool")
	stdin.Close()
	br := bufio.NewReader(stdout)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(readStdoutLine(t, br, 10*time.Second)), &sess); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(started.wait(t, 10*time.Second, "the tool never started")), &pid); err != nil {
		t.Fatalf("child.pid: %v", err)
	}
	_ = cmd.Process.Kill()
	_, _ = io.Copy(io.Discard, br)
	_ = cmd.Wait()
	// A SIGKILLed dsh cannot reap its tool; do it for it.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)

	srv.Enqueue(modeltest.TextReply("recovered"))
	evs, r := runJSON(t, w, nil, "run", "--json", "--session-id", sess.SessionID, "try again")
	wantExit(t, r, 0)
	if checkRunStream(t, w, evs) != sess.SessionID {
		t.Fatal("wrong session")
	}
	if evs[1].Raw != `{"type":"status","phase":"turn_start","turn":2}` {
		t.Errorf("turn_start = %s, want turn 2", evs[1].Raw)
	}
	// The synthetic closers of turn 1 are history, not part of this wake.
	for _, e := range evs {
		if e.Type() == "tool_result" || (e.kind() == "status:turn_end" && !strings.Contains(e.Raw, `"turn":2`)) {
			t.Errorf("projected an event of the crashed turn: %s", e.Raw)
		}
	}
	var roles []string
	for _, m := range srv.Last().Body.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,user,assistant,tool,user" { // system, context, prompt, …
		t.Errorf("resumed request roles = %v", roles)
	}
}
