package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/core/saferead"
)

// Resolve turns a path given by the model into an absolute, clean path with
// every symlink resolved, so the permission gate judges where a call really
// lands. Relative paths resolve against cwd. Components that do not exist
// yet (a file about to be created) are kept as written after the longest
// existing prefix has been resolved; a dangling symlink is followed to its
// target, so writing through it cannot escape the workspace unnoticed.
func Resolve(cwd, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(cwd) {
			return "", fmt.Errorf("relative path %q but the workspace %q is not absolute", p, cwd)
		}
		p = filepath.Join(cwd, p)
	}
	return resolveSymlinks(filepath.Clean(p))
}

// resolveSymlinks walks p link by link (saferead.Walk: at most 40 links,
// so a loop is an error and not a hang). Unlike filepath.EvalSymlinks it
// accepts paths whose tail does not exist.
func resolveSymlinks(p string) (string, error) {
	real, err := saferead.Walk(p, nil, func(next string, rest []string, err error) (string, error) {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || isNotDir(err) {
			// Nothing more exists on disk: keep the remaining
			// components as written (cleaned).
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		return "", err
	})
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	return real, nil
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// Inside reports whether path lies inside workspace (or is it), after the
// symlinks of both are resolved. A relative path is judged against the
// workspace. An unresolvable path is not inside.
func Inside(workspace, path string) bool {
	if workspace == "" || path == "" {
		return false
	}
	ws, err := Resolve("/", workspace)
	if err != nil {
		return false
	}
	p, err := Resolve(ws, path)
	if err != nil {
		return false
	}
	return within(ws, p)
}

// within is Inside for paths already resolved.
func within(ws, p string) bool {
	if ws == "/" {
		return true
	}
	return p == ws || strings.HasPrefix(p, ws+"/")
}

// workspaceOf returns the resolved workspace of env; tools compare resolved
// paths against it.
func workspaceOf(env *Env) (string, error) {
	if env == nil || env.Cwd == "" {
		return "", errors.New("the session has no working directory")
	}
	if !filepath.IsAbs(env.Cwd) {
		return "", fmt.Errorf("the session's working directory %q is not absolute", env.Cwd)
	}
	return Resolve("/", env.Cwd)
}

// resolveIn resolves p against env's cwd.
func resolveIn(env *Env, p string) (string, error) {
	ws, err := workspaceOf(env)
	if err != nil {
		return "", err
	}
	return Resolve(ws, p)
}

// display shows p relative to the workspace when inside it (shorter for the
// model, and a valid argument for the next call), absolute otherwise.
func display(ws, p string) string {
	if ws != "" && within(ws, p) {
		if p == ws {
			return "."
		}
		if ws == "/" {
			return p[1:]
		}
		return p[len(ws)+1:]
	}
	return p
}
