package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stallBound is how long a door whose client stopped reading may take to
// exit after stdin EOF or SIGTERM: the one-second answer grace of the ACP
// door plus room for a loaded CI machine. A door that waits for the
// client hangs until the test's deadline.
const stallBound = 8 * time.Second

// stalledDoor starts a door, sends it lines whose answers are far larger
// than a pipe holds (a 1 MiB model answer), and reads no more of its
// stdout than the first line.
func stalledDoor(t *testing.T, door string, lines func(cwd string) []string, ready string) (*world, func(how string) time.Duration) {
	t.Helper()
	w := newWorld(t)
	big := strings.Repeat("a long answer that fills the pipe ", 32<<10) // ~1 MiB
	w.Env = append(w.Env, w.scriptEnv(fmt.Sprintf(`{"steps":[{"text":%q}],"repeat":"last"}`, big))...)
	cmd, stdin, stdout, stderr := w.start(door)
	for _, l := range lines(w.Cwd) {
		if _, err := stdin.Write([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	// The client reads up to the line that says the door is serving (its
	// signal handler is set, the turn is streaming); then it stops.
	br := bufio.NewReader(stdout)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("no line with %s: %v\n%s", ready, err, stderr.String())
		}
		if strings.Contains(l, ready) {
			break
		}
	}
	t.Cleanup(func() { _ = stdout.Close() })
	exited := make(chan error, 1)
	return w, func(how string) time.Duration {
		start := time.Now()
		switch how {
		case "eof":
			_ = stdin.Close()
		case "sigterm":
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s after %s: %v\n%s", door, how, err, stderr.String())
			}
			return time.Since(start)
		case <-time.After(stallBound):
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("dsh %s still running %v after %s with a client that does not read:\n%s", door, stallBound, how, stderr.String())
			return 0
		}
	}
}

func acpStallLines(cwd string) []string {
	return []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`,
		// The session id is not known without reading: prompt a session
		// the door loads by the id it cannot have, then ask for the list
		// many times over (each answer is written too).
	}
}

// TestACPExitsWithAStalledReader: stdin EOF and SIGTERM each end `dsh acp`
// whose client stopped reading stdout (issue 27 #3).
func TestACPExitsWithAStalledReader(t *testing.T) {
	for _, how := range []string{"eof", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			_, stop := stalledDoor(t, "acp", func(cwd string) []string {
				ls := acpStallLines(cwd)
				for i := 0; i < 400; i++ {
					// 400 session/new answers, each a few KiB, are more
					// than a pipe holds.
					ls = append(ls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, i+10, cwd))
				}
				return ls
			}, `"id":0`)
			t.Logf("exited %v after %s", stop(how), how)
		})
	}
}

// TestSDKExitsWithAStalledReader: the same for `dsh sdk`, whose answer
// streams a 1 MiB message the client never reads; the session log is
// committed all the same.
func TestSDKExitsWithAStalledReader(t *testing.T) {
	for _, how := range []string{"eof", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			w, stop := stalledDoor(t, "sdk", func(cwd string) []string {
				return []string{strings.ReplaceAll(pipeInit, "CWD", cwd),
					strings.ReplaceAll(pipePrompt, "session-pipe", "session-stall")}
			}, `"assistant/chunk"`)
			t.Logf("exited %v after %s", stop(how), how)
			logs, _ := filepath.Glob(filepath.Join(w.Root, "*", "session-stall", "session.jsonl"))
			if len(logs) != 1 {
				t.Fatalf("session log: %v", logs)
			}
			b, err := os.ReadFile(logs[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"type":"turn/end"`) {
				t.Fatalf("the session log holds no turn end:\n%.2000s", b)
			}
		})
	}
}
