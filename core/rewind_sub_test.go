package core

import (
	"context"
	"testing"
	"time"
)

func TestRewindEventsReachSubscribers(t *testing.T) {
	h := newHarness(t, text("one"), text("two"))
	s := h.session()
	run(t, s, "first")
	run(t, s, "second")
	sub := h.rt.Subscribe()
	defer sub.Close()
	res, err := s.Rewind(context.Background(), RewindRequest{Turn: 2})
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case n := <-sub.C():
			t.Logf("notice %v %s %d", n.Kind, n.Event.Type, n.Event.Seq)
			if n.Kind == NoticeEvent && n.Event.Seq == res.LastSeq {
				return
			}
		case <-timeout:
			t.Fatalf("the rewind's events (up to seq %d) never reached the subscriber", res.LastSeq)
		}
	}
}
