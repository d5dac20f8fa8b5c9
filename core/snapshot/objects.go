package snapshot

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-dev/dsh/core/atomicfile"
)

func (s *Store) blobPath(hash string) string {
	return filepath.Join(s.dir, "objects", hash[:2], hash[2:])
}

// HasBlob reports whether the content hash is stored.
func (s *Store) HasBlob(hash string) bool {
	if !validHash(hash) {
		return false
	}
	_, err := os.Stat(s.blobPath(hash))
	return err == nil
}

// putBlob stores data under its hash unless it is there already. stored
// is false when the store bound leaves no room for it. Contents are not
// fsynced one by one (a snapshot of many new files would cost a flush
// each); the manifest that names them is, and a kill of the process
// loses nothing the kernel was given. The scan's workers call it side by
// side: the room is reserved under blobMu, and a content another worker is
// storing now counts as stored (if that fails, so does the snapshot, and
// no manifest names it).
func (s *Store) putBlob(hash string, data []byte) (stored bool, err error) {
	path := s.blobPath(hash)
	if _, err := os.Stat(path); err == nil {
		return true, nil
	}
	size := int64(len(data))
	s.blobMu.Lock()
	if _, err := os.Stat(path); err == nil || s.writing[hash] {
		s.blobMu.Unlock()
		return true, nil
	}
	if s.used < 0 {
		s.used = s.countUsed()
	}
	if s.used+size > s.opt.MaxStoreBytes {
		s.blobMu.Unlock()
		return false, nil
	}
	s.used += size
	s.writing[hash] = true
	s.blobMu.Unlock()

	err = os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = atomicfile.Write(path, data, false)
	}
	s.blobMu.Lock()
	delete(s.writing, hash)
	if err != nil {
		s.used -= size
	}
	s.blobMu.Unlock()
	if err != nil {
		return false, fmt.Errorf("store content: %w", err)
	}
	return true, nil
}

// countUsed adds up the sizes of the stored contents.
func (s *Store) countUsed() int64 {
	var n int64
	_ = filepath.WalkDir(filepath.Join(s.dir, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// readBlob returns stored content.
func (s *Store) readBlob(hash string) ([]byte, error) {
	if !validHash(hash) {
		return nil, fmt.Errorf("snapshot: bad content hash %q", hash)
	}
	data, err := os.ReadFile(s.blobPath(hash))
	if err != nil {
		return nil, fmt.Errorf("snapshot: content %s: %w", hash, err)
	}
	return data, nil
}
