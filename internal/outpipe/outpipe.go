// Package outpipe is the write side of a door's stdio: a writer that can be
// abandoned. A client that stops reading its end of a pipe leaves a write
// blocked in the kernel for as long as the client lives, and no deadline
// can be set on an ordinary stdout pipe; a door that waited for that write
// would never exit. So the bytes are written by a goroutine of their own,
// and Abandon lets every writer, blocked or not, return at once: the one
// write stuck in the kernel stays behind, bound to the process's exit.
package outpipe

import (
	"errors"
	"io"
	"sync"
	"time"
)

// ErrAbandoned is returned by writes after Abandon.
var ErrAbandoned = errors.New("output abandoned: the client is not reading")

// Writer serialises writes to w and can be abandoned.
type Writer struct {
	w    io.Writer
	sem  chan struct{} // one write at a time
	reqs chan []byte
	res  chan result
	gone chan struct{} // closed by Abandon
	once sync.Once
	// stopped is closed when the writing goroutine has returned (it does
	// not while a write is stuck in the kernel).
	stopped chan struct{}
}

type result struct {
	n   int
	err error
}

// New returns a writer over w and starts its goroutine; Abandon ends it.
func New(w io.Writer) *Writer {
	p := &Writer{w: w, sem: make(chan struct{}, 1), reqs: make(chan []byte), res: make(chan result, 1),
		gone: make(chan struct{}), stopped: make(chan struct{})}
	go p.run()
	return p
}

func (p *Writer) run() {
	defer close(p.stopped)
	for {
		select {
		case b := <-p.reqs:
			n, err := p.w.Write(b)
			p.res <- result{n, err}
		case <-p.gone:
			return
		}
	}
}

// Write writes b whole, or returns ErrAbandoned once Abandon was called,
// whether or not the bytes reached the client. The caller may reuse b when
// it returns.
func (p *Writer) Write(b []byte) (int, error) {
	select {
	case p.sem <- struct{}{}:
	case <-p.gone:
		return 0, ErrAbandoned
	}
	defer func() { <-p.sem }()
	// The writing goroutine may outlive this call (abandoned mid-write):
	// it writes its own copy.
	buf := append([]byte(nil), b...)
	select {
	case p.reqs <- buf:
	case <-p.gone:
		return 0, ErrAbandoned
	}
	select {
	case r := <-p.res:
		return r.n, r.err
	case <-p.gone:
		return 0, ErrAbandoned
	}
}

// Abandon makes every write in progress and every later one return
// ErrAbandoned. Where the underlying writer supports a write deadline (a
// socket, a non-blocking pipe) the write stuck in progress is ended too.
func (p *Writer) Abandon() {
	p.once.Do(func() {
		close(p.gone)
		if d, ok := p.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
			_ = d.SetWriteDeadline(time.Now())
		}
	})
}

// Stopped is closed once the writing goroutine has returned: after Abandon,
// unless a write is still stuck in the kernel.
func (p *Writer) Stopped() <-chan struct{} { return p.stopped }
