package saferead

import (
	"fmt"
	"time"
)

// ErrTooLarge is returned by ReadWhole for a file over its bound.
var ErrTooLarge = fmt.Errorf("too large")

// ReadWhole reads a file the user named (the config file, a state file)
// whole: a regular file only (a FIFO or /dev/zero is refused, not waited
// on or read forever), at most max bytes (a larger file is an error, not
// cut), within timeout (a file on a stuck network mount). Links are
// followed anywhere: the user named the file.
//
// A read still blocked at the deadline is abandoned to finish in the
// background; the caller gets the error at once.
func ReadWhole(path string, max int64, timeout time.Duration) ([]byte, error) {
	type result struct {
		f   File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := Policy{Roots: []string{"/"}, Max: max + 1}.Read(path)
		done <- result{f, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		if int64(len(r.f.Data)) > max {
			return nil, fmt.Errorf("read %s: %w (%d bytes, the limit is %d)", path, ErrTooLarge, r.f.Size, max)
		}
		return r.f.Data, nil
	case <-t.C:
		return nil, fmt.Errorf("read %s: no answer within %s", path, timeout)
	}
}
