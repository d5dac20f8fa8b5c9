package headless

import (
	"os"
	"syscall"
	"unsafe"
)

// isTerminal asks the tty driver (TCGETS succeeds only on a terminal), so
// /dev/null and other character devices read as piped input.
func isTerminal(f *os.File) bool {
	if !isCharDevice(f) {
		return false // files and pipes: no syscall needed
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var errno syscall.Errno
	ctlErr := rc.Control(func(fd uintptr) {
		var t syscall.Termios
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(syscall.TCGETS), uintptr(unsafe.Pointer(&t)))
	})
	return ctlErr == nil && errno == 0
}
