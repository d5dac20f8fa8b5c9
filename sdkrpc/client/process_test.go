//go:build unix

package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/proc"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

func fakeConfig(t *testing.T, mode string) Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Command: []string{exe, "-test.run=^$"},
		// A -race child sleeps 1 s in os.Exit by default (atexit_sleep_ms),
		// which would look like a runtime ignoring EOF.
		Env:       append(os.Environ(), fakeEnv+"="+mode, "GORACE=atexit_sleep_ms=0"),
		EOFGrace:  300 * time.Millisecond,
		TermGrace: 300 * time.Millisecond,
		KillGrace: 2 * time.Second,
		Options:   Options{ShutdownTimeout: 200 * time.Millisecond, Logger: discard()},
	}
}

func spawnInit(t *testing.T, mode string) *Client {
	t.Helper()
	c, _, err := Start(tctx(t), fakeConfig(t, mode), protocol.InitializeParams{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// exitOf closes c and returns how its process ended.
func exitOf(t *testing.T, c *Client) (*TransportClosedError, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := c.Close(tctx(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	d := time.Since(start)
	select {
	case <-c.proc.exited():
	default:
		t.Fatal("process not reaped after Close")
	}
	e := &TransportClosedError{}
	c.proc.describe(e)
	return e, d
}

func TestSpawn_CloseLadder_ShutdownExitsCleanly(t *testing.T) {
	c := spawnInit(t, "ok")
	e, d := exitOf(t, c)
	// Had shutdown not ended it, SIGTERM would follow EOFGrace: no signal
	// means the first tier worked.
	if !e.Exited || e.ExitCode != 0 || e.Signal != "" {
		t.Fatalf("%+v after %v", e, d)
	}
	if err := c.Close(tctx(t)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSpawn_CloseLadder_StdinEOFTier(t *testing.T) {
	e, d := exitOf(t, spawnInit(t, "exit-on-eof"))
	if !e.Exited || e.ExitCode != 0 || e.Signal != "" || d < 200*time.Millisecond { // after the shutdown timeout
		t.Fatalf("%+v after %v", e, d)
	}
}

func TestSpawn_CloseLadder_SIGTERMTier(t *testing.T) {
	e, d := exitOf(t, spawnInit(t, "ignore-eof"))
	if e.Signal != "terminated" || d < 300*time.Millisecond {
		t.Fatalf("%+v after %v", e, d)
	}
}

func TestSpawn_CloseLadder_SIGKILLTier(t *testing.T) {
	e, d := exitOf(t, spawnInit(t, "ignore-term"))
	if e.Signal != "killed" || d < 600*time.Millisecond {
		t.Fatalf("%+v after %v", e, d)
	}
}

func TestSpawn_CloseWithDoneCtxKillsAtOnce(t *testing.T) {
	c := spawnInit(t, "ignore-term")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Without honouring ctx, EOFGrace and TermGrace alone take 600ms.
	if d := time.Since(start); d > 550*time.Millisecond {
		t.Fatalf("took %v", d)
	}
	e := &TransportClosedError{}
	c.proc.describe(e)
	if e.Signal != "killed" {
		t.Fatalf("%+v", e)
	}
}

func TestSpawn_KillGraceExceededMessage(t *testing.T) {
	// A process whose reaping core/proc never observed: stop gives up
	// after KillGrace with the original's message.
	err := stopMessage(&proc.NotExitedError{Pid: 42, Waited: 50 * time.Millisecond})
	if err == nil || err.Error() != "runtime process did not exit within 50ms after SIGKILL was accepted" {
		t.Fatalf("err = %v", err)
	}
	err = stopMessage(&proc.NotExitedError{Pid: 42, Waited: 50 * time.Millisecond, KillErr: syscall.EPERM})
	if err == nil || err.Error() != "runtime process did not exit within 50ms after SIGKILL was refused" {
		t.Fatalf("err = %v", err)
	}
}

func TestSpawn_CrashReportsExitCodeAndStderrTail(t *testing.T) {
	c, err := Spawn(tctx(t), fakeConfig(t, "crash"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(tctx(t))
	_, err = c.Initialize(tctx(t), protocol.InitializeParams{})
	var tce *TransportClosedError
	if !errors.As(err, &tce) || tce.Reason != "JSON-RPC input closed" || !tce.Exited || tce.ExitCode != 3 {
		t.Fatalf("err = %#v", err)
	}
	if len(tce.StderrTail) != 400 || tce.StderrTail[399] != "line 499" || tce.StderrTail[0] != "line 100" {
		t.Fatalf("tail %d lines: first %q last %q", len(tce.StderrTail), tce.StderrTail[0], tce.StderrTail[len(tce.StderrTail)-1])
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "DeepSeek Harness runtime transport closed: JSON-RPC input closed\nexit code: 3\nstderr tail:\nline 100\n") ||
		!strings.HasSuffix(msg, "\nline 499") {
		t.Fatalf("message:\n%.300s", msg)
	}
}

func TestStart_InitializeFailureReapsAndKeepsTheError(t *testing.T) {
	var stderr strings.Builder
	cfg := fakeConfig(t, "init-error")
	cfg.Stderr = &syncWriter{b: &stderr}
	c, _, err := Start(tctx(t), cfg, protocol.InitializeParams{Provider: "acme"})
	var re *ResponseError
	if c != nil || !errors.As(err, &re) || re.Message != `no adapter registered for provider "acme"` {
		t.Fatalf("%v %v", c, err)
	}
	if !strings.Contains(err.Error(), "stderr tail:\nfake runtime init-error pid") {
		t.Fatalf("no diagnostics: %v", err)
	}
	var pid int
	fmt.Sscanf(stderr.String(), "fake runtime init-error pid %d", &pid)
	if pid == 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
		t.Fatalf("process %d not reaped", pid)
	}
}

func TestSpawn_BadCommands(t *testing.T) {
	if _, err := Spawn(tctx(t), Config{}); !errors.Is(err, ErrNoCommand) {
		t.Fatalf("%v", err)
	}
	_, err := Spawn(tctx(t), Config{Command: []string{"/nonexistent/dsh", "sdk"}})
	if err == nil || !strings.HasPrefix(err.Error(), "spawn error: ") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%v", err)
	}
	if _, err := exec.LookPath("dsh-definitely-not-on-path"); err == nil {
		t.Skip("unexpected binary on PATH")
	}
	if _, err := Spawn(tctx(t), Config{Command: []string{"dsh-definitely-not-on-path"}}); err == nil || !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("%v", err)
	}
}

type syncWriter struct {
	b *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) { return w.b.Write(p) }
