package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// holder is a FIFO in the workspace that a command's detached descendants
// hold open: ready is closed when the first line arrived, gone when every
// writer has closed it, i.e. every holder died. Events, not polls.
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
	t.Cleanup(func() {
		select {
		case <-h.gone:
		default: // a failed test's survivors
			killHolders(h.path)
			<-h.gone
		}
	})
	return h
}

// detachedTree is a command that leaves bash's process group twice
// (setsid, and a double fork whose middle process exits), both holding
// the FIFO, then goes on with tail.
func detachedTree(fifo, tail string) string {
	return `exec 3>` + fifo + `; setsid sh -c 'echo up >&3; exec sleep 1003' & (sh -c 'sleep 1004 &' &); exec 3>&-; ` + tail
}

func bashCall(t *testing.T, id, command string) modeltest.Call {
	t.Helper()
	args, err := json.Marshal(map[string]any{"command": command, "description": "detach"})
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.Call{ID: id, Name: "bash", Args: string(args)}
}

// TestBashLeavesNothingRunning: what a bash call started and detached
// (setsid, double fork) is gone by the time dsh run has answered (issue
// #12: the binary runs commands under its reaper and is a subreaper).
func TestBashLeavesNothingRunning(t *testing.T) {
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	h := newHolder(t, w.Cwd)
	gate := h.path + ".go"
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() { // let bash end only once the detached process is up
		<-h.ready
		_ = os.WriteFile(gate, []byte("go\n"), 0o600)
	}()
	srv.Enqueue(
		modeltest.ToolCallsReply("detach", bashCall(t, "call_detach", detachedTree(h.path, "read -r x < "+gate+"; echo ended"))),
		modeltest.TextReply("done"),
	)
	r := w.run(nil, "run", "detach something")
	if r.Code != 0 {
		t.Fatalf("dsh run: %d\n%s", r.Code, r.Stderr)
	}
	select {
	case <-h.gone:
	case <-time.After(3 * time.Second):
		killHolders(h.path)
		t.Fatal("a detached descendant of a bash call outlived the call and dsh")
	}
}

// TestSIGKILLedDshTakesTheCommandTree: dsh SIGKILLed mid-command — its
// reaper gets SIGTERM from the kernel (parent-death signal) and ends the
// command's whole tree, the detached parts included.
func TestSIGKILLedDshTakesTheCommandTree(t *testing.T) {
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	h := newHolder(t, w.Cwd)
	srv.Enqueue(
		modeltest.ToolCallsReply("detach", bashCall(t, "call_hang", detachedTree(h.path, "sleep 1005"))),
		modeltest.TextReply("done"),
	)
	killDshOnceHeld(t, w, h, "the command's tree", "run", "hang")
}

// killDshOnceHeld starts dsh with args, SIGKILLs it once h is held (what
// dsh started is up), and fails unless every holder of h is gone soon
// after: what of it outlived dsh.
func killDshOnceHeld(t *testing.T, w *world, h *holder, what string, args ...string) {
	t.Helper()
	cmd, stdin, _, errb := w.start(args...)
	stdin.Close()
	select {
	case <-h.ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s never started; stderr:\n%s", what, errb.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	select {
	case <-h.gone:
	case <-time.After(5 * time.Second):
		killHolders(h.path)
		t.Fatalf("%s outlived a SIGKILLed dsh", what)
	}
}

// killHolders ends the survivors (a failing test's), found via /proc/*/fd.
func killHolders(path string) {
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if dst, err := os.Readlink(fd); err == nil && dst == path {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(fd)))); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// mcpDetaching is an MCP server config whose server leaves a descendant
// outside its process group (setsid, from a subshell that exits, so the
// descendant is orphaned) holding the FIFO, then runs the Go SDK test
// server.
func mcpDetaching(t *testing.T, fifo string) map[string]any {
	script := `exec 3>` + fifo + `; (setsid sh -c 'echo up >&3; exec sleep 1007' &); exec 3>&-; exec ` + mcptestServer(t)
	return map[string]any{"d": map[string]any{"command": "/bin/sh", "args": []string{"-c", script}}}
}

// TestMCPServerLeavesNothingRunning: what an MCP stdio server detaches is
// gone once dsh run has answered (the server runs under the reaper).
func TestMCPServerLeavesNothingRunning(t *testing.T) {
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	h := newHolder(t, w.Cwd)
	cfg := filepath.Join(w.Home, "config.json")
	writeFile(t, cfg, mustJSON(t, map[string]any{"mcpServers": mcpDetaching(t, h.path)}))
	srv.Enqueue(modeltest.TextReply("done"))
	r := w.run(nil, "run", "--config", cfg, "hello")
	wantExit(t, r, 0)
	select {
	case <-h.ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("the MCP server's descendant never started; stderr:\n%s", r.Stderr)
	}
	select {
	case <-h.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("a detached descendant of an MCP server outlived dsh run")
	}
}

// TestSIGKILLedDshTakesTheMCPServerTree: dsh SIGKILLed while an MCP
// server's detached descendant runs — the server's reaper gets SIGTERM from
// the kernel and ends the whole tree.
func TestSIGKILLedDshTakesTheMCPServerTree(t *testing.T) {
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	h := newHolder(t, w.Cwd)
	cfg := filepath.Join(w.Home, "config.json")
	writeFile(t, cfg, mustJSON(t, map[string]any{"mcpServers": mcpDetaching(t, h.path)}))
	srv.Enqueue(modeltest.NewStream().Role().Stall().Reply())
	killDshOnceHeld(t, w, h, "an MCP server's detached descendant", "run", "--config", cfg, "hang")
}
