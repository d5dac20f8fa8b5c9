package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// readAllow is how Landlock alone, which can only allow, keeps the hidden
// places unreadable while everything else stays readable: the folders on
// the way from / to a hidden place (ways) may only be listed, and every
// other entry of each of them is readable as a whole (dirs, files). The
// rest follows from Landlock's rules being per inode hierarchy:
//   - a hidden place is no entry that is allowed, so neither it nor what is
//     below it is readable — also when it is missing now and made later,
//     or an entry appears beside it later (fail closed: a new file in ~ is
//     unreadable until the next command);
//   - an entry that is a symlink is allowed as what it points to, unless
//     that is hidden, below a hidden place, or a way (a link to ~ would
//     allow ~/.ssh);
//   - listing is hierarchical (READ_DIR on a way covers everything below
//     it), so names inside hidden folders can be listed, not read.
//
// The cost is one directory read per way (/, ~, ~/.config, the session
// root's parents): a few hundred rules, well under a millisecond.
func readAllow(hidden []string) (dirs, files, ways []string) {
	ways = waysTo(hidden)
	for _, w := range ways {
		entries, err := os.ReadDir(w)
		if err != nil {
			continue // unreadable now: nothing below it is allowed
		}
		for _, e := range entries {
			p := filepath.Join(w, e.Name())
			if r, err := filepath.EvalSymlinks(p); err == nil {
				p = r
			}
			if slices.Contains(ways, p) || under(p, hidden) {
				continue
			}
			fi, err := os.Stat(p)
			switch {
			case err != nil:
			case fi.IsDir():
				dirs = append(dirs, p)
			default:
				files = append(files, p)
			}
		}
	}
	return dirs, files, ways
}

// waysTo lists the folders above each hidden place (/ included) that
// exist and are not hidden themselves, each once.
func waysTo(hidden []string) []string {
	var ways []string
	for _, h := range hidden {
		for d := filepath.Dir(h); ; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(ways, d) && !under(d, hidden) {
				ways = append(ways, d)
			}
			if d == "/" {
				break
			}
		}
	}
	return ways
}

// under: path is one of roots or below one.
func under(path string, roots []string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func isRoot() bool { return os.Geteuid() == 0 }
