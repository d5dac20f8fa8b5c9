// Package saferead reads the files dsh reads on its own — project
// instructions (AGENTS.md, CLAUDE.md, nested ones), the config file and
// its includes, commands and skills — with the rules the file tools
// follow, because a repository is the model's and a hostile one's to
// shape: an AGENTS.md that is a link to ~/.ssh/id_ed25519 must not send
// the key to the model, and a FIFO or /dev/zero must not hang or exhaust
// dsh.
//
// A read:
//   - resolves every symbolic link itself, and refuses a path that at any
//     step passes through a secret place (Policy.Secret);
//   - refuses a file whose real path is outside Policy.Roots;
//   - opens the real path so that no component can have become a link
//     since (openat2 RESOLVE_NO_SYMLINKS where the kernel has it, else
//     O_NOFOLLOW on the last component), without blocking (a FIFO);
//   - reads regular files only, at most Policy.Max bytes (the size is
//     reported, so a caller can say what it cut).
package saferead

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The errors a read gives (wrapped with the path).
var (
	ErrOutside    = errors.New("outside the allowed folders")
	ErrSecret     = errors.New("through a secret place")
	ErrNotRegular = errors.New("not a regular file")
	ErrLinkLoop   = errors.New("too many levels of symbolic links")
)

// maxHops bounds link resolution, so a link loop is an error and not a
// hang (the kernel's own limit).
const maxHops = 40

// DefaultMax is the bound when Policy.Max is 0.
const DefaultMax = 1 << 20

// Policy says what may be read.
type Policy struct {
	// Roots are the folders a file's real path must lie in (absolute).
	// "/" allows everywhere but the secret places. Empty allows nothing.
	Roots []string
	// Secret are places never read or passed through (absolute; missing
	// ones are fine).
	Secret []string
	// Max is the most bytes read (0: DefaultMax).
	Max int64
}

// File is what a read returns.
type File struct {
	// Path is the path as asked; Real is it with every link resolved.
	Path, Real string
	// Data is at most Policy.Max bytes from the start of the file.
	Data []byte
	// Size is the file's size when opened (>= len(Data); larger when cut).
	Size int64
}

// Cut reports whether Data is less than the whole file.
func (f File) Cut() bool { return int64(len(f.Data)) < f.Size }

// Read reads path (absolute) under p.
func (p Policy) Read(path string) (File, error) {
	real, err := p.Check(path)
	if err != nil {
		return File{}, err
	}
	fd, err := openNoLinks(real)
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", path, err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return File{}, fmt.Errorf("read %s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	limit := p.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	data, err := io.ReadAll(io.LimitReader(fd, limit))
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", path, err)
	}
	return File{Path: path, Real: real, Data: data, Size: max(st.Size(), int64(len(data)))}, nil
}

// Check resolves path and returns its real path, or why it may not be
// read (it does not look at what kind of file it is).
func (p Policy) Check(path string) (string, error) {
	if !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return "", fmt.Errorf("read %q: not an absolute path", path)
	}
	secret := p.realAll(p.Secret)
	real, err := resolve(filepath.Clean(path), func(step string) bool { return underAny(step, secret) })
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if !underAny(real, p.realAll(p.Roots)) {
		return "", fmt.Errorf("read %s: %w (it is %s)", path, ErrOutside, real)
	}
	return real, nil
}

// realAll resolves each path's links (a missing one stays as written).
func (Policy) realAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		out = append(out, p)
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			out = append(out, r)
		}
	}
	return out
}

// resolve walks p link by link and fails when a step lands in a place
// secret says is one, or does not exist.
func resolve(p string, secret func(string) bool) (string, error) {
	return Walk(p, func(next string) error {
		if secret(next) {
			return fmt.Errorf("%w (%s)", ErrSecret, next)
		}
		return nil
	}, nil)
}

// Walk resolves the absolute, clean path p one component at a time,
// following every symbolic link itself (a link's target replaces it;
// ".." after a link climbs from where the link led), so that each place
// the path passes through can be judged — the one walker of the readers
// here and of the file tools' paths (core/tool.Resolve). step, when not
// nil, sees each path before it is looked at and may refuse it: its error
// is returned. lost, when not nil, says what a component that cannot be
// looked at means: it gets that path, the components after it and lstat's
// error, and returns the walk's result; when nil, the error is returned.
// More than maxHops links is ErrLinkLoop.
func Walk(p string, step func(next string) error, lost func(next string, rest []string, err error) (string, error)) (string, error) {
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	done, hops := "/", 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, name)
		if step != nil {
			if err := step(next); err != nil {
				return "", err
			}
		}
		fi, err := os.Lstat(next)
		if err != nil {
			if lost != nil {
				return lost(next, rest, err)
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if hops++; hops > maxHops {
			return "", ErrLinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done, nil
}

// underAny reports whether p is one of roots or below one.
func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if r == "/" || p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// HomeSecrets are the secret places in a home folder that every reader
// and the sandbox keep from commands and from the model: keys, cloud and
// registry credentials. "" (no home) gives none.
func HomeSecrets(home string) []string {
	if home == "" {
		return nil
	}
	var out []string
	for _, d := range []string{".ssh", ".aws", ".gnupg", ".docker", ".netrc", ".git-credentials", ".config/gh"} {
		out = append(out, filepath.Join(home, d))
	}
	return out
}
