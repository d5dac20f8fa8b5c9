//go:build unix

package snapshot

import (
	"errors"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// folder is an open workspace folder. Its files are looked at relative to
// it (fstatat, openat, readlinkat): the kernel resolves one name instead of
// the whole path, which is most of what an lstat costs, and a folder
// swapped for a symlink after the walk listed it is not followed.
type folder struct {
	fd   int
	path string // absolute, for messages
}

func openFolder(path string) (*folder, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &folder{fd: fd, path: path}, nil
}

func (d *folder) close() { unix.Close(d.fd) }

// stat is the lstat of name in d as a cache entry (no hash yet). ok is
// false for a name that is gone or is neither a file nor a symlink.
func (d *folder) stat(name string) (ce cacheEntry, ok bool) {
	var st unix.Stat_t
	if _, err := retryEINTR(func() (int, error) {
		return 0, unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil {
		return cacheEntry{}, false
	}
	mode := fs.FileMode(st.Mode & 0o777) // fs.ModePerm: setuid, setgid and sticky are not kept
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	default:
		return cacheEntry{}, false
	}
	return cacheEntry{Size: st.Size, MtimeNs: st.Mtim.Nano(), Ino: uint64(st.Ino), Mode: mode}, true
}

// readFile reads the regular file name in d, size its size at the stat. A
// name that became a symlink since is not followed, nor is one that became
// a FIFO or a device read (errors).
func (d *folder) readFile(name string, size int64) ([]byte, error) {
	path := filepath.Join(d.path, name)
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("no longer a regular file")}
	}
	data := make([]byte, 0, size+1) // +1: the read that finds the end needs no new buffer
	for {
		n, err := retryEINTR(func() (int, error) { return unix.Read(fd, data[len(data):cap(data)]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return data, nil
		}
		data = data[:len(data)+n]
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // it grew since the stat
		}
	}
}

// readLink returns the target of the symlink name in d.
func (d *folder) readLink(name string, size int64) (string, error) {
	for n := max(size, 128) + 1; ; n *= 2 {
		buf := make([]byte, n)
		got, err := retryEINTR(func() (int, error) { return unix.Readlinkat(d.fd, name, buf) })
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: filepath.Join(d.path, name), Err: err}
		}
		if int64(got) < n {
			return string(buf[:got]), nil
		}
	}
}

// retryEINTR calls f again while a signal interrupts it, as package os
// does for its own system calls.
func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}
