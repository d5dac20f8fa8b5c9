package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Op kinds: what a restore does to one workspace file.
const (
	OpCreate = "create"
	OpModify = "modify"
	OpDelete = "delete"
)

// Op is one step of a restore. Applying an op twice does what applying it
// once does, so a restore cut short is finished by applying it again.
type Op struct {
	Path string      `json:"path"` // slash-separated, relative to the root
	Kind string      `json:"op"`
	Mode fs.FileMode `json:"mode,omitempty"`
	Hash string      `json:"hash,omitempty"`
}

// Plan restores one root to a manifest.
type Plan struct {
	Root string `json:"root"`
	Ops  []Op   `json:"ops"`
	// Uncaptured are files the restore would overwrite whose current
	// content is in no snapshot (ignored, too large): a rewind refuses
	// them unless forced.
	Uncaptured []string `json:"uncaptured,omitempty"`
	// NotRestored are files the target snapshot left out: they stay as
	// they are.
	NotRestored []string `json:"notRestored,omitempty"`
}

// PlanRestore works out how to take root from the state cur captured to
// the state target captured. Every content it will write must be stored.
func (s *Store) PlanRestore(cur, target *Manifest) (*Plan, error) {
	p := &Plan{Root: target.Root}
	i, j := 0, 0
	for i < len(cur.Entries) || j < len(target.Entries) {
		var c, t *Entry
		switch {
		case j >= len(target.Entries) || (i < len(cur.Entries) && cur.Entries[i].Path < target.Entries[j].Path):
			c = &cur.Entries[i]
			i++
		case i >= len(cur.Entries) || target.Entries[j].Path < cur.Entries[i].Path:
			t = &target.Entries[j]
			j++
		default:
			c, t = &cur.Entries[i], &target.Entries[j]
			i++
			j++
		}
		switch {
		case t == nil && target.skipped(c.Path):
			p.NotRestored = append(p.NotRestored, c.Path)
		case t == nil:
			p.Ops = append(p.Ops, Op{Path: c.Path, Kind: OpDelete})
		case c == nil:
			if _, err := os.Lstat(filepath.Join(target.Root, filepath.FromSlash(t.Path))); err == nil {
				p.Uncaptured = append(p.Uncaptured, t.Path)
			}
			p.Ops = append(p.Ops, Op{Path: t.Path, Kind: OpCreate, Mode: t.Mode, Hash: t.Hash})
		case c.Hash != t.Hash || c.Mode != t.Mode:
			p.Ops = append(p.Ops, Op{Path: t.Path, Kind: OpModify, Mode: t.Mode, Hash: t.Hash})
		}
	}
	for _, op := range p.Ops {
		if op.Kind != OpDelete && !s.HasBlob(op.Hash) {
			return nil, fmt.Errorf("snapshot: the stored content of %s is missing", op.Path)
		}
	}
	return p, nil
}

// Changed returns the paths whose entry differs between a and b (added,
// removed or changed).
func Changed(a, b *Manifest) []string {
	var out []string
	i, j := 0, 0
	for i < len(a.Entries) || j < len(b.Entries) {
		switch {
		case j >= len(b.Entries) || (i < len(a.Entries) && a.Entries[i].Path < b.Entries[j].Path):
			out = append(out, a.Entries[i].Path)
			i++
		case i >= len(a.Entries) || b.Entries[j].Path < a.Entries[i].Path:
			out = append(out, b.Entries[j].Path)
			j++
		default:
			if a.Entries[i].Hash != b.Entries[j].Hash || a.Entries[i].Mode != b.Entries[j].Mode {
				out = append(out, a.Entries[i].Path)
			}
			i++
			j++
		}
	}
	return out
}

// Apply carries out a plan: each file is written whole through a
// temporary file and a rename (a reader never sees half of one), deleted
// files' folders that end up empty are removed. It never writes outside
// the root, through a symlinked folder included.
func (s *Store) Apply(ctx context.Context, p *Plan) error {
	realRoot, err := filepath.EvalSymlinks(p.Root)
	if err != nil {
		return fmt.Errorf("restore %s: %w", p.Root, err)
	}
	var emptied []string
	for _, op := range p.Ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !filepath.IsLocal(filepath.FromSlash(op.Path)) {
			return fmt.Errorf("restore %s: path %q leaves the root", p.Root, op.Path)
		}
		abs := filepath.Join(p.Root, filepath.FromSlash(op.Path))
		if op.Kind == OpDelete {
			if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("restore: delete %s: %w", abs, err)
			}
			emptied = append(emptied, filepath.Dir(abs))
			continue
		}
		if err := s.writeFile(realRoot, abs, op); err != nil {
			return fmt.Errorf("restore: write %s: %w", abs, err)
		}
	}
	if err := syncFS(realRoot); err != nil {
		return fmt.Errorf("restore %s: flush: %w", p.Root, err)
	}
	for _, d := range emptied {
		for d != p.Root && strings.HasPrefix(d, p.Root+string(filepath.Separator)) {
			if os.Remove(d) != nil {
				break
			}
			d = filepath.Dir(d)
		}
	}
	return nil
}

// writeFile puts the stored content of op at abs with op's mode.
func (s *Store) writeFile(realRoot, abs string, op Op) error {
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if realDir != realRoot && !strings.HasPrefix(realDir, realRoot+string(filepath.Separator)) {
		return fmt.Errorf("its folder leads outside the root (to %s)", realDir)
	}
	data, err := s.readBlob(op.Hash)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		return errors.New("a folder is in the way")
	}
	tmpName := filepath.Join(dir, ".dsh-restore-"+op.Hash[:16])
	_ = os.Remove(tmpName)
	if op.Mode&fs.ModeSymlink != 0 {
		if err := os.Symlink(string(data), tmpName); err != nil {
			return err
		}
	} else {
		f, err := os.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, op.Mode.Perm())
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(op.Mode.Perm()) // the umask narrowed the create mode
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmpName)
			return err
		}
	}
	if err := os.Rename(tmpName, abs); err != nil {
		os.Remove(tmpName)
		return err
	}
	return nil
}
