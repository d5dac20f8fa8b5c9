package e2e

// Rewind through the CLI door (dsh sessions rewind), and a SIGKILL in the
// middle of a rewind of hundreds of files: the next open finishes it.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// rewindScript: turn 1 writes one.txt with the write tool; turn 2 runs a
// command that changes, creates and deletes files (n of them in many/).
func rewindScript(n int) string {
	return fmt.Sprintf(`{"steps":[
  {"toolCalls":[{"name":"write","arguments":{"file_path":"one.txt","content":"from the write tool"}}]},
  {"text":"wrote it"},
  {"toolCalls":[{"name":"bash","arguments":{"command":"echo changed > keep.txt; rm gone.txt; mkdir -p many; for i in $(seq 1 %d); do echo v$i > many/f$i; done","description":"change files"}}]},
  {"text":"changed them"}]}`, n)
}

func rewindWorld(t *testing.T, n int) (*world, string) {
	t.Helper()
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(rewindScript(n))...)
	os.WriteFile(filepath.Join(w.Cwd, "keep.txt"), []byte("original\n"), 0o644)
	os.WriteFile(filepath.Join(w.Cwd, "gone.txt"), []byte("still here\n"), 0o644)
	if r := w.run(nil, "run", "first task"); r.Code != 0 {
		t.Fatalf("dsh run: %d\n%s", r.Code, r.Stderr)
	}
	infos, err := store.New(w.Root).List("")
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %v, %v", infos, err)
	}
	id := infos[0].Header.ID
	if r := w.run(nil, "run", "--session-id", id, "second task"); r.Code != 0 {
		t.Fatalf("dsh run --session-id: %d\n%s", r.Code, r.Stderr)
	}
	if got := readWS(t, w, "many/f1"); got != "v1\n" {
		t.Fatalf("turn 2 did not run its command: many/f1 = %q", got)
	}
	return w, id
}

func readWS(t *testing.T, w *world, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.Cwd, rel))
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

func TestRewindCLI(t *testing.T) {
	w, id := rewindWorld(t, 3)
	r := w.run(nil, "sessions", "rewind", id)
	if r.Code != 0 || !strings.Contains(r.Stdout, "1  first task") || !strings.Contains(r.Stdout, "2  second task") {
		t.Fatalf("turn list: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, bad := range [][]string{{"rewind", id, "7"}, {"rewind", id, "x"}, {"rewind", id, "1", "--files-only", "--conversation-only"}, {"rewind", id, "1", "--undo"}} {
		if r := w.run(nil, append([]string{"sessions"}, bad...)...); r.Code == 0 || r.Stderr == "" {
			t.Fatalf("%v: accepted (%d)", bad, r.Code)
		}
	}
	r = w.run(nil, "sessions", "rewind", id, "2")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Rewound to before turn 2") {
		t.Fatalf("rewind: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if readWS(t, w, "keep.txt") != "original\n" || readWS(t, w, "gone.txt") != "still here\n" || readWS(t, w, "many/f1") != "<missing>" {
		t.Fatalf("files not restored: keep=%q gone=%q", readWS(t, w, "keep.txt"), readWS(t, w, "gone.txt"))
	}
	if readWS(t, w, "one.txt") != "from the write tool" {
		t.Fatal("turn 1's file was lost")
	}
	// Changed outside the agent: refused, then forced, then undone.
	os.WriteFile(filepath.Join(w.Cwd, "one.txt"), []byte("my edit"), 0o644)
	r = w.run(nil, "sessions", "rewind", id, "1")
	if r.Code != 1 || !strings.Contains(r.Stderr, "one.txt") || readWS(t, w, "one.txt") != "my edit" {
		t.Fatalf("conflict not refused: %d\n%s", r.Code, r.Stderr)
	}
	if r = w.run(nil, "sessions", "rewind", id, "1", "--force", "--files-only"); r.Code != 0 || readWS(t, w, "one.txt") != "<missing>" {
		t.Fatalf("forced: %d %q\n%s", r.Code, readWS(t, w, "one.txt"), r.Stderr)
	}
	if r = w.run(nil, "sessions", "rewind", id, "--undo"); r.Code != 0 || readWS(t, w, "one.txt") != "my edit" {
		t.Fatalf("undo: %d %q\n%s", r.Code, readWS(t, w, "one.txt"), r.Stderr)
	}
	// A session another process holds is refused.
	lg, _, err := store.New(w.Root).Open(id)
	if err != nil {
		t.Fatal(err)
	}
	r = w.run(nil, "sessions", "rewind", id, "1")
	lg.Close()
	if r.Code != 1 || !strings.Contains(r.Stderr, "another process") {
		t.Fatalf("a held session: %d\n%s", r.Code, r.Stderr)
	}
	_, all := readLog(t, w, id)
	if n := countType(all, event.TypeRewind); n != 3 {
		t.Fatalf("%d rewind events, want 3", n)
	}
}

func readLog(t *testing.T, w *world, id string) (store.Header, []event.Event) {
	t.Helper()
	h, evs, err := store.New(w.Root).Read(id)
	if err != nil {
		t.Fatal(err)
	}
	return h, evs
}

func countType(evs []event.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// TestRewindKilledMidwayIsFinishedOnOpen kills `dsh sessions rewind` of
// 400 files as the first restored file lands; the next process that opens
// the session finishes the rewind: every file restored, one event.
func TestRewindKilledMidwayIsFinishedOnOpen(t *testing.T) {
	const n = 400
	w, id := rewindWorld(t, n)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	// A restored file is renamed into place; deleting many/f* removes them.
	if _, err := unix.InotifyAddWatch(fd, filepath.Join(w.Cwd, "many"), unix.IN_DELETE); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dshBin, "sessions", "rewind", id, "2")
	cmd.Dir, cmd.Env = w.Cwd, w.Env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := unix.Read(fd, buf); err != nil { // blocks until the first file goes
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(w.Cwd, "many", "f*"))
	t.Logf("killed with %d of %d created files still there", len(left), n)
	if _, all := readLog(t, w, id); countType(all, event.TypeRewind) != 0 && len(left) > 0 {
		t.Fatal("the rewind was committed before its files were restored")
	}

	// The next open (here: the turn list) finishes the rewind.
	start := time.Now()
	if r := w.run(nil, "sessions", "rewind", id); r.Code != 0 {
		t.Fatalf("open after the kill: %d\n%s", r.Code, r.Stderr)
	}
	t.Logf("repair on open took %v", time.Since(start))
	if left, _ := filepath.Glob(filepath.Join(w.Cwd, "many", "f*")); len(left) != 0 {
		t.Fatalf("%d files of turn 2 are still there", len(left))
	}
	if readWS(t, w, "keep.txt") != "original\n" || readWS(t, w, "gone.txt") != "still here\n" {
		t.Fatal("the workspace is not wholly restored")
	}
	_, all := readLog(t, w, id)
	if c := countType(all, event.TypeRewind); c != 1 {
		t.Fatalf("%d rewind events after repair, want 1", c)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(sessionLogPath(t, w, id)), "rewind-plan.json")); !os.IsNotExist(err) {
		t.Fatalf("the plan is still there: %v", err)
	}
}

func sessionLogPath(t *testing.T, w *world, id string) string {
	t.Helper()
	dir, err := store.New(w.Root).Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "session.jsonl")
}

// TestRewindSDK: session/rewind is announced in initialize and rewinds a
// stored session, answering what it restored; undo puts it back.
func TestRewindSDK(t *testing.T) {
	w, id := rewindWorld(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, init, err := client.Start(ctx, sdkConfig(w), protocol.InitializeParams{Cwd: w.Cwd, Provider: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSDK(t, c) })
	if caps := init.Capabilities; caps == nil || !caps.Rewind {
		t.Fatalf("initialize capabilities %+v", caps)
	}
	sess := c.Session(id)
	if _, err := sess.Rewind(ctx, protocol.SessionRewindParams{Turn: 9}); err == nil || !strings.Contains(err.Error(), "no turn 9") {
		t.Fatalf("rewind to a missing turn: %v", err)
	}
	res, err := sess.Rewind(ctx, protocol.SessionRewindParams{Turn: 2, Scope: "files"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Turn != 2 || res.Scope != "files" || res.ChangeCount != 4 || readWS(t, w, "keep.txt") != "original\n" {
		t.Fatalf("result %+v; keep.txt %q", res.Rewind, readWS(t, w, "keep.txt"))
	}
	if res, err = sess.Rewind(ctx, protocol.SessionRewindParams{Undo: true}); err != nil || !res.Undo || readWS(t, w, "keep.txt") != "changed\n" {
		t.Fatalf("undo: %+v, %v", res, err)
	}
	pxClose(t, c)
}
