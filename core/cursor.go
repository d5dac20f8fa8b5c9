package core

import (
	"context"
	"fmt"
	"sort"

	"github.com/dsh-dev/dsh/core/event"
)

// A session's committed history is the queue its readers share: a reader
// holds a Cursor ("the events after seq N"), reads at its own pace and
// waits on the session when it has read everything. Nothing is pushed to a
// reader, so a commit never waits for one, and a reader that falls behind
// costs no memory beyond the history the session keeps anyway (bounded by
// compaction); one that falls behind a compaction checkpoint reads the
// events before it from the log.

// Cursor reads a session's committed events in seq order, each once.
type Cursor struct {
	s     *Session
	after int64
	// backlog holds the events read from the log that the session's
	// in-memory history no longer has (before its last checkpoint).
	backlog []event.Event
	// committed leaves the live stream out (SkipStream).
	committed bool
}

// Follow returns a cursor positioned after seq (-1: from the first event).
func (s *Session) Follow(after int64) *Cursor { return &Cursor{s: s, after: after} }

// SkipStream makes c read committed events only, without the live stream
// (assistant/chunk): a replay, which shows committed messages, reads the
// part of the log behind a checkpoint without decoding the chunks in it
// (store.ReadCommitted). It returns c.
func (c *Cursor) SkipStream() *Cursor {
	c.committed = true
	return c
}

// After is the seq of the last event the cursor returned (or its start).
func (c *Cursor) After() int64 { return c.after }

// Session is the session the cursor reads.
func (c *Cursor) Session() *Session { return c.s }

// Read returns up to max events after the cursor and moves past them. When
// there are none it returns a channel that is closed once another event is
// committed or the session is closed; after the session has closed and its
// last event was read it returns ErrClosed.
func (c *Cursor) Read(max int) ([]event.Event, <-chan struct{}, error) {
	if max <= 0 {
		max = 1
	}
	if len(c.backlog) > 0 {
		return c.take(max), nil, nil
	}
	s := c.s
	s.commitMu.Lock()
	h := s.history
	if len(h) > 0 && c.after+1 < h[0].Seq {
		s.commitMu.Unlock()
		if err := c.readLog(h[0].Seq); err != nil {
			return nil, nil, err
		}
		if len(c.backlog) == 0 { // only chunks were behind the checkpoint
			c.after = h[0].Seq - 1
			return c.Read(max)
		}
		return c.take(max), nil, nil
	}
	// History is in seq order but may have gaps: a woken session's history
	// leaves out the live stream it read past (store.ReadCommitted).
	i := sort.Search(len(h), func(i int) bool { return h[i].Seq > c.after })
	if out := c.copyFrom(h[i:], max); len(out) > 0 {
		s.commitMu.Unlock()
		return out, nil, nil
	}
	newer, final := s.newerLocked(), s.final
	s.commitMu.Unlock()
	if final {
		return nil, nil, fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	return nil, newer, nil
}

// copyFrom copies up to max events of h (the history after the cursor)
// and moves the cursor past them, and past the chunks it skips. Called
// with commitMu held.
func (c *Cursor) copyFrom(h []event.Event, max int) []event.Event {
	if !c.committed {
		n := min(len(h), max)
		if n == 0 {
			return nil
		}
		out := make([]event.Event, n)
		copy(out, h[:n])
		c.after = out[n-1].Seq
		return out
	}
	var out []event.Event
	for _, ev := range h {
		if len(out) == max {
			break
		}
		c.after = ev.Seq
		if ev.Type != event.TypeAssistantChunk {
			out = append(out, ev)
		}
	}
	return out
}

// Next waits for events after the cursor and returns up to max of them.
func (c *Cursor) Next(ctx context.Context, max int) ([]event.Event, error) {
	for {
		evs, wait, err := c.Read(max)
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *Cursor) take(max int) []event.Event {
	n := min(len(c.backlog), max)
	out := c.backlog[:n:n]
	c.backlog = c.backlog[n:]
	if len(c.backlog) == 0 {
		c.backlog = nil
	}
	c.after = out[n-1].Seq
	return out
}

// readLog loads the events after the cursor and before seq until from the
// session's log: the reader fell behind a checkpoint. It reads them all,
// the live stream included, as a follower would have seen them (a reader
// lags, it loses nothing), unless the cursor skips the stream.
func (c *Cursor) readLog(until int64) error {
	read := c.s.rt.cfg.Store.Read
	if c.committed {
		read = c.s.rt.cfg.Store.ReadCommitted
	}
	_, all, err := read(c.s.id)
	if err != nil {
		return fmt.Errorf("session %s: read the log behind its checkpoint: %w", c.s.id, err)
	}
	if len(all) == 0 || all[len(all)-1].Seq < until-1 || c.after < -1 {
		return fmt.Errorf("session %s: the log ends before seq %d, where its checkpoint is", c.s.id, until)
	}
	lo := sort.Search(len(all), func(i int) bool { return all[i].Seq > c.after })
	hi := sort.Search(len(all), func(i int) bool { return all[i].Seq >= until })
	c.backlog = all[lo:hi:hi]
	return nil
}

// newerLocked returns the channel the next commit closes. Called with
// commitMu held.
func (s *Session) newerLocked() <-chan struct{} {
	if s.newer == nil {
		s.newer = make(chan struct{})
	}
	return s.newer
}

// committedLocked wakes the cursors waiting for an event. Called with
// commitMu held, after the events are in history.
func (s *Session) committedLocked() {
	if s.newer != nil {
		close(s.newer)
		s.newer = nil
	}
}

// LastSeq is the seq of the session's last committed event (-1: none).
func (s *Session) LastSeq() int64 {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.lg.NextSeq() - 1
}

// finish marks the history complete (the session closed): cursors that
// have read it all get ErrClosed.
func (s *Session) finish() {
	s.commitMu.Lock()
	s.final = true
	s.committedLocked()
	s.commitMu.Unlock()
}
