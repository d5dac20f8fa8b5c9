package proc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ReaperArg {
		os.Exit(ReaperMain(os.Args[2:], os.Stderr, nil))
	}
	if len(os.Args) > 1 && os.Args[1] == "spawn-reaper" {
		os.Exit(spawnReaperThenHang(os.Args[2:]))
	}
	if err := BecomeSubreaper(); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m)
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestPipesAndEOFStep(t *testing.T) {
	p, err := Start(Config{Argv: []string{"/bin/sh", "-c", "cat; echo bye >&2"}, Pipes: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stdout().Close()
	if _, err := io.WriteString(p.Stdin(), "hello\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("read %q %v", line, err)
	}
	start := time.Now()
	if err := p.Stop(context.Background(), Ladder{EOF: 5 * time.Second, Term: time.Second, Kill: time.Second}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("EOF step took %v", d)
	}
	if st := p.State(); st == nil || st.ExitCode() != 0 {
		t.Fatalf("state %v", st)
	}
	if tail := p.StderrTail(); len(tail) != 1 || tail[0] != "bye" {
		t.Fatalf("tail %q", tail)
	}
	if d := p.Describe(10); d != "the process exited with code 0; its stderr ended with:\nbye" {
		t.Fatalf("describe %q", d)
	}
	if err := p.Stop(context.Background(), Ladder{}); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestLadderTiers(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         syscall.Signal
	}{
		{"SIGTERM", "read x; sleep 100", syscall.SIGTERM},
		{"SIGKILL", "trap '' TERM; read x; sleep 100 & wait", syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(Config{Argv: []string{"/bin/sh", "-c", tc.script}, Pipes: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stdout().Close()
			if err := p.Stop(context.Background(), Ladder{EOF: 50 * time.Millisecond, Term: 200 * time.Millisecond, Kill: 2 * time.Second}); err != nil {
				t.Fatal(err)
			}
			if sig, ok := Signaled(p.State()); !ok || sig != tc.want {
				t.Fatalf("ended by %v %v, want %v", sig, ok, tc.want)
			}
			if err := syscall.Kill(-p.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("group %d still there: %v", p.Pid(), err)
			}
		})
	}
}

func TestStopWithDoneCtxKillsAtOnce(t *testing.T) {
	p, err := Start(Config{Argv: []string{"/bin/sh", "-c", "trap '' TERM; read x"}, Pipes: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stdout().Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := p.Stop(ctx, DefaultLadder); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(Config{}); !errors.Is(err, ErrNoCommand) {
		t.Fatalf("empty argv: %v", err)
	}
	if _, err := Start(Config{Argv: []string{"/does/not/exist"}, Pipes: true}); err == nil {
		t.Fatal("started a missing binary")
	}
}

// holders returns a pipe whose write end the child and all it starts
// inherit as stdout; the read end sees EOF only once every holder is gone,
// an event, so no test polls for a process to disappear.
func holders(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// awaitEOF reads r until EOF and fails when that takes longer than d:
// something still holds the write end.
func awaitEOF(t *testing.T, r *os.File, d time.Duration, what string) string {
	t.Helper()
	_ = r.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: still alive after %v (read %q: %v)", what, d, b, err)
	}
	return string(b)
}

const detach = `setsid sh -c 'echo detached; exec sleep 1003' & sh -c 'sleep 1004 &'; sleep 0.2; echo started`

// TestReaperEndsDetachedDescendants: a command that leaves a setsid'd
// process and a double-forked one behind returns, and both are gone by
// the time the reaper exits. Without the reaper (the old bash path) both
// would live on for 1000 s.
func TestReaperEndsDetachedDescendants(t *testing.T) {
	r, w := holders(t)
	p, err := Start(Config{Argv: ReaperArgv(self(t), 0, "", "/bin/bash", "-c", detach), Stdout: w, NewSession: true,
		ParentDeathSignal: syscall.SIGTERM})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-p.Done()
	if st := p.State(); st.ExitCode() != 0 {
		t.Fatalf("reaper: %v %q", st, p.StderrTail())
	}
	out := awaitEOF(t, r, 5*time.Second, "detached descendants")
	if !strings.Contains(out, "started") || !strings.Contains(out, "detached") {
		t.Fatalf("output %q", out)
	}
}

// TestReaperDirectIsTheOldGap proves the test above can fail: the same
// command run directly (no reaper) leaves a holder behind.
func TestReaperDirectIsTheOldGap(t *testing.T) {
	r, w := holders(t)
	p, err := Start(Config{Argv: []string{"/bin/bash", "-c", "setsid sh -c 'echo detached; exec sleep 1003' &"}, Stdout: w, NewSession: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "detached\n" {
		t.Fatalf("%q %v", line, err)
	}
	if err := p.Stop(context.Background(), Ladder{Kill: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	_ = r.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := io.ReadAll(r); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the detached sleep did not survive without the reaper: %v", err)
	}
	for _, pid := range Descendants(os.Getpid()) { // it came to us, the subreaper
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	awaitEOF(t, r, 5*time.Second, "cleanup")
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err != nil {
			break
		}
	}
}

// TestReaperSIGTERMEndsTree: SIGTERM to the reaper (dsh cancelling) ends a
// tree that ignores SIGTERM, after the grace.
func TestReaperSIGTERMEndsTree(t *testing.T) {
	r, w := holders(t)
	script := `trap '' TERM; setsid sh -c "trap '' TERM; sleep 1003" & echo started; sleep 1004`
	p, err := Start(Config{Argv: ReaperArgv(self(t), 200*time.Millisecond, "", "/bin/bash", "-c", script), Stdout: w,
		NewSession: true, ParentDeathSignal: syscall.SIGTERM})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("%q %v", line, err)
	}
	if err := p.Stop(context.Background(), Ladder{Term: 5 * time.Second, Kill: time.Second}); err != nil {
		t.Fatal(err)
	}
	if sig, ok := Signaled(p.State()); !ok || sig != syscall.SIGKILL {
		t.Fatalf("reaper ended %v (the command was SIGKILLed after the grace): %v", p.State(), p.StderrTail())
	}
	awaitEOF(t, r, 5*time.Second, "tree after SIGTERM")
}

// spawnReaperThenHang is a stand-in for dsh: it starts the reaper over a
// detaching command, says so, and waits to be SIGKILLed.
func spawnReaperThenHang(args []string) int {
	exe, _ := os.Executable()
	p, err := Start(Config{Argv: ReaperArgv(exe, 200*time.Millisecond, "", "/bin/bash", "-c", args[0]), Stdout: os.Stdout,
		NewSession: true, ParentDeathSignal: syscall.SIGTERM})
	if err != nil {
		return 1
	}
	<-p.Done()
	return 0
}

// TestParentDeathEndsTree: when dsh is SIGKILLed mid-command, its reaper
// gets SIGTERM from the kernel and ends the command's whole tree, detached
// parts included.
func TestParentDeathEndsTree(t *testing.T) {
	r, w := holders(t)
	script := `setsid sh -c 'sleep 1003' & sh -c 'sleep 1004 &'; echo started; sleep 1005`
	dsh, err := Start(Config{Argv: []string{self(t), "spawn-reaper", script}, Stdout: w, Env: append(os.Environ(), "GORACE=atexit_sleep_ms=0")})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("%q %v", line, err)
	}
	if err := syscall.Kill(dsh.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-dsh.Done()
	awaitEOF(t, r, 5*time.Second, "tree after its dsh was SIGKILLed")
}

func TestTail(t *testing.T) {
	tl := NewTail(3, 5)
	_, _ = io.WriteString(tl, "a\nb\r\nlonger line\nc\nd")
	got := strings.Join(tl.Lines(), "|")
	if got != "longe …[line truncated]|c|d" {
		t.Fatalf("%q", got)
	}
}

func TestTailRing(t *testing.T) {
	tl := NewTail(3, 0)
	_, _ = tl.Write([]byte("a\nb\r\nc"))
	_, _ = tl.Write([]byte("d\ne\nf"))
	if got := strings.Join(tl.Lines(), "|"); got != "cd|e|f" {
		t.Fatalf("%q", got)
	}
	_, _ = tl.Write([]byte(strings.Repeat("x", 20000) + "\n"))
	lines := tl.Lines()
	if last := lines[len(lines)-1]; len(last) > DefaultTailLineBytes+64 || !strings.HasSuffix(last, "…[line truncated]") {
		t.Fatalf("long line kept as %d bytes", len(last))
	}
}

// TestReapedChildEndsItsTree: a Reaped child (an MCP server, an agent)
// runs under the reaper named by UseReaper; the close ladder's SIGTERM
// reaches the reaper, which ends what the child detached before the
// ladder's SIGKILL would orphan it; a missing command is still Start's
// error.
func TestReapedChildEndsItsTree(t *testing.T) {
	UseReaper(self(t))
	t.Cleanup(func() { UseReaper("") })
	if _, err := Start(Config{Argv: []string{"dsh-no-such-command"}, Pipes: true, Reaped: true}); err == nil ||
		!strings.Contains(err.Error(), "dsh-no-such-command") {
		t.Fatalf("a missing command under the reaper: %v", err)
	}
	r, w := holders(t)
	p, err := Start(Config{Argv: []string{"sh", "-c", "(setsid sh -c 'echo detached; exec sleep 1003' &); exec sleep 1004"},
		Stdout: w, Reaped: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "detached\n" {
		t.Fatalf("%q %v", line, err)
	}
	if err := p.Stop(context.Background(), Ladder{Term: 3 * time.Second, Kill: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if sig, ok := Signaled(p.State()); ok && sig == syscall.SIGKILL {
		t.Fatal("the reaper needed the ladder's SIGKILL")
	}
	awaitEOF(t, r, 5*time.Second, "the reaped child's detached descendant")
}
