package tool

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWalkWorkspaceSeesWhatGlobSees: the snapshot walker hands over each
// folder's files once, sorted, before the folder's subfolders, and finds
// exactly the files the glob and grep walker finds (the .gitignore rules,
// nested repositories, .git, symlinks as entries); skipDir prunes.
func TestWalkWorkspaceSeesWhatGlobSees(t *testing.T) {
	te := newTestEnv(t)
	searchTree(t, te)
	ctx := context.Background()
	var want []string
	if err := walkFiles(ctx, te.ws, -1, func(e walkEntry) bool {
		want = append(want, e.path)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	var got, order []string
	seen := map[string]bool{}
	err := WalkWorkspace(ctx, te.ws, nil, func(dir string, files []fs.DirEntry) bool {
		if seen[dir] {
			t.Errorf("%s reported twice", dir)
		}
		seen[dir] = true
		order = append(order, dir)
		if !slices.IsSortedFunc(files, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }) {
			t.Errorf("%s: files not sorted", dir)
		}
		for _, f := range files {
			if f.IsDir() {
				t.Errorf("%s: folder %s handed over as a file", dir, f.Name())
			}
			got = append(got, filepath.Join(dir, f.Name()))
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("WalkWorkspace found\n%v\nwalkFiles found\n%v", got, want)
	}
	if !slices.Contains(got, filepath.Join(te.ws, "link.go")) || slices.Contains(got, filepath.Join(te.ws, "a.log")) {
		t.Fatalf("got %v", got)
	}
	if i, j := slices.Index(order, filepath.Join(te.ws, "sub")), slices.Index(order, filepath.Join(te.ws, "sub", "deep")); i < 0 || j < i {
		t.Fatalf("folder order %v", order)
	}

	var pruned []string
	err = WalkWorkspace(ctx, te.ws, func(abs string) bool { return abs == filepath.Join(te.ws, "sub") }, func(dir string, files []fs.DirEntry) bool {
		pruned = append(pruned, dir)
		return true
	})
	if err != nil || slices.ContainsFunc(pruned, func(d string) bool { return strings.HasPrefix(d, filepath.Join(te.ws, "sub")) }) {
		t.Fatalf("skipDir: %v, %v", pruned, err)
	}
}
