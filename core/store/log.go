package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/dsh-dev/dsh/core/event"
)

// queueLen bounds the records waiting for the writer. A full queue blocks
// Append: a slow disk slows the session instead of growing memory.
const queueLen = 128

// maxBatch caps how many queued records share one fsync.
const maxBatch = 256

// Log is an open session log holding the write lease. All writes go through
// one goroutine that drains a queue, writes each record with one write(2)
// on an O_APPEND descriptor, and fsyncs once per batch that holds a commit
// point (group commit), so concurrent appenders share fsyncs.
type Log struct {
	header Header
	dir    string
	path   string

	mu     sync.Mutex // guards next, closed and sends on reqs
	next   int64
	closed bool
	reqs   chan request

	f     *os.File
	lease *lease
	done  chan struct{} // closed when the writer goroutine has exited

	// failed is the first write or fsync error. After it the file's tail is
	// unknown, so every later request fails with it (the session must be
	// reopened, which repairs the tail).
	failed error // owned by the writer goroutine

	closeOnce sync.Once
	closeErr  error

	noSync bool // benchmarks only: see Store.WithoutSync

	syncs atomic.Int64 // fsyncs issued by the writer, for tests and benchmarks
}

// request is one unit of work for the writer: a record to write, or (rec
// nil) a barrier that fsyncs everything before it.
type request struct {
	rec  []byte
	sync bool
	done chan error
}

func newLog(h Header, dir string, f *os.File, ls *lease, next int64, noSync bool) *Log {
	l := &Log{
		header: h,
		dir:    dir,
		path:   f.Name(),
		next:   next,
		reqs:   make(chan request, queueLen),
		f:      f,
		lease:  ls,
		done:   make(chan struct{}),
		noSync: noSync,
	}
	go l.writer()
	return l
}

// Header returns the session header.
func (l *Log) Header() Header { return l.header }

// Dir returns the session directory (attachments live beside the log).
func (l *Log) Dir() string { return l.dir }

// NextSeq returns the seq the next Append must carry.
func (l *Log) NextSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Append writes ev as one line. ev.Seq must equal NextSeq, else ErrSequence
// and nothing is written. It returns once the line is written, and fsynced
// if ev's type is a commit point, so the caller may publish ev afterwards.
// A write or fsync failure is sticky: every later call fails too.
func (l *Log) Append(ev event.Event) error { return l.AppendAll(ev) }

// AppendAll writes evs, whose seqs must run on from NextSeq, with one
// write(2): a process that dies (even by SIGKILL, which the kernel delivers
// only once the call returns) leaves all of them in the file or none, so
// facts that belong together — an assistant message and the tool calls it
// made — are never split by a crash. It returns once they are written, and
// fsynced if any is a commit point. Nothing is written if one is invalid.
func (l *Log) AppendAll(evs ...event.Event) error {
	var rec []byte
	sync := false
	for _, ev := range evs {
		if ev.Type == "" {
			return errors.New("store: append: event has no type")
		}
		if !event.Known(ev.Type) && !ev.Ignorable {
			// Readers refuse such a log, so never write one.
			return fmt.Errorf("store: append: unknown event type %q must be marked ignorable", ev.Type)
		}
		b, err := encodeRecord(ev)
		if err != nil {
			return fmt.Errorf("store: append %s (seq %d): %w", ev.Type, ev.Seq, err)
		}
		if rec == nil {
			rec = b
		} else {
			rec = append(rec, b...)
		}
		sync = sync || event.CommitPoint(ev.Type)
	}
	if len(evs) == 0 {
		return nil
	}
	done := make(chan error, 1)

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	for i, ev := range evs {
		if want := l.next + int64(i); ev.Seq != want {
			l.mu.Unlock()
			return &wrapErr{
				msg: fmt.Sprintf("store: append %s: seq %d is not the next seq %d", ev.Type, ev.Seq, want),
				err: ErrSequence,
			}
		}
	}
	l.next += int64(len(evs))
	// Sent under mu so records reach the writer in seq order and never
	// after Close has closed the queue.
	l.reqs <- request{rec: rec, sync: sync, done: done}
	l.mu.Unlock()
	return <-done
}

// encodeRecord marshals ev as one JSON line.
// encodeRecord encodes one log line. The event's data is copied verbatim
// (event.AppendJSON): it was marshalled once when the event was made, and
// re-compacting it here cost as much as making it.
func encodeRecord(ev event.Event) ([]byte, error) {
	b, err := ev.AppendJSON(make([]byte, 0, len(ev.Data)+96))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Syncs returns how many group-commit fsyncs the writer has issued: what
// shows that records which are not commit points (assistant/chunk) cost
// no fsync of their own.
func (l *Log) Syncs() int64 { return l.syncs.Load() }

// Sync fsyncs everything appended so far.
func (l *Log) Sync() error {
	done := make(chan error, 1)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.reqs <- request{sync: true, done: done}
	l.mu.Unlock()
	return <-done
}

// Close drains the queue, fsyncs, stops the writer and releases the lease.
// It is idempotent; later calls return the first call's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.reqs)
		l.mu.Unlock()
		<-l.done
		var errs []error
		if l.failed != nil {
			errs = append(errs, l.failed)
		} else if err := l.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("store: fsync %s: %w", l.path, err))
		}
		if err := l.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: close %s: %w", l.path, err))
		}
		if err := l.lease.release(); err != nil {
			errs = append(errs, fmt.Errorf("store: release lease of %s: %w", l.dir, err))
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// writer is the one goroutine that touches the file while the log is open.
func (l *Log) writer() {
	defer close(l.done)
	batch := make([]request, 0, maxBatch)
	for first := range l.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-l.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		l.commit(batch)
	}
}

// commit writes a batch, fsyncs once if any request needs it, then answers
// every request of the batch.
func (l *Log) commit(batch []request) {
	needSync := false
	for _, r := range batch {
		if l.failed != nil {
			break
		}
		if r.rec != nil {
			// os.File.Write issues one write(2) for a regular file unless
			// the kernel writes short, when it continues where it stopped.
			if _, err := l.f.Write(r.rec); err != nil {
				l.failed = fmt.Errorf("store: write %s: %w", l.path, err)
				break
			}
		}
		needSync = needSync || r.sync
	}
	if l.failed == nil && needSync && !l.noSync {
		l.syncs.Add(1)
		if err := l.f.Sync(); err != nil {
			l.failed = fmt.Errorf("store: fsync %s: %w", l.path, err)
		}
	}
	for _, r := range batch {
		r.done <- l.failed
	}
}
