//go:build !linux

package saferead

import (
	"os"
	"syscall"
)

// openNoLinks opens real without following a link in its last component
// and without blocking on a FIFO.
func openNoLinks(real string) (*os.File, error) {
	return os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
