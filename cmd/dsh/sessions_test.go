package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/store"
)

// TestSessionsRm: rm deletes a stored session (list no longer shows it,
// show says it is missing), refuses one a process is writing, and a
// missing id is exit 1 with a message naming it.
func TestSessionsRm(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	seedSessions(t, root, cwd, "session-keep", "session-gone", "session-busy")

	if code, stdout, stderr := invoke(t, "sessions", "rm", "session-gone", "--session-root", root); code != 0 {
		t.Fatalf("rm: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := store.New(root).Dir("session-gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the removed session is still stored (%v)", err)
	}
	_, stdout, _ := invoke(t, "sessions", "list", "--session-root", root)
	if strings.Contains(stdout, "session-gone") || !strings.Contains(stdout, "session-keep") {
		t.Errorf("list after rm: %q", stdout)
	}
	if code, _, stderr := invoke(t, "sessions", "show", "session-gone", "--session-root", root); code != 1 || !strings.Contains(stderr, "session-gone") {
		t.Errorf("show of a removed session: exit %d, stderr %q", code, stderr)
	}

	// A live writer holds the lease: rm refuses and keeps the session.
	lg, _, err := store.New(root).Open("session-busy")
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, "sessions", "rm", "session-busy", "--session-root", root)
	if code != 1 || !strings.Contains(stderr, "session-busy") {
		t.Errorf("rm of a session being written: exit %d, stderr %q; want exit 1 naming it", code, stderr)
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.New(root).Dir("session-busy"); err != nil {
		t.Errorf("the refused rm removed the session: %v", err)
	}
	if code, _, _ := invoke(t, "sessions", "rm", "session-busy", "--session-root", root); code != 0 {
		t.Errorf("rm once the writer is gone: exit %d", code)
	}

	if code, _, stderr := invoke(t, "sessions", "rm", "session-nope", "--session-root", root); code != 1 || !strings.Contains(stderr, "session-nope") {
		t.Errorf("rm of a missing session: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := invoke(t, "sessions", "rm", "--session-root", root); code != 2 {
		t.Errorf("rm without an id: exit %d, want 2", code)
	}
}

// TestSessionsListEmptyAndByCwd: an empty root lists nothing and succeeds;
// --cwd keeps the sessions recorded for that directory.
func TestSessionsListEmptyAndByCwd(t *testing.T) {
	root := t.TempDir()
	code, stdout, stderr := invoke(t, "sessions", "list", "--json", "--session-root", root)
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("empty list --json: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	a, b := t.TempDir(), t.TempDir()
	seedSessions(t, root, a, "session-in-a")
	seedSessions(t, root, b, "session-in-b")
	_, stdout, _ = invoke(t, "sessions", "list", "--cwd", a, "--session-root", root)
	if !strings.Contains(stdout, "session-in-a") || strings.Contains(stdout, "session-in-b") {
		t.Errorf("list --cwd %s: %q", a, stdout)
	}
	_, stdout, _ = invoke(t, "sessions", "list", "--session-root", root)
	if !strings.Contains(stdout, "session-in-a") || !strings.Contains(stdout, "session-in-b") {
		t.Errorf("list: %q", stdout)
	}
}

// TestSessionsHexPrefix: the first characters of a minted id's hex part
// name the session in show, rm and compact, as they do with "session-";
// a prefix two sessions share is refused naming both, and rm with a
// prefix removes exactly the one session it names.
func TestSessionsHexPrefix(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	seedSessions(t, root, cwd, "session-4dff01", "session-4d0a02", "session-77aa03")

	code, stdout, stderr := invoke(t, "sessions", "show", "4dff", "--session-root", root)
	if code != 0 || !strings.HasPrefix(stdout, "session session-4dff01\n") {
		t.Errorf("show 4dff: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = invoke(t, "sessions", "show", "4d", "--session-root", root)
	if code != 1 || !strings.Contains(stderr, "session-4dff01") || !strings.Contains(stderr, "session-4d0a02") {
		t.Errorf("show 4d (two sessions): exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = invoke(t, "sessions", "rm", "77a", "--session-root", root)
	if code != 0 || !strings.Contains(stdout, "session-77aa03") {
		t.Fatalf("rm 77a: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := store.New(root).Dir("session-77aa03"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rm 77a left the session (%v)", err)
	}
	for _, id := range []string{"session-4dff01", "session-4d0a02"} {
		if _, err := store.New(root).Dir(id); err != nil {
			t.Errorf("rm 77a touched %s: %v", id, err)
		}
	}
	if code, _, stderr := invoke(t, "sessions", "rm", "4d", "--session-root", root); code != 1 || !strings.Contains(stderr, "give more of the id") {
		t.Errorf("rm of an ambiguous prefix: exit %d, stderr %q", code, stderr)
	}
}
