package core

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A command the model runs may write the repository's .git/config and
// .git/hooks (they are inside the workspace). dsh's own git ignores what
// they name (core/safegit), but the user's next `git commit` in a
// terminal runs a planted hook unconfined. So a turn that changed them
// ends with a warning in dsh's log naming what changed.

// gitControlFiles are the repository files whose change can make the
// user's own git run a program.
func gitControlFiles(gitDir string) map[string]string {
	out := map[string]string{}
	add := func(p string) {
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			out[p] = fmt.Sprintf("%d:%d:%v", fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
		}
	}
	for _, name := range []string{"config", "config.worktree", filepath.Join("info", "attributes")} {
		add(filepath.Join(gitDir, name))
	}
	if entries, err := os.ReadDir(filepath.Join(gitDir, "hooks")); err == nil && len(entries) <= 256 {
		for _, e := range entries {
			add(filepath.Join(gitDir, "hooks", e.Name()))
		}
	}
	return out
}

// gitSnapshot is the control files of the session's repository ("" and
// nil outside one, or when .git is not a plain folder).
func (s *Session) gitSnapshot() (string, map[string]string) {
	root := gitRoot(s.header.Cwd)
	if root == "" {
		return "", nil
	}
	gitDir := filepath.Join(root, ".git")
	if fi, err := os.Lstat(gitDir); err != nil || !fi.IsDir() {
		return "", nil
	}
	return gitDir, gitControlFiles(gitDir)
}

// warnGitChanges logs which control files differ from before.
func (s *Session) warnGitChanges(turn int, gitDir string, before map[string]string) {
	if gitDir == "" {
		return
	}
	after := gitControlFiles(gitDir)
	var changed []string
	for p, v := range after {
		if before[p] != v {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p+" (removed)")
		}
	}
	if len(changed) == 0 {
		return
	}
	slices.Sort(changed)
	s.rt.log.Warn("this turn changed the repository's git config or hooks; review them before you run git yourself (a hook runs unconfined at your next commit)",
		"session", s.id, "turn", turn, "files", strings.Join(changed, ", "))
}
