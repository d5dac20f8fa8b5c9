package headless

import (
	"errors"
	"io"
	"sync"
	"syscall"
)

// ExitStdoutClosed is the exit status of a run whose reader closed stdout
// (`dsh run … | head -1`): what a shell reports for a filter SIGPIPE ended
// (128+13). dsh ignores SIGPIPE so that it can cancel the turn and close
// the session log first; it then exits as the filter would have.
const ExitStdoutClosed = 141

// errStdoutClosed is every write after the reader went away.
var errStdoutClosed = errors.New("stdout was closed by its reader")

// stdoutWatch is a run's stdout. The first write that fails because the
// reader went away (EPIPE) marks it closed and calls onClose once (the run
// cancels its turn); later writes fail at once with errStdoutClosed. So a
// closed pipe ends the run quietly instead of a warning per event.
type stdoutWatch struct {
	w io.Writer

	mu      sync.Mutex
	closed  bool
	onClose func()
}

func (s *stdoutWatch) Write(p []byte) (int, error) {
	if s.Closed() {
		return 0, errStdoutClosed
	}
	n, err := s.w.Write(p)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		s.readerGone()
	}
	return n, err
}

// readerGone marks the stdout closed as a failed write would: the pipe's
// reader went away while nothing was being written.
func (s *stdoutWatch) readerGone() {
	s.mu.Lock()
	first, fn := !s.closed, s.onClose
	s.closed = true
	s.mu.Unlock()
	if first && fn != nil {
		fn()
	}
}

// Closed reports whether the reader has gone away.
func (s *stdoutWatch) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// OnClose sets what a closed stdout does from now on; if it is already
// closed, fn runs at once.
func (s *stdoutWatch) OnClose(fn func()) {
	s.mu.Lock()
	s.onClose = fn
	closed := s.closed
	s.mu.Unlock()
	if closed {
		fn()
	}
}

// isClosedStdout reports whether err is a write to a stdout its reader closed.
func isClosedStdout(err error) bool {
	return errors.Is(err, errStdoutClosed) || errors.Is(err, syscall.EPIPE)
}
