package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func write(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func take(t testing.TB, s *Store, root string) *Manifest {
	t.Helper()
	res, err := s.Take(context.Background(), []string{root})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Roots) != 1 {
		t.Fatalf("roots = %v", res.Roots)
	}
	m, err := s.Load(res.Roots[0].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func restore(t testing.TB, s *Store, cur, target *Manifest) *Plan {
	t.Helper()
	p, err := s.PlanRestore(cur, target)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRestoreCreatedChangedDeletedFiles(t *testing.T) {
	root := t.TempDir()
	s := Open(filepath.Join(t.TempDir(), "snap"), Options{})
	write(t, root, "a.txt", "a1")
	write(t, root, "dir/b.txt", "b1")
	write(t, root, "gone.txt", "keep me")
	write(t, root, ".gitignore", "build/\n")
	write(t, root, "build/out.bin", "ignored")
	if err := os.Symlink("a.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "dir/b.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := take(t, s, root)
	if before.find("build/out.bin") != nil {
		t.Fatal("an ignored file was captured")
	}

	write(t, root, "a.txt", "a2")
	write(t, root, "new/deep/c.txt", "c")
	os.Remove(filepath.Join(root, "gone.txt"))
	write(t, root, "build/out.bin", "rebuilt")
	after := take(t, s, root)
	if slices.Equal(before.Entries, after.Entries) {
		t.Fatal("the second snapshot saw no change")
	}

	p := restore(t, s, after, before)
	if len(p.Uncaptured) != 0 {
		t.Fatalf("uncaptured = %v", p.Uncaptured)
	}
	for rel, want := range map[string]string{"a.txt": "a1", "dir/b.txt": "b1", "gone.txt": "keep me", "build/out.bin": "rebuilt"} {
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", rel, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "new")); !os.IsNotExist(err) {
		t.Errorf("the created folder is still there: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "dir/b.txt")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode = %v", fi.Mode())
	}
	if target, _ := os.Readlink(filepath.Join(root, "link")); target != "a.txt" {
		t.Errorf("link = %q", target)
	}
	// Applying again does nothing more.
	if again := take(t, s, root); len(Changed(again, before)) != 0 {
		t.Fatalf("after restore the workspace differs from the snapshot: %v", Changed(again, before))
	}
}

func TestUnchangedSnapshotReusesManifestAndSkipsBigFiles(t *testing.T) {
	root := t.TempDir()
	s := Open(filepath.Join(t.TempDir(), "snap"), Options{MaxFileBytes: 10})
	write(t, root, "small", "x")
	write(t, root, "big", strings.Repeat("y", 11))
	r1, err := s.Take(context.Background(), []string{root})
	if err != nil {
		t.Fatal(err)
	}
	if r1.SkippedCount != 1 || !strings.Contains(r1.Skipped[0].Reason, "larger than") || r1.Skipped[0].Path != filepath.Join(root, "big") {
		t.Fatalf("skipped = %+v", r1.Skipped)
	}
	// A fresh store over the same folder reads the cache from disk.
	s2 := Open(s.Dir(), Options{MaxFileBytes: 10})
	r2, err := s2.Take(context.Background(), []string{root})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Roots[0].Manifest != r2.Roots[0].Manifest {
		t.Fatal("an unchanged workspace got a new manifest")
	}
	// The big file now differs from what the snapshot holds (nothing):
	// restoring to a snapshot where it was small says it is uncaptured.
	write(t, root, "big", "z")
	small := take(t, s2, root)
	write(t, root, "big", strings.Repeat("w", 20))
	cur := take(t, s2, root)
	p, err := s2.PlanRestore(cur, small)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Uncaptured, []string{"big"}) {
		t.Fatalf("uncaptured = %v", p.Uncaptured)
	}
	// And restoring to the first one leaves it alone (not captured there).
	first, _ := s2.Load(r1.Roots[0].Manifest)
	p, err = s2.PlanRestore(small, first)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.NotRestored, []string{"big"}) || len(p.Ops) != 0 {
		t.Fatalf("plan = %+v", p)
	}
}

func TestStoreBoundLeavesFilesOut(t *testing.T) {
	root := t.TempDir()
	s := Open(filepath.Join(t.TempDir(), "snap"), Options{MaxStoreBytes: 15})
	for i := range 3 {
		write(t, root, fmt.Sprintf("f%d", i), "0123456789"[i:i+1]+"aaaaaa")
	}
	res, err := s.Take(context.Background(), []string{root})
	if err != nil {
		t.Fatal(err)
	}
	if res.SkippedCount != 1 || !strings.Contains(res.Skipped[0].Reason, "store is full") {
		t.Fatalf("skipped = %+v", res.Skipped)
	}
}

func TestTooManyFiles(t *testing.T) {
	root := t.TempDir()
	for i := range 5 {
		write(t, root, fmt.Sprintf("f%d", i), "x")
	}
	s := Open(filepath.Join(t.TempDir(), "snap"), Options{MaxFiles: 3})
	if _, err := s.Take(context.Background(), []string{root}); err == nil || !strings.Contains(err.Error(), "more than 3") {
		t.Fatalf("err = %v", err)
	}
}

// TestScanStopsItsWorkers: a scan cut short (too many files, a cancelled
// context) with batches still walked and looked at ends every worker
// before Take returns.
func TestScanStopsItsWorkers(t *testing.T) {
	defer goleak.VerifyNone(t)
	root := t.TempDir()
	for i := range 200 {
		write(t, root, fmt.Sprintf("d%03d/f", i), "x")
	}
	s := Open(filepath.Join(t.TempDir(), "snap"), Options{MaxFiles: 10})
	if _, err := s.Take(context.Background(), []string{root}); !errors.Is(err, ErrTooMany) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(filepath.Join(t.TempDir(), "snap"), Options{}).Take(ctx, []string{root}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestApplyRefusesAFolderLeadingOutside(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	s := Open(filepath.Join(t.TempDir(), "snap"), Options{})
	write(t, root, "sub/f", "v1")
	target := take(t, s, root)
	os.RemoveAll(filepath.Join(root, "sub"))
	if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".gitignore", "/sub\n") // the link is not captured, so not deleted first
	cur := take(t, s, root)
	p, err := s.PlanRestore(cur, target)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), p); err == nil || !strings.Contains(err.Error(), "outside the root") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); !os.IsNotExist(err) {
		t.Fatal("a file was written outside the root")
	}
}

// TestParallelScanMatchesSequential: the pool of workers folds what it
// finds in walk order, so a snapshot is byte for byte the one a single
// worker takes — with folders bigger than a batch, nested folders, files
// left out, ignored ones, symlinks, and many files of the same content
// stored side by side (counted once against the store bound).
func TestParallelScanMatchesSequential(t *testing.T) {
	root := t.TempDir()
	for i := range 3*batchFiles + 7 {
		write(t, root, fmt.Sprintf("big/f%04d", i), fmt.Sprintf("content %d", i%50))
	}
	for i := range 40 {
		write(t, root, fmt.Sprintf("d%02d/sub/g%d", i, i), strings.Repeat("z", i))
		write(t, root, fmt.Sprintf("d%02d/h", i), "same")
	}
	write(t, root, "d03/huge", strings.Repeat("h", 200))
	write(t, root, "d07/sub/huge", strings.Repeat("h", 300))
	write(t, root, ".gitignore", "*.log\n")
	write(t, root, "d05/x.log", "ignored")
	if err := os.Symlink("../big/f0001", filepath.Join(root, "d09", "link")); err != nil {
		t.Fatal(err)
	}
	manifests := map[int]string{}
	for _, workers := range []int{1, 8} {
		s := Open(filepath.Join(t.TempDir(), "snap"), Options{MaxFileBytes: 100})
		s.workers = workers
		res, err := s.Take(context.Background(), []string{root})
		if err != nil {
			t.Fatal(err)
		}
		manifests[workers] = res.Roots[0].Manifest
		if res.SkippedCount != 2 || res.Skipped[0].Path != filepath.Join(root, "d03/huge") {
			t.Fatalf("workers %d: skipped = %+v", workers, res.Skipped)
		}
		if used := s.countUsed(); s.used != used {
			t.Fatalf("workers %d: the store counts %d bytes, holds %d", workers, s.used, used)
		}
		m, err := s.Load(res.Roots[0].Manifest)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Entries) != 3*batchFiles+7+80+2 || m.find("d05/x.log") != nil || m.find("d09/link").Mode&fs.ModeSymlink == 0 {
			t.Fatalf("workers %d: %d entries", workers, len(m.Entries))
		}
	}
	if manifests[1] != manifests[8] {
		t.Fatal("one worker and eight took different snapshots")
	}
}

// TestStatCacheTrustsOnlyOldStats: a file whose size, mtime and inode are
// as cached is not read again, unless its mtime is within racyWindow of
// the snapshot that cached it: then a change in the same tick is caught.
func TestStatCacheTrustsOnlyOldStats(t *testing.T) {
	root := t.TempDir()
	s := Open(filepath.Join(t.TempDir(), "snap"), Options{})
	write(t, root, "new", "aaaa")
	write(t, root, "old", "aaaa")
	longAgo := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(root, "old"), longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
	first := take(t, s, root)
	for _, name := range []string{"new", "old"} {
		p := filepath.Join(root, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		write(t, root, name, "bbbb") // same size, same inode
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	second := take(t, s, root)
	if second.find("new").Hash == first.find("new").Hash {
		t.Error("a file changed within the racy window kept its cached hash")
	}
	if second.find("old").Hash != first.find("old").Hash {
		t.Error("a file with an old stat that matches the cache was read again")
	}
}
