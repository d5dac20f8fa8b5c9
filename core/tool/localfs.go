package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LocalFS returns the FileSystem of the local disk. Its WriteFile is atomic
// (a temp file in the same folder, fsynced, renamed over the target, the
// folder fsynced), keeps an existing file's permission bits and creates
// missing parent folders, so a crash never leaves a half-written source file.
func LocalFS() FileSystem { return localFS{} }

type localFS struct{}

// ReadFile reads the whole file. A missing file wraps fs.ErrNotExist.
func (localFS) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("read %s: %w", path, errIsDir)
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or a device could block or never end.
		return nil, fmt.Errorf("read %s: %w", path, errNotRegular)
	}
	return os.ReadFile(path)
}

var (
	errIsDir      = errors.New("is a directory")
	errNotRegular = errors.New("is not a regular file (a device, pipe or socket)")
)

// WriteFile replaces path with data. mode applies only to a new file (0
// means 0644); an existing file keeps its permission bits.
func (localFS) WriteFile(ctx context.Context, path string, data []byte, mode uint32) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	perm := fs.FileMode(mode) & fs.ModePerm
	if perm == 0 {
		perm = 0o644
	}
	if fi, statErr := os.Stat(path); statErr == nil {
		if fi.IsDir() {
			return fmt.Errorf("write %s: %w", path, errIsDir)
		}
		perm = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	} else if !errors.Is(statErr, fs.ErrNotExist) {
		return fmt.Errorf("write %s: %w", path, statErr)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: create parent folders: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".dsh-tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: set mode: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: rename into place: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
