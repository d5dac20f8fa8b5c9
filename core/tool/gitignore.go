package tool

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	segs    []string // pattern segments, relative to the file's folder
	negate  bool     // "!pattern": re-include
	dirOnly bool     // "pattern/": folders only
}

// ignoreFile is the parsed .gitignore of one folder.
type ignoreFile struct {
	dir   string // absolute folder the patterns are relative to
	rules []ignoreRule
}

// parseGitignore parses gitignore syntax: blank lines and # comments
// skipped, trailing spaces trimmed unless escaped, "\#" and "\!" escapes,
// "!" negation, a trailing "/" for folders only, a pattern with a "/"
// elsewhere anchored to the file's folder, one without matching a name at
// any depth, "**" segments.
func parseGitignore(dir string, data []byte) *ignoreFile {
	f := &ignoreFile{dir: dir}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		line = trimTrailingSpaces(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		segs := strings.Split(line, "/")
		for i, s := range segs {
			segs[i] = fixBang(s)
		}
		if !anchored {
			segs = append([]string{"**"}, segs...)
		}
		if segs[len(segs)-1] == "**" && len(segs) > 1 {
			// "dir/**" matches everything inside dir, not dir itself.
			segs = append(segs[:len(segs)-1], "*", "**")
		}
		r.segs = segs
		f.rules = append(f.rules, r)
	}
	return f
}

func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	if strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-2] + " "
	}
	return s
}

// match returns (ignored, decided) for an absolute path: the last matching
// rule of the file decides.
func (f *ignoreFile) match(abs string, isDir bool) (ignored, decided bool) {
	rel, ok := relUnder(f.dir, abs)
	if !ok {
		return false, false
	}
	segs := splitSegs(rel)
	for i := len(f.rules) - 1; i >= 0; i-- {
		r := f.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if matchSegs(r.segs, segs) {
			return !r.negate, true
		}
	}
	return false, false
}

func relUnder(dir, abs string) (string, bool) {
	if dir == "/" {
		return strings.TrimPrefix(abs, "/"), true
	}
	if !strings.HasPrefix(abs, dir+"/") {
		return "", false
	}
	return abs[len(dir)+1:], true
}

// ignoreStack is the .gitignore files in force in one folder, outermost
// first; the innermost file with a matching rule decides.
type ignoreStack []*ignoreFile

func (s ignoreStack) ignored(abs string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		if ign, ok := s[i].match(abs, isDir); ok {
			return ign
		}
	}
	return false
}

// loadIgnore reads dir/.gitignore; nil when there is none.
func loadIgnore(dir string) *ignoreFile {
	data, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		return nil
	}
	f := parseGitignore(dir, data)
	if len(f.rules) == 0 {
		return nil
	}
	return f
}

func hasGit(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}

// parentIgnores returns the .gitignore files of root's ancestors that apply
// to it: up to and including the nearest folder holding a .git (the
// repository root), or up to / outside any repository. This is ripgrep's
// rule with --no-require-git, so both grep engines agree.
func parentIgnores(root string) ignoreStack {
	if hasGit(root) {
		return nil
	}
	var dirs []string
	for d := filepath.Dir(root); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if hasGit(d) || d == "/" {
			break
		}
	}
	var st ignoreStack
	for i := len(dirs) - 1; i >= 0; i-- {
		if f := loadIgnore(dirs[i]); f != nil {
			st = append(st, f)
		}
	}
	return st
}

// walkEntry is one non-folder entry found by walkFiles.
type walkEntry struct {
	path string // absolute
	d    fs.DirEntry
}

// readFolder lists dir (sorted by name) and returns the .gitignore files
// in force in it: st, cut at a nested repository (the rules above a .git
// stop there), plus dir's own .gitignore. ok is false when dir cannot be
// read. The .gitignore is read only when the listing names one, so a
// folder without one costs no failed open.
func readFolder(dir string, st ignoreStack) (entries []fs.DirEntry, inner ignoreStack, ok bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, false
	}
	hasIgnore := false
	for _, e := range entries {
		switch e.Name() {
		case ".git":
			st = nil
		case ".gitignore":
			hasIgnore = true
		}
	}
	if hasIgnore {
		if f := loadIgnore(dir); f != nil {
			st = append(st[:len(st):len(st)], f)
		}
	}
	return entries, st, true
}

// walkFiles visits every non-folder entry under root that .gitignore rules
// do not exclude, skipping .git and not following symlinked folders.
// maxDepth limits how deep below root it goes (-1: no limit). fn returning
// false stops the walk. Unreadable folders are skipped.
func walkFiles(ctx context.Context, root string, maxDepth int, fn func(walkEntry) bool) error {
	var walk func(dir string, st ignoreStack, depth int) (bool, error)
	walk = func(dir string, st ignoreStack, depth int) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		entries, st, ok := readFolder(dir, st)
		if !ok {
			return true, nil
		}
		for _, e := range entries {
			name := e.Name()
			if name == ".git" {
				continue
			}
			abs := filepath.Join(dir, name)
			isDir := e.IsDir()
			if st.ignored(abs, isDir) {
				continue
			}
			if isDir {
				if maxDepth >= 0 && depth+1 >= maxDepth {
					continue
				}
				cont, err := walk(abs, st, depth+1)
				if err != nil || !cont {
					return cont, err
				}
				continue
			}
			if !fn(walkEntry{path: abs, d: e}) {
				return false, nil
			}
		}
		return true, nil
	}
	_, err := walk(root, parentIgnores(root), 0)
	return err
}

// WalkWorkspace visits every folder under root that .gitignore rules do
// not exclude, the way glob and grep see a workspace (.git skipped,
// symlinked folders not followed, unreadable folders skipped), calling fn
// once per folder with the folder's files, symlinks and other non-folder
// entries the rules keep, sorted by name, before its subfolders; a folder
// with none is not reported. Handing over a folder at a time lets a caller
// stat its files relative to the folder, and share the folders among
// workers. skipDir, when not nil, prunes a folder (by absolute path)
// before it is read; fn returning false stops the walk. fn may keep
// files. Workspace snapshots (core/snapshot) use it so a rewind restores
// what the file tools can find.
func WalkWorkspace(ctx context.Context, root string, skipDir func(abs string) bool, fn func(dir string, files []fs.DirEntry) bool) error {
	var walk func(dir string, st ignoreStack) (bool, error)
	walk = func(dir string, st ignoreStack) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		entries, st, ok := readFolder(dir, st)
		if !ok {
			return true, nil
		}
		var files, dirs []fs.DirEntry
		for _, e := range entries {
			if e.Name() == ".git" || len(st) > 0 && st.ignored(filepath.Join(dir, e.Name()), e.IsDir()) {
				continue
			}
			if e.IsDir() {
				dirs = append(dirs, e)
			} else {
				files = append(files, e)
			}
		}
		if len(files) > 0 && !fn(dir, files) {
			return false, nil
		}
		for _, e := range dirs {
			abs := filepath.Join(dir, e.Name())
			if skipDir != nil && skipDir(abs) {
				continue
			}
			if cont, err := walk(abs, st); err != nil || !cont {
				return cont, err
			}
		}
		return true, nil
	}
	_, err := walk(root, parentIgnores(root))
	return err
}
