package tool

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of ReadTracker.Check, for errors.Is.
var (
	ErrNotRead = errors.New("file not read in this session")
	ErrChanged = errors.New("file changed since it was read")
)

// ReadTracker remembers, per session, which files the model has read and
// what they held, so edit and write refuse to change a file the model has
// not seen or whose content moved under it (another tool, the user, the
// editor). Content hashes decide, not mtimes: the FileSystem may be an
// editor's, whose unsaved buffers have no mtime. Safe for concurrent use.
type ReadTracker struct {
	mu    sync.Mutex
	files map[string]readRecord
}

type readRecord struct {
	size    int64
	modTime time.Time // informational; zero when unknown
	sum     [sha256.Size]byte
}

// NewReadTracker returns an empty tracker.
func NewReadTracker() *ReadTracker {
	return &ReadTracker{files: make(map[string]readRecord)}
}

// Record notes that the model has seen data as the content of the absolute
// path (after a read, or after its own write or edit).
func (t *ReadTracker) Record(path string, data []byte, modTime time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.files[path] = readRecord{size: int64(len(data)), modTime: modTime, sum: sha256.Sum256(data)}
}

// Forget drops what is known about path.
func (t *ReadTracker) Forget(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.files, path)
}

// Seen reports whether path was read in this session (whatever its content).
func (t *ReadTracker) Seen(path string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.files[path]
	return ok
}

// Check returns nil when current is exactly what was last recorded for
// path; otherwise an error wrapping ErrNotRead or ErrChanged whose text asks
// the model to read the file again.
func (t *ReadTracker) Check(path string, current []byte) error {
	t.mu.Lock()
	rec, ok := t.files[path]
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s has not been read in this session; read it with the read tool first, then retry", ErrNotRead, path)
	}
	if int64(len(current)) != rec.size || sha256.Sum256(current) != rec.sum {
		return fmt.Errorf("%w: %s has changed on disk since it was last read; read it again, then retry", ErrChanged, path)
	}
	return nil
}
