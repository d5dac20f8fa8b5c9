package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// TestCommitDoesNotWaitForSubscribers: a subscriber that never reads does
// not hold up a session's turns (a commit used to wait for every
// subscriber to take its event, so 300 events stalled the turn for good).
func TestCommitDoesNotWaitForSubscribers(t *testing.T) {
	var steps []stepFunc
	for i := 0; i < 150; i++ {
		steps = append(steps, text(fmt.Sprint(i)))
	}
	h := newHarness(t, steps...)
	stalled := h.rt.Subscribe() // never read
	defer stalled.Close()
	s := h.session()
	for i := 0; i < 150; i++ {
		if res := run(t, s, "go"); res.Reason.Kind != event.ReasonCompleted {
			t.Fatalf("turn %d: %+v", i, res.Reason)
		}
	}
	// What the stalled subscriber has not read is still there for it, in
	// order, from the session's history.
	ctx := context.Background()
	prev := int64(-1)
	for prev < s.LastSeq() {
		n, err := stalled.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Kind != NoticeEvent || n.SessionID != s.ID() {
			continue
		}
		if n.Event.Seq != prev+1 {
			t.Fatalf("event %d after %d", n.Event.Seq, prev)
		}
		prev = n.Event.Seq
	}
}

// TestCursorReadsEveryEventOnceAcrossACheckpoint: a cursor that fell
// behind a compaction checkpoint reads the events before it from the log,
// then the history, each once and in order, then waits; after Close it
// ends with ErrClosed.
func TestCursorReadsEveryEventOnceAcrossACheckpoint(t *testing.T) {
	h := newHarness(t, text("one"), text("two"), text("summary"), text("three"))
	s := h.session()
	run(t, s, "a")
	run(t, s, "b")
	cur := s.Follow(-1)
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	run(t, s, "c")
	if first := s.Events()[0]; first.Seq == 0 || first.Type != event.TypeCompactionCheckpoint {
		t.Fatalf("history starts at %d %s, not at a checkpoint", first.Seq, first.Type)
	}
	want := s.LastSeq()
	next := int64(0)
	for next <= want {
		evs, wait, err := cur.Read(3)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			t.Fatalf("cursor waits at %d of %d (%v)", next, want, wait)
		}
		for _, ev := range evs {
			if ev.Seq != next {
				t.Fatalf("read %d, want %d", ev.Seq, next)
			}
			next++
		}
	}
	evs, wait, err := cur.Read(10)
	if len(evs) != 0 || wait == nil || err != nil {
		t.Fatalf("at the end: %d events, wait %v, err %v", len(evs), wait, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-wait // the close wakes a waiting reader
	if _, _, err := cur.Read(10); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// TestSkipStreamCursorReadsCommittedOnly: a replay's cursor (SkipStream)
// reads every committed event once and in order, behind a checkpoint (from
// the log, without the chunks) and after it (from memory), and none of the
// live stream; a plain cursor reads the chunks too.
func TestSkipStreamCursorReadsCommittedOnly(t *testing.T) {
	h := newHarness(t, text("one"), text("two"), text("summary"), text("three"))
	s := h.session()
	run(t, s, "a")
	run(t, s, "b")
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	run(t, s, "c")
	_, all, err := h.rt.cfg.Store.Read(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	var want, chunks []int64
	for _, ev := range all {
		if ev.Type == event.TypeAssistantChunk {
			chunks = append(chunks, ev.Seq)
		} else {
			want = append(want, ev.Seq)
		}
	}
	if len(chunks) == 0 || chunks[0] > s.Events()[0].Seq {
		t.Fatalf("the fixture has no chunk before its checkpoint (chunks %v, checkpoint %d)", chunks, s.Events()[0].Seq)
	}
	for _, tc := range []struct {
		cur  *Cursor
		want int
	}{{s.Follow(-1).SkipStream(), len(want)}, {s.Follow(-1), len(all)}} {
		var got []int64
		for {
			evs, _, err := tc.cur.Read(3)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				got = append(got, ev.Seq)
			}
		}
		if len(got) != tc.want || !slices.IsSorted(got) {
			t.Fatalf("read %d events (%v), want %d in order", len(got), got, tc.want)
		}
		if tc.want == len(want) && !slices.Equal(got, want) {
			t.Fatalf("skip-stream cursor read %v, want the committed %v", got, want)
		}
	}
}
