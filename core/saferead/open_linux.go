package saferead

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openNoLinks opens real (already resolved) for reading so that no
// component may be a link now (openat2; on a kernel without it, only the
// last component is checked), and without blocking on a FIFO.
func openNoLinks(real string) (*os.File, error) {
	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, real, how)
	for errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
		fd, err = unix.Openat2(unix.AT_FDCWD, real, how)
	}
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), real), nil
	case errors.Is(err, unix.ENOSYS):
		return os.OpenFile(real, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY, 0)
	}
	return nil, &os.PathError{Op: "open", Path: real, Err: err}
}
