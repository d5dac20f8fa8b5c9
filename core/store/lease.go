package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// leaseFile is the lock file inside a session directory. It is never
// deleted while the session exists: deleting a lock file lets a second
// process lock a fresh inode while the first still holds the old one.
const leaseFile = "lease"

// lease is a held write lease: an exclusive flock on <dir>/lease. The kernel
// frees it when the holder exits, however it exits, so a crashed writer never
// leaves a stale lock behind.
type lease struct {
	f   *os.File
	key fileKey
}

// fileKey names a lease file by inode, so two Stores (or two spellings of a
// path) in one process agree on which session they are talking about.
type fileKey struct{ dev, ino uint64 }

// held tracks the leases this process holds. flock already refuses a second
// open file description in the same process, but the map makes the refusal
// explicit, names this process, and does not depend on flock semantics.
var held = struct {
	sync.Mutex
	m map[fileKey]bool
}{m: map[fileKey]bool{}}

func keyOf(f *os.File) (fileKey, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileKey{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, errors.New("lease file has no inode information")
	}
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// acquireLease takes the write lease of the session in dir. id only names
// the session in error messages.
func acquireLease(dir, id string) (*lease, error) {
	f, err := os.OpenFile(filepath.Join(dir, leaseFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, notFound(id)
		}
		return nil, fmt.Errorf("session %q: open lease: %w", id, err)
	}
	key, err := keyOf(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("session %q: lease: %w", id, err)
	}
	// Reserve the key, then lock without holding held's mutex: flockRetry
	// may sleep for a quarter second, and the mutex is process-wide, so
	// holding it would stall every other session's create, open and
	// close meanwhile. A concurrent attempt on the same session sees the
	// reservation and is refused, as it would be once the lease is taken.
	held.Lock()
	if held.m[key] {
		held.Unlock()
		f.Close()
		return nil, &wrapErr{
			msg: fmt.Sprintf("session %q is already open for writing in this process (pid %d)", id, os.Getpid()),
			err: ErrLeased,
		}
	}
	held.m[key] = true
	held.Unlock()
	if err := flockRetry(f, syscall.LOCK_EX); err != nil {
		held.Lock()
		delete(held.m, key)
		held.Unlock()
		pid := readPid(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &wrapErr{
				msg: fmt.Sprintf("session %q is open for writing in another process (pid %s)", id, pid),
				err: ErrLeased,
			}
		}
		return nil, fmt.Errorf("session %q: lock lease: %w", id, err)
	}
	// Record the holder for the error message of the next would-be writer.
	// Failing to write the pid is harmless to correctness, so it is ignored.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lease{f: f, key: key}, nil
}

// flockRetry tries a non-blocking flock for up to about a quarter second.
// A lock can be held for a moment by a process that is not a writer:
// Leased probes a lease by locking it for an instant, and a child forked by
// a writer that was just killed holds a copy of the lease descriptor until
// its exec closes it (the crash test saw this about once in a hundred
// kills). A real holder keeps its lock far longer, so real conflicts are
// still reported, a quarter second later at most.
func flockRetry(f *os.File, how int) error {
	var err error
	wait := time.Millisecond
	for attempt := 0; attempt < 9; attempt++ {
		if attempt > 0 {
			retryPause(wait)
			wait *= 2
		}
		for {
			err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
	}
	return err
}

// retryPause waits between flock attempts. It is a variable so a test can
// hold a lease attempt inside its retries and see what it blocks.
var retryPause = time.Sleep

func readPid(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid := strings.TrimSpace(string(buf[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "unknown"
	}
	return pid
}

// release frees the lease. Closing the descriptor drops the flock.
func (l *lease) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	held.Lock()
	delete(held.m, l.key)
	held.Unlock()
	err := l.f.Close()
	l.f = nil
	return err
}

// probeLease reports whether a live process holds the lease of dir. It takes
// a shared lock for an instant (flock has no "test" operation).
func probeLease(dir string) (bool, error) {
	f, err := os.Open(filepath.Join(dir, leaseFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // never leased since the file is made on first lease
		}
		return false, err
	}
	defer f.Close()
	key, err := keyOf(f)
	if err != nil {
		return false, err
	}
	held.Lock()
	mine := held.m[key]
	held.Unlock()
	if mine {
		return true, nil
	}
	err = flockRetry(f, syscall.LOCK_SH)
	switch {
	case err == nil:
		return false, nil // closing f drops the probe lock
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	default:
		return false, err
	}
}
