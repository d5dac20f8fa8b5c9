// Package atomicfile writes a file whole: through a temporary file in
// the same folder and a rename, so a reader — or the next process after a
// crash — finds the old content or the new one, never a part of either.
// The session's rewind plan and the snapshot store's contents and
// manifests are written this way.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write puts data at path (created with mode 0o600). With sync, the data
// and then the rename are flushed to disk before it returns, so the file
// survives a power loss too; without, a kill of the process loses nothing
// the kernel was given. The folder must exist. A failed write leaves no
// temporary file behind.
func Write(path string, data []byte, sync bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if sync {
		return SyncDir(dir)
	}
	return nil
}

// SyncDir flushes dir's entries (a rename into it, say) to disk. A file
// system that cannot sync a folder (EINVAL) is taken as having nothing to
// flush.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, fs.ErrInvalid) {
		return err
	}
	return nil
}
