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
// maxDepth, symlinked folders included once each), sorted by rel. A
// missing dir yields nothing; unreadable parts are diagnostics.
func walkMarkdown(dir string) ([]mdFile, []Diagnostic) {
	var out []mdFile
	var diags []Diagnostic
	seen := map[string]bool{}
	var walk func(d, rel string, depth int)
	walk = func(d, rel string, depth int) {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			diags = append(diags, Diagnostic{d, describeErr(err).Error()})
			return
		}
		if seen[real] {
			diags = append(diags, Diagnostic{d, "folder already read (symlink loop)"})
			return
		}
		seen[real] = true
		entries, err := os.ReadDir(d)
		if err != nil {
			diags = append(diags, Diagnostic{d, describeErr(err).Error()})
			return
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			p := filepath.Join(d, name)
			st, err := os.Stat(p) // follows links
			if err != nil {
				diags = append(diags, Diagnostic{p, describeErr(err).Error()})
				continue
			}
			switch {
			case st.IsDir():
				if depth+1 > maxDepth {
					diags = append(diags, Diagnostic{p, fmt.Sprintf("nested deeper than %d folders; not read", maxDepth)})
					continue
				}
				walk(p, rel+name+"/", depth+1)
			case strings.HasSuffix(name, ".md"):
				if len(out) >= maxFilesPerDir {
					diags = append(diags, Diagnostic{p, fmt.Sprintf("more than %d files; the rest are not read", maxFilesPerDir)})
					return
				}
				out = append(out, mdFile{path: p, rel: rel + strings.TrimSuffix(name, ".md")})
			}
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			diags = append(diags, Diagnostic{dir, describeErr(err).Error()})
		}
		return nil, diags
	}
	walk(dir, "", 0)
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, diags
}
