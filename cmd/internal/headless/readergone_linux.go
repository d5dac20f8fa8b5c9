package headless

import (
	"os"

	"golang.org/x/sys/unix"
)

// watchReaderGone calls gone once when the reader of the pipe w goes away
// (Linux marks a pipe's write end POLLERR when its last reader closes), so
// a run whose stdout reader left (`dsh run --json … | head -1`) stops while
// a tool runs, not at its next write. stop ends the watch; it returns once
// the watching goroutine has. A w that is not a pipe is not watched.
func watchReaderGone(w *os.File, gone func()) (stop func()) {
	fi, err := w.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return func() {}
	}
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC); err != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fds := []unix.PollFd{{Fd: int32(w.Fd()), Events: 0}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err == nil && fds[1].Revents == 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				gone()
			}
			return
		}
	}()
	return func() {
		_, _ = unix.Write(wake[1], []byte{0})
		<-done
		_ = unix.Close(wake[0])
		_ = unix.Close(wake[1])
	}
}
