package core

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
)

// dirsEvents returns the additional-directory sets the session's log
// records, in order.
func dirsEvents(t *testing.T, evs []event.Event) [][]string {
	t.Helper()
	var out [][]string
	for _, ev := range evs {
		if ev.Type != event.TypeSessionDirs {
			continue
		}
		d, err := event.Decode[event.SessionDirs](ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.AdditionalDirectories)
	}
	return out
}

// writeUnder asks s's gate about a write of a file in dir.
func writeUnder(s *Session, dir string) permission.Decision {
	return s.Decide(context.Background(), permission.Request{Tool: "write", Kind: "mutate", Write: true,
		Paths: []string{filepath.Join(dir, "x.txt")}})
}

// The additional workspace roots are a fact of the session: recorded when
// they are set, again only when they change, and in force again after a
// resume in another process (from the log, and from a checkpoint that
// left the event behind).
func TestAdditionalDirsRecordedAndRestored(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	h := newScriptedHarness(t, `{"repeat":"last","steps":[{"text":"ok"}],"summary":{"text":"S"}}`, 0,
		func(c *Config) { c.PermissionMode = permission.ModeAuto })
	ctx := context.Background()
	s, err := h.rt.Create(ctx, SessionOptions{Cwd: h.cwd, AdditionalDirs: []string{one}})
	if err != nil {
		t.Fatal(err)
	}
	if d := writeUnder(s, one); !d.Allow {
		t.Fatalf("write under the root: %+v", d)
	}
	if err := s.SetAdditionalDirs([]string{one}); err != nil {
		t.Fatal(err)
	}
	if got := dirsEvents(t, s.Events()); len(got) != 1 || !slices.Equal(got[0], []string{one}) {
		t.Fatalf("recorded %q, want one set [%s]", got, one)
	}
	if err := s.SetAdditionalDirs([]string{"relative"}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("relative root: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	s2, err := h.open().Resume(ctx, s.ID(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.AdditionalDirs(); !slices.Equal(got, []string{one}) {
		t.Fatalf("resumed with %q, want [%s]", got, one)
	}
	if d := writeUnder(s2, one); !d.Allow {
		t.Fatalf("write under the restored root: %+v", d)
	}
	if err := s2.SetAdditionalDirs([]string{two}); err != nil {
		t.Fatal(err)
	}
	if d := writeUnder(s2, one); d.Allow {
		t.Fatalf("write under the replaced root allowed: %+v", d)
	}
	run(t, s2, "something to compact")
	if _, err := s2.Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}

	s3, err := h.open().Resume(ctx, s.ID(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if evs := s3.Events(); evs[0].Type != event.TypeCompactionCheckpoint {
		t.Fatalf("resume started at %s, want the checkpoint", evs[0].Type)
	}
	if got := s3.AdditionalDirs(); !slices.Equal(got, []string{two}) {
		t.Fatalf("resumed from the checkpoint with %q, want [%s]", got, two)
	}
	infos, err := h.rt.Store().List(h.cwd)
	if err != nil || len(infos) != 1 || !slices.Equal(infos[0].AdditionalDirs, []string{two}) {
		t.Fatalf("listed %+v %v, want the session with [%s]", infos, err, two)
	}
}
