package store

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// holder is a child process (this test binary) holding a session's lease.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startHolder(t *testing.T, root, id string) *holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	// GORACE: under -race the runtime otherwise sleeps 1 s at exit.
	cmd.Env = append(os.Environ(), holderEnv+"="+root, holderIDEnv+"="+id, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait() // reap, whatever state the test left it in
	})
	h.expect(t, "ready")
	return h
}

func (h *holder) expect(t *testing.T, want string) {
	t.Helper()
	line, err := h.out.ReadString('\n')
	if got := strings.TrimSpace(line); got != want {
		t.Fatalf("holder said %q (err %v), want %q", got, err, want)
	}
}

func newSession(t *testing.T, id string) *Store {
	t.Helper()
	s := New(filepath.Join(t.TempDir(), "sessions"))
	l, err := s.Create(Header{ID: id, Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLeaseAcrossProcesses(t *testing.T) {
	const id = "leased-session"
	s := newSession(t, id)
	h := startHolder(t, s.Root(), id)
	pid := h.cmd.Process.Pid

	_, _, err := s.Open(id)
	if !errors.Is(err, ErrLeased) {
		t.Fatalf("Open while held: err = %v, want ErrLeased", err)
	}
	want := `session "leased-session" is open for writing in another process (pid ` + strconv.Itoa(pid) + ")"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if leased, err := s.Leased(id); err != nil || !leased {
		t.Errorf("Leased = %v, %v; want true", leased, err)
	}
	if err := s.Remove(id); !errors.Is(err, ErrLeased) {
		t.Errorf("Remove while held: err = %v, want ErrLeased", err)
	}
	// A refused Open must not have touched the log.
	if _, evs, err := s.Read(id); err != nil || len(evs) != 1 || evs[0].Type != event.TypeSessionTitle {
		t.Errorf("Read while held = %v, %v", types(evs), err)
	}

	// Freed on Close.
	if _, err := io.WriteString(h.stdin, "close\n"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "closed")
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("holder exit: %v", err)
	}
	if leased, err := s.Leased(id); err != nil || leased {
		t.Errorf("Leased after close = %v, %v; want false", leased, err)
	}
	l, evs, err := s.Open(id)
	if err != nil {
		t.Fatalf("Open after holder closed: %v", err)
	}
	if len(evs) != 1 || l.NextSeq() != 1 {
		t.Errorf("events %v, NextSeq %d", types(evs), l.NextSeq())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseFreedOnSIGKILL(t *testing.T) {
	const id = "killed-holder"
	s := newSession(t, id)
	h := startHolder(t, s.Root(), id)
	if _, _, err := s.Open(id); !errors.Is(err, ErrLeased) {
		t.Fatalf("Open while held: err = %v, want ErrLeased", err)
	}
	if err := h.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, _, err := s.Open(id)
		if err == nil {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			return
		}
		if !errors.Is(err, ErrLeased) || time.Now().After(deadline) {
			t.Fatalf("Open after SIGKILL of holder: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // the kernel frees the lock as the process is torn down
	}
}

func TestLeaseSameProcess(t *testing.T) {
	const id = "twice"
	s := newSession(t, id)
	l, _, err := s.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	// A second Store on the same root is the same process all the same.
	for _, other := range []*Store{s, New(s.Root())} {
		_, _, err := other.Open(id)
		if !errors.Is(err, ErrLeased) || !strings.Contains(err.Error(), `session "twice"`) ||
			!strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
			t.Errorf("second Open in this process: err = %v", err)
		}
		if leased, err := other.Leased(id); err != nil || !leased {
			t.Errorf("Leased = %v, %v; want true", leased, err)
		}
	}
	if err := s.Remove(id); !errors.Is(err, ErrLeased) {
		t.Errorf("Remove while open: err = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // idempotent
		t.Fatalf("second Close: %v", err)
	}
	if leased, _ := s.Leased(id); leased {
		t.Error("still leased after Close")
	}
	l2, _, err := s.Open(id)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCreateHoldsLease checks that the log Create returns is leased like
// one from Open.
func TestCreateHoldsLease(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "s"))
	l, err := s.Create(Header{ID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open("new"); !errors.Is(err, ErrLeased) {
		t.Errorf("Open of a just-created session: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseRetryDoesNotStallOtherSessions: while one Open waits out its
// flock retries on a session another process holds, this process's other
// sessions open and close freely (the retries once held the process-wide
// lease mutex, so every Create, Open and Close waited up to 255 ms).
func TestLeaseRetryDoesNotStallOtherSessions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	s := New(root)
	for _, id := range []string{"held-elsewhere", "free"} {
		l, err := s.Create(Header{ID: id, Cwd: "/p"})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	h := startHolder(t, root, "held-elsewhere")

	retrying := make(chan struct{})
	proceed := make(chan struct{})
	var once sync.Once
	retryPause = func(time.Duration) {
		once.Do(func() { close(retrying) })
		<-proceed
	}
	t.Cleanup(func() { retryPause = time.Sleep })

	blocked := make(chan error, 1)
	go func() {
		_, _, err := s.Open("held-elsewhere")
		blocked <- err
	}()
	<-retrying // the first Open is inside its retries now

	other := make(chan error, 1)
	go func() {
		l, _, err := s.Open("free")
		if err == nil {
			err = l.Close()
		}
		other <- err
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(proceed)
		<-other
		t.Fatal("opening another session waited for a lease retry on a session held elsewhere")
	}
	close(proceed)
	if err := <-blocked; !errors.Is(err, ErrLeased) {
		t.Fatalf("open of the session held by pid %d: %v, want ErrLeased", h.cmd.Process.Pid, err)
	}
}
