package e2e

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the progress view")

// progressScripts are the turns whose stderr view is kept as golden files.
var progressScripts = map[string]string{
	"text": `{"steps": [{"reasoning": "The user greets me.", "text": "Hello there."}]}`,
	"tool": `{"steps": [
		{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi", "description": "say hi"}}]},
		{"text": "It printed hi."}]}`,
	"refused-write": `{"steps": [
		{"toolCalls": [{"name": "write", "arguments": {"file_path": "/proc/dsh-not-here", "content": "x"}}]},
		{"text": "I could not write it."}]}`,
	"retries": `{"steps": [
		{"errors": [{"class": "RATE_LIMIT", "status": 429, "retryAfterMs": 20},
		            {"class": "SERVER", "status": 503, "retryAfterMs": 20}],
		 "text": "made it"}]}`,
}

// maskProgress removes what differs from run to run: spinner redraws (on a
// terminal), times, token counts and session ids.
func maskProgress(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n") // a pty turns \n into \r\n
	s = regexp.MustCompile(`\r[^\r\n]*?\x1b\[K`).ReplaceAllString(s, "")
	s = regexp.MustCompile(`\d+(\.\d+)?s\b`).ReplaceAllString(s, "<t>")
	s = regexp.MustCompile(`tokens [^\n]*`).ReplaceAllString(s, "tokens <n>")
	s = regexp.MustCompile(`session-[0-9a-f]{32}`).ReplaceAllString(s, "session-<id>")
	s = regexp.MustCompile(`outside the workspace [^\n]*`).ReplaceAllString(s, "outside the workspace <ws>")
	s = regexp.MustCompile(`dsh: sandbox [^\n]*`).ReplaceAllString(s, "dsh: sandbox <what is in force here>")
	return s
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "progress", name+".txt")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: stderr view differs from %s\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

func TestProgressViewOnAPipe(t *testing.T) {
	for name, script := range progressScripts {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.Env = append(w.Env, w.scriptEnv(script)...)
			r := w.run(nil, "run", "do it")
			if strings.Contains(r.Stderr, "\x1b[") {
				t.Errorf("escape codes on a pipe: %q", r.Stderr)
			}
			if name != "text" && strings.Contains(r.Stdout, "dsh:") {
				t.Errorf("progress leaked to stdout: %q", r.Stdout)
			}
			checkGolden(t, name+".pipe", maskProgress(r.Stderr))
			quiet := w.run(nil, "run", "--quiet", "do it")
			if strings.Contains(quiet.Stderr, "→") || strings.Contains(quiet.Stderr, "dsh: session") {
				t.Errorf("--quiet printed progress: %q", quiet.Stderr)
			}
		})
	}
}

// runOnTTY runs dsh with stderr on a pseudo-terminal and stdout on a pipe.
func runOnTTY(t *testing.T, w *world, extraEnv []string, args ...string) (stdout, stderr string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(dshBin, args...)
	cmd.Dir, cmd.Env = w.Cwd, append(append([]string{}, w.Env...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var errb bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&errb, ptmx); close(copied) }()
	_ = cmd.Wait()
	<-copied // the pty reports EIO once the last writer is gone
	return out.String(), errb.String()
}

func TestProgressViewOnATerminal(t *testing.T) {
	for name, script := range progressScripts {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.Env = append(w.Env, w.scriptEnv(script)...)
			stdout, stderr := runOnTTY(t, w, nil, "run", "do it")
			if !strings.Contains(stderr, "\rdsh: ⠋") {
				t.Errorf("no spinner on a terminal: %q", stderr)
			}
			if strings.Contains(stdout, "dsh:") || stdout == "" {
				t.Errorf("stdout %q: want the answer only", stdout)
			}
			checkGolden(t, name+".tty", maskProgress(stderr))
			_, plain := runOnTTY(t, w, []string{"NO_COLOR=1"}, "run", "do it")
			if strings.Contains(plain, "\x1b[3") {
				t.Errorf("colours despite NO_COLOR: %q", plain)
			}
		})
	}
}

func TestRunContinueAndPrefixes(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(`{"steps": [{"text": "ok"}], "repeat": "last"}`)...)
	if r := w.run(nil, "run", "-c", "nothing yet"); r.Code != 1 || !strings.Contains(r.Stderr, "no session to continue in "+w.Cwd) {
		t.Fatalf("--continue with no session: exit %d, stderr %q", r.Code, r.Stderr)
	}
	first := w.run(nil, "run", "first")
	m := regexp.MustCompile(`dsh: session (session-[0-9a-f]{32})`).FindStringSubmatch(first.Stderr)
	if first.Code != 0 || m == nil {
		t.Fatalf("first run: exit %d, stderr %q", first.Code, first.Stderr)
	}
	id := m[1]
	if r := w.run(nil, "run", "--continue", "second"); r.Code != 0 || !strings.Contains(r.Stderr, id) {
		t.Fatalf("--continue: exit %d, stderr %q; want session %s", r.Code, r.Stderr, id)
	}
	if r := w.run(nil, "run", "--session-id", id[:14], "third", "--json"); r.Code != 0 || !strings.Contains(r.Stdout, `"sessionId":"`+id+`"`) {
		t.Fatalf("unique prefix: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	second := w.run(nil, "run", "another")
	if second.Code != 0 {
		t.Fatal(second.Stderr)
	}
	if r := w.run(nil, "run", "--session-id", "session-", "x"); r.Code != 1 || !strings.Contains(r.Stderr, "give more of the id") {
		t.Fatalf("ambiguous prefix: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := w.run(nil, "sessions", "show", id[:14]); r.Code != 0 || strings.Count(r.Stdout, "── turn") != 3 {
		t.Fatalf("show by prefix: exit %d, stdout %q", r.Code, r.Stdout)
	}
}

func TestRunCtrlCExits130AfterRecordingAbort(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(`{"steps": [
		{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30", "description": "wait"}}]},
		{"text": "never"}]}`)...)
	cmd := exec.Command(dshBin, "run", "wait a while")
	cmd.Dir, cmd.Env = w.Cwd, w.Env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "→ bash: sleep 30") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		seen = append(seen, sc.Text())
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stderr:\n%s", err, strings.Join(seen, "\n"))
	}
	r := w.run(nil, "sessions", "list", "--json")
	if !strings.Contains(r.Stdout, `"events"`) {
		t.Fatalf("no session recorded: %q", r.Stdout)
	}
	show := w.run(nil, "sessions", "show", regexp.MustCompile(`session-[0-9a-f]{32}`).FindString(r.Stdout))
	if !strings.Contains(show.Stdout, "turn 1 ended: aborted") {
		t.Errorf("the turn was not recorded aborted:\n%s", show.Stdout)
	}
}

// --log-level info and debug say what the session did, from its committed
// events, and never print the API key.
func TestLogLevelsShowTheWork(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(progressScripts["refused-write"])...)
	w.Env = append(w.Env, "DEEPSEEK_API_KEY=sk-never-printed-1234")
	quiet := w.run(nil, "run", "--quiet", "do it")
	if strings.Contains(quiet.Stderr, "level=") {
		t.Errorf("the default level logged events: %q", quiet.Stderr)
	}
	info := w.run(nil, "run", "--log-level", "info", "do it")
	for _, want := range []string{`msg="model response"`, "promptTokens=", `msg="tool result"`, "took=",
		"msg=permission", "tool=write decision=deny", `msg="turn end"`} {
		if !strings.Contains(info.Stderr, want) {
			t.Errorf("--log-level info lacks %q:\n%s", want, info.Stderr)
		}
	}
	debug := w.run(nil, "run", "--log-level", "debug", "do it")
	for _, want := range []string{`msg="tool call"`, `msg="model request prefix"`, "systemBytes="} {
		if !strings.Contains(debug.Stderr, want) {
			t.Errorf("--log-level debug lacks %q:\n%s", want, debug.Stderr)
		}
	}
	for _, r := range []result{info, debug} {
		if strings.Contains(r.Stderr, "sk-never-printed") || strings.Contains(r.Stdout, "sk-never-printed") {
			t.Fatal("the API key reached the output")
		}
	}
}
