package ext

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dsh-dev/dsh/core/saferead"
)

// Bounds of what is read.
const (
	// MaxFileBytes bounds one command, agent or SKILL.md file.
	MaxFileBytes = 256 << 10
	// maxFilesPerDir bounds the files one folder tree yields.
	maxFilesPerDir = 1000
	// maxDepth bounds how deep sub-folders are followed.
	maxDepth = 6
)

// maxEntries bounds the folder entries one walk looks at (files and
// folders of any kind), so a folder of a million entries, or a link to a
// large tree, costs a bounded time at every listing (a variable so a
// test can lower it).
var maxEntries = 5000

// Diagnostic is a file that could not be used, and why.
type Diagnostic struct {
	Path string
	Msg  string
}

func (d Diagnostic) String() string { return d.Path + ": " + d.Msg }

// ErrTooLarge is a file over MaxFileBytes.
var ErrTooLarge = errors.New("file is too large")

// readFile reads one extension file under pol (core/saferead: links
// resolved and checked, no secret place, regular files only), at most
// limit bytes: a longer file is ErrTooLarge.
func readFile(pol saferead.Policy, path string, limit int64) ([]byte, error) {
	pol.Max = limit + 1
	f, err := pol.Read(path)
	if err != nil {
		var pe *fs.PathError
		if errors.Is(err, saferead.ErrLinkLoop) || errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "too many levels") {
			return nil, errors.New("symlink loop")
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, errors.New(strings.TrimPrefix(err.Error(), "read "+path+": "))
	}
	if f.Size > limit {
		return nil, fmt.Errorf("%w: %d bytes, the bound is %d", ErrTooLarge, f.Size, limit)
	}
	return f.Data, nil
}

// describeErr words a file-system error without Go's syntax.
func describeErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if strings.Contains(err.Error(), "too many levels of symbolic links") {
		return errors.New("symlink loop")
	}
	return err
}

// mdFile is one markdown file found under a folder: its path and its
// name relative to the folder, without the extension, slash-separated.
type mdFile struct {
	path string
	rel  string
}

// walkMarkdown lists the *.md files under dir (sub-folders followed to
// maxDepth, symlinked folders included once each, if pol lets them be
// read: a project's folder that links out of the project is not
// followed), sorted by rel, looking at maxEntries entries at most. A
// missing dir yields nothing; unreadable parts are diagnostics.
func walkMarkdown(dir string, pol saferead.Policy) ([]mdFile, []Diagnostic) {
	w := mdWalk{pol: pol, seen: map[string]bool{}}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.diags = append(w.diags, Diagnostic{dir, describeErr(err).Error()})
		}
		return nil, w.diags
	}
	w.walk(dir, "", 0)
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].rel < w.out[j].rel })
	return w.out, w.diags
}

// mdWalk is one walkMarkdown.
type mdWalk struct {
	pol     saferead.Policy
	out     []mdFile
	diags   []Diagnostic
	seen    map[string]bool // real paths of the folders read
	entries int
	full    bool // a bound was reached: nothing more is read
}

func (w *mdWalk) walk(d, rel string, depth int) {
	real, err := w.pol.Check(d)
	if err != nil {
		msg := describeErr(errors.Unwrap(err)).Error()
		if errors.Is(err, saferead.ErrOutside) {
			msg = "the folder links out of the project; not read"
		}
		w.diags = append(w.diags, Diagnostic{d, msg})
		return
	}
	if w.seen[real] {
		w.diags = append(w.diags, Diagnostic{d, "folder already read (symlink loop)"})
		return
	}
	w.seen[real] = true
	entries, err := os.ReadDir(d)
	if err != nil {
		w.diags = append(w.diags, Diagnostic{d, describeErr(err).Error()})
		return
	}
	for _, e := range entries {
		if w.full {
			return
		}
		if w.entries++; w.entries > maxEntries {
			w.full = true
			w.diags = append(w.diags, Diagnostic{d, fmt.Sprintf("more than %d entries under the folder; the rest are not read", maxEntries)})
			return
		}
		w.entry(d, rel, depth, e.Name())
	}
}

// entry looks at one entry of folder d.
func (w *mdWalk) entry(d, rel string, depth int, name string) {
	if strings.HasPrefix(name, ".") {
		return
	}
	p := filepath.Join(d, name)
	st, err := os.Stat(p) // follows links
	if err != nil {
		w.diags = append(w.diags, Diagnostic{p, describeErr(err).Error()})
		return
	}
	switch {
	case st.IsDir():
		if depth+1 > maxDepth {
			w.diags = append(w.diags, Diagnostic{p, fmt.Sprintf("nested deeper than %d folders; not read", maxDepth)})
			return
		}
		w.walk(p, rel+name+"/", depth+1)
	case strings.HasSuffix(name, ".md"):
		if len(w.out) >= maxFilesPerDir {
			w.full = true
			w.diags = append(w.diags, Diagnostic{p, fmt.Sprintf("more than %d files; the rest are not read", maxFilesPerDir)})
			return
		}
		w.out = append(w.out, mdFile{path: p, rel: rel + strings.TrimSuffix(name, ".md")})
	}
}
