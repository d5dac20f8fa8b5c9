package ext

import (
	"os"
	"path/filepath"

	"github.com/dsh-dev/dsh/core/saferead"
)

// Roots say where extension files are looked for.
type Roots struct {
	// Cwd is the session's workspace; project folders are looked for in
	// it and its parents up to the repository root (the folder holding
	// .git), nearest first. Without a repository, only Cwd.
	Cwd string
	// UserConfig is dsh's own user folder ($XDG_CONFIG_HOME/dsh); "" skips
	// it.
	UserConfig string
	// Home is the user's home, for ~/.claude and ~/.agents; "" skips them.
	Home string
	// Secret are places no extension file may be or lead to (keys,
	// credentials: core/saferead).
	Secret []string
}

// policy is how files of a scope are read: a project's must lie in the
// project (its repository), the user's anywhere but a secret place.
func (r Roots) policy(scope Scope) saferead.Policy {
	roots := []string{"/"}
	if scope == ScopeProject {
		if dirs := projectDirs(r.Cwd); len(dirs) > 0 {
			roots = []string{dirs[len(dirs)-1]}
		}
	}
	return saferead.Policy{Roots: roots, Secret: r.Secret}
}

// Scope is where a file was found.
type Scope string

const (
	ScopeProject Scope = "project"
	ScopeUser    Scope = "user"
)

// place is one folder to read, in order of precedence.
type place struct {
	dir   string
	scope Scope
	// claude is true for Claude Code's folders (.claude/, ~/.claude/),
	// whose commands number arguments from $0.
	claude bool
	pol    saferead.Policy
}

// projectDirs are cwd and its parents up to the repository root, nearest
// first.
func projectDirs(cwd string) []string {
	if cwd == "" {
		return nil
	}
	var dirs []string
	for d := filepath.Clean(cwd); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return dirs
		}
		if filepath.Dir(d) == d {
			return dirs[:1] // no repository: the cwd only
		}
	}
}

// places lists where to read kind ("commands", "skills", "agents"):
// project folders nearest first (.dsh before .claude before .agents in
// each), then the user's.
func (r Roots) places(kind string, agentsDir bool) []place {
	var out []place
	for _, d := range projectDirs(r.Cwd) {
		pp := r.policy(ScopeProject)
		out = append(out, place{filepath.Join(d, ".dsh", kind), ScopeProject, false, pp},
			place{filepath.Join(d, ".claude", kind), ScopeProject, true, pp})
		if agentsDir {
			out = append(out, place{filepath.Join(d, ".agents", kind), ScopeProject, false, pp})
		}
	}
	up := r.policy(ScopeUser)
	if r.UserConfig != "" {
		out = append(out, place{filepath.Join(r.UserConfig, kind), ScopeUser, false, up})
	}
	if r.Home != "" {
		out = append(out, place{filepath.Join(r.Home, ".claude", kind), ScopeUser, true, up})
		if agentsDir {
			out = append(out, place{filepath.Join(r.Home, ".agents", kind), ScopeUser, false, up})
		}
	}
	return out
}
