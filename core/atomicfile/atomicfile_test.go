package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteReplacesWhole: the new content replaces the old, with the
// file's mode 0o600, and nothing else is left in the folder, synced or not.
func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	for i, sync := range []bool{true, false} {
		want := []byte{'v', byte('0' + i)}
		if err := Write(path, want, sync); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != string(want) {
			t.Fatalf("sync %v: %q, %v", sync, got, err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v", fi.Mode())
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Fatalf("folder holds %v", ents)
		}
	}
}

// TestFailedWriteLeavesNothing: a rename that cannot happen (a folder is
// in the way) is an error, and the temporary file is removed.
func TestFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "inside"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("data"), true); err == nil {
		t.Fatal("a write over a non-empty folder succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("folder holds %v", ents)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil, false); err == nil {
		t.Fatal("a write into a missing folder succeeded")
	}
}
