package tool

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testExec is the executor the binary uses: bash under the reaper (this
// test binary dispatches proc.ReaperArg in TestMain).
func testExec() Executor {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return LocalExecWith(LocalExecOptions{Reaper: self})
}

// holder is a FIFO a command's descendants hold open: ready is closed
// when the first line arrived, gone when every writer has closed it (all
// holders died) — events, so no test polls for a process to disappear.
type holder struct {
	path        string
	ready, gone chan struct{}
}

func newHolder(t *testing.T, dir string) *holder {
	t.Helper()
	h := &holder{path: filepath.Join(dir, "holder"), ready: make(chan struct{}), gone: make(chan struct{})}
	if err := syscall.Mkfifo(h.path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(h.gone)
		f, err := os.Open(h.path) // blocks until a writer opens it
		if err != nil {
			close(h.ready)
			return
		}
		defer f.Close()
		br := bufio.NewReader(f)
		_, _ = br.ReadString('\n')
		close(h.ready)
		_, _ = io.Copy(io.Discard, br)
	}()
	return h
}

// kill ends the processes that still hold the FIFO (the old gap's
// survivors), found through /proc/*/fd, and waits for the reader.
func (h *holder) kill(t *testing.T) {
	t.Helper()
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if dst, err := os.Readlink(fd); err == nil && dst == h.path {
			if pid, err := strconv.Atoi(strings.Split(fd, "/")[2]); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	<-h.gone
}

// detachScript leaves bash's process group two ways: setsid, and a double
// fork whose middle process exits (the sleep is orphaned).
func detachScript(fifo string) string {
	return `exec 3>` + fifo + `; setsid sh -c 'echo detached >&3; exec sleep 1003' & (sh -c 'sleep 1004 &' &); ` +
		`exec 3>&-; read -r x < ` + fifo + `.go; echo done`
}

// TestBashEndsDetachedDescendants: what detached from bash's group must be
// gone when the call returns (issue #12). The same script without the
// reaper (the old executor) leaves them running: the test can fail.
func TestBashEndsDetachedDescendants(t *testing.T) {
	for _, tc := range []struct {
		name string
		ex   Executor
		want bool // ended with the call
	}{{"reaper", testExec(), true}, {"no reaper", LocalExec(), false}} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t)
			te.Exec = tc.ex
			h := newHolder(t, te.ws)
			// A second FIFO lets bash wait until the detached process is up.
			gate := h.path + ".go"
			if err := syscall.Mkfifo(gate, 0o600); err != nil {
				t.Fatal(err)
			}
			go func() {
				<-h.ready
				_ = os.WriteFile(gate, []byte("go\n"), 0o600)
			}()
			r := call(t, tBash, te.Env, obj{"command": detachScript(h.path), "description": "detach"})
			contains(t, mustOK(t, r), "done\n[exit code: 0]")
			select {
			case <-h.gone:
				if !tc.want {
					t.Fatal("without a reaper the detached sleep died with the call: the test cannot tell")
				}
			case <-time.After(2 * time.Second):
				if tc.want {
					t.Fatal("a detached descendant outlived the bash call")
				}
				h.kill(t)
			}
		})
	}
}

// TestBashCancelEndsDetachedDescendants: cancel reaches a detached
// process that ignores SIGTERM, within the grace.
func TestBashCancelEndsDetachedDescendants(t *testing.T) {
	te := newTestEnv(t)
	h := newHolder(t, te.ws)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	cmd := `exec 3>` + h.path + `; setsid sh -c "trap '' TERM; echo detached >&3; exec sleep 1003" & exec 3>&-; sleep 1005`
	go func() { done <- tBash.Run(ctx, args(t, obj{"command": cmd, "description": "hang"}), te.Env) }()
	<-h.ready
	cancel()
	mustErr(t, <-done, "[command cancelled")
	select {
	case <-h.gone:
	case <-time.After(3 * time.Second):
		t.Fatal("a detached descendant outlived the cancelled call")
	}
}
