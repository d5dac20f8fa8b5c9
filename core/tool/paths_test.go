package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/saferead"
)

func TestEscapesAreResolved(t *testing.T) {
	te := newTestEnv(t)
	outside := filepath.Dir(te.ws) // the temp folder holding ws
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(te.ws, "link")); err != nil {
		t.Fatal(err)
	}
	// A dangling link pointing outside: writing through it must be seen as
	// writing outside.
	if err := os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(te.ws, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/../a.txt", filepath.Join(te.ws, "rel")); err != nil {
		t.Fatal(err)
	}
	te.file(t, "a.txt", "a\n")
	te.file(t, "sub/x", "x\n")

	tests := []struct {
		name   string
		tool   Tool
		args   obj
		path   string
		inside bool
	}{
		{"dotdot read", tRead, obj{"file_path": "../secret.txt"}, secret, false},
		{"dotdot in the middle", tRead, obj{"file_path": "sub/../../secret.txt"}, secret, false},
		{"symlink read", tRead, obj{"file_path": "link/secret.txt"}, secret, false},
		{"symlink write", tWrite, obj{"file_path": "link/evil.txt", "content": "x"}, filepath.Join(outside, "evil.txt"), false},
		{"dangling symlink write", tWrite, obj{"file_path": "dangling", "content": "x"}, filepath.Join(outside, "new.txt"), false},
		{"symlink edit", tEdit, obj{"file_path": filepath.Join(te.ws, "link", "secret.txt"), "old_string": "s", "new_string": "t"}, secret, false},
		{"glob through symlink", tGlob, obj{"pattern": "*.txt", "path": "link"}, outside, false},
		{"glob pattern climbing", tGlob, obj{"pattern": "../*.txt"}, outside, false},
		{"grep outside", tGrep, obj{"pattern": "s", "path": ".."}, outside, false},
		{"relative symlink inside", tRead, obj{"file_path": "rel"}, filepath.Join(te.ws, "a.txt"), true},
		{"plain inside", tWrite, obj{"file_path": "sub/new/f", "content": ""}, filepath.Join(te.ws, "sub/new/f"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acc, err := tc.tool.Inspect(args(t, tc.args), te.Env)
			if err != nil {
				t.Fatal(err)
			}
			if len(acc.Paths) != 1 || acc.Paths[0] != tc.path {
				t.Fatalf("paths = %v, want [%s]", acc.Paths, tc.path)
			}
			if got := Inside(te.ws, acc.Paths[0]); got != tc.inside {
				t.Fatalf("Inside = %v, want %v", got, tc.inside)
			}
			if acc.Write != (tc.tool.Kind() == KindMutate) {
				t.Fatalf("Write = %v", acc.Write)
			}
		})
	}
	// Inside resolves the symlinks of its arguments itself.
	if Inside(te.ws, filepath.Join(te.ws, "link", "secret.txt")) {
		t.Fatal("a path through a symlink to outside is inside")
	}
	if !Inside(filepath.Join(te.ws, "link", "ws"), filepath.Join(te.ws, "a.txt")) {
		t.Fatal("a workspace named through a symlink is not resolved")
	}
	if Inside(te.ws, te.ws+"-other/x") || !Inside(te.ws, te.ws) || Inside("", "/x") {
		t.Fatal("prefix confusion")
	}
}

func TestResolveLoop(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Symlink("b", filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(dir, "a/x"); err == nil {
		t.Fatal("a symlink loop resolved")
	}
	if _, err := Resolve(dir, ""); err == nil {
		t.Fatal("empty path resolved")
	}
	if _, err := Resolve("rel", "x"); err == nil {
		t.Fatal("relative cwd accepted")
	}
	// A path under a regular file does not exist; it resolves as written.
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve(dir, "file/x/y"); err != nil || got != filepath.Join(f, "x/y") {
		t.Fatalf("got %q %v", got, err)
	}
}

// TestResolveSharesTheReadersWalk: the file tools' paths and dsh's own
// reads (core/saferead) resolve links with one walker, so a loop is the
// same error on both, and a link out of the workspace lands at the same
// real path on both (the reader then refuses it).
func TestResolveSharesTheReadersWalk(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "notes.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"a": "b", "b": "a", "out": "../outside/notes.md"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	pol := saferead.Policy{Roots: []string{ws}}
	if _, err := Resolve(ws, "a"); !errors.Is(err, saferead.ErrLinkLoop) {
		t.Fatalf("tool: loop: %v", err)
	}
	if _, err := pol.Read(filepath.Join(ws, "a")); !errors.Is(err, saferead.ErrLinkLoop) {
		t.Fatalf("saferead: loop: %v", err)
	}
	want := filepath.Join(outside, "notes.md")
	if got, err := Resolve(ws, "out"); err != nil || got != want || Inside(ws, got) {
		t.Fatalf("tool: escaping link: %q, %v", got, err)
	}
	if _, err := pol.Read(filepath.Join(ws, "out")); !errors.Is(err, saferead.ErrOutside) || !strings.Contains(err.Error(), want) {
		t.Fatalf("saferead: escaping link: %v", err)
	}
}
