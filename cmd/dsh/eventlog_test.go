package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

// What was published before the logger's subscription closed is logged:
// the run loop drains the queue on Done instead of racing it (the last
// turn's "turn end" was lost at shutdown).
func TestEventLogDrainsAtClose(t *testing.T) {
	rt, err := core.New(core.Config{Store: store.New(t.TempDir()), Defaults: event.Config{Provider: "scripted", Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	s, err := rt.Create(context.Background(), core.SessionOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	l := &eventLogger{log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})),
		sub: rt.Subscribe(), done: make(chan struct{}), steps: map[string]time.Time{}, calls: map[string]time.Time{}}
	const turns = 50
	for i := 1; i <= turns; i++ {
		if err := s.Record(event.New(event.TypeTurnEnd, event.TurnEnd{Turn: i, Reason: event.TurnEndReason{Kind: event.ReasonCompleted}})); err != nil {
			t.Fatal(err)
		}
	}
	l.sub.Drain()
	l.run()
	if n := strings.Count(out.String(), `msg="turn end"`); n != turns {
		t.Fatalf("%d of %d turn ends logged", n, turns)
	}
}
