package e2e

// Daily use of `dsh run` from a shell (issue 26): piped text joins a task
// given as words, and a reader that closes stdout ends the run quietly.

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/model/modeltest"
	"github.com/dsh-dev/dsh/core/store"
)

// `printf 'ERROR…' | dsh run "explain this log"`: the model gets the task
// and, in a delimited block, the piped text; input over 256 KiB is cut and
// said so, to the model and on stderr.
func TestHeadlessPipedContext(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)

	srv.Enqueue(modeltest.TextReply("the disk is full"))
	r := w.run(strings.NewReader("ERROR: disk full on /var\n"), "run", "explain this log")
	wantExit(t, r, 0)
	want := "explain this log\n\nThe input piped to this run (stdin, 25 bytes):\n<stdin>\nERROR: disk full on /var\n</stdin>"
	if got := lastUserText(t, srv.Last()); got != want {
		t.Errorf("the model saw %q, want %q", got, want)
	}

	big := strings.Repeat("0123456789abcdef\n", 20000) // 340,000 bytes
	srv.Enqueue(modeltest.TextReply("long"))
	r = w.run(strings.NewReader(big), "run", "summarise")
	wantExit(t, r, 0)
	got := lastUserText(t, srv.Last())
	if !strings.Contains(got, "(stdin, cut: its first 256 KiB; the rest was not read)") || len(got) > 256<<10+300 {
		t.Errorf("a 340 KB pipe reached the model as %d bytes: %q…", len(got), shortHead(got, 120))
	}
	if !strings.Contains(r.Stderr, "dsh: piped stdin is longer than 256 KiB") {
		t.Errorf("stderr does not say the input was cut: %q", r.Stderr)
	}

	// A lone `-` still reads the task itself from stdin.
	srv.Enqueue(modeltest.TextReply("ok"))
	r = w.run(strings.NewReader("the task itself\n"), "run", "-")
	wantExit(t, r, 0)
	if got := lastUserText(t, srv.Last()); got != "the task itself\n" {
		t.Errorf("dsh run - sent %q", got)
	}
}

// `dsh run --json … | head -1`: once the reader has gone, the run cancels
// its turn (also while a tool is running), writes no warning, and exits
// 141 as a filter ended by SIGPIPE does.
func TestHeadlessClosedStdout(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(`{"steps": [
		{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30", "description": "wait"}}]},
		{"text": "done"}]}`)...)
	cmd := exec.Command(dshBin, "run", "--json", "wait for me")
	cmd.Dir, cmd.Env = w.Cwd, w.Env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"type":"session"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	start := time.Now()
	_ = stdout.Close() // the reader goes away, as head -1 does
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 141 {
		t.Fatalf("dsh exited %v, want exit status 141", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run took %v after its reader left: the sleep 30 ran on", d)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr after the reader left: %q", stderr.String())
	}
	infos, err := store.New(w.Root).List("")
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %v, %v", infos, err)
	}
	out, _ := exec.Command(dshBin, "sessions", "show", infos[0].Header.ID, "--session-root", w.Root).Output()
	// The reader may leave before the prompt became a turn (it is then
	// dropped) or while the tool runs (the turn ends aborted).
	if strings.Contains(string(out), "ended: completed") {
		t.Errorf("the turn ran on to its end:\n%s", out)
	}
}
