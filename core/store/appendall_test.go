package store

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// TestAppendAllOneWrite: AppendAll writes every record, in order, as one
// write, and a wrong seq anywhere in the batch writes none of them.
func TestAppendAllOneWrite(t *testing.T) {
	s := New(t.TempDir())
	l, err := s.Create(Header{ID: "pair", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mk := func(typ string, seq int64) event.Event {
		ev := event.New(typ, event.Step{Turn: 1, Step: 1})
		ev.Seq = seq
		return ev
	}
	bad := []event.Event{mk(event.TypeStepStart, 0), mk(event.TypeStepEnd, 5)}
	if err := l.AppendAll(bad...); !errors.Is(err, ErrSequence) {
		t.Fatalf("a batch with a wrong seq: %v", err)
	}
	if l.NextSeq() != 0 {
		t.Fatalf("next seq %d after a refused batch", l.NextSeq())
	}
	before := l.Syncs()
	if err := l.AppendAll(mk(event.TypeStepStart, 0), mk(event.TypeTurnEnd, 1), mk(event.TypeStepEnd, 2)); err != nil {
		t.Fatal(err)
	}
	if l.NextSeq() != 3 || l.Syncs() != before+1 {
		t.Fatalf("next seq %d, %d fsyncs for a batch with one commit point", l.NextSeq(), l.Syncs()-before)
	}
	data, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != 4 || !bytes.Contains(lines[1], []byte(`"seq":0`)) || !bytes.Contains(lines[3], []byte(`"seq":2`)) {
		t.Fatalf("log:\n%s", data)
	}
}
