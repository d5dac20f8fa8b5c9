package store

import (
	"errors"
	"os"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// BenchmarkAppend measures one Append of a ~300-byte event: nosync uses a
// type that is not a commit point (write only), fsync one that is (write +
// fsync per call), and fsync-parallel has concurrent appenders share
// fsyncs through group commit.
func BenchmarkAppend(b *testing.B) {
	payload := event.Message{ID: "m", Role: "user", Content: []event.ContentBlock{event.Text(string(make([]byte, 200)))}}
	run := func(b *testing.B, typ string, parallel bool) {
		s := New(b.TempDir())
		l, err := s.Create(Header{ID: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		ev := event.New(typ, payload)
		rec, _ := encodeRecord(ev)
		b.SetBytes(int64(len(rec)))
		b.ResetTimer()
		if !parallel {
			for i := 0; i < b.N; i++ {
				ev.Seq = int64(i)
				if err := l.Append(ev); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			ev := ev
			for pb.Next() {
				for {
					ev.Seq = l.NextSeq()
					err := l.Append(ev)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrSequence) {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	b.Run("nosync", func(b *testing.B) { run(b, event.TypeStepStart, false) })
	b.Run("fsync", func(b *testing.B) { run(b, event.TypeUserMessage, false) })
	b.Run("fsync-parallel", func(b *testing.B) { run(b, event.TypeUserMessage, true) })
}

// BenchmarkReplay10k measures Read of a 10,000-event session of realistic
// turns (~4.7 MB). Target: under 50 ms on a 2-core machine.
func BenchmarkReplay10k(b *testing.B) {
	// 909 whole turns of 11 events plus a title after the first prompt,
	// where titles usually are (so List scans the whole file for it).
	turns := sessionEvents(909 * 11)
	evs := append(append(append([]event.Event{}, turns[:3]...),
		event.New(event.TypeSessionTitle, event.SessionTitle{Title: "t"})), turns[3:]...)
	evs = seqd(0, evs...)
	if len(evs) != 10_000 {
		b.Fatalf("%d events", len(evs))
	}
	s, path := createWith(b, "replay", evs)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Read", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for i := 0; i < b.N; i++ {
			_, got, err := s.Read("replay")
			if err != nil || len(got) < 10_000 {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("Open", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for i := 0; i < b.N; i++ {
			l, got, err := s.Open("replay")
			if err != nil || len(got) < 10_000 {
				b.Fatal(len(got), err)
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("List", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if infos, err := s.List(""); err != nil || len(infos) != 1 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReplayStreamed measures reading a session whose model calls
// streamed (about 100 chunk lines per turn, 20,000 events in all): Read
// decodes every line, ReadCommitted and Open (a wake) skip the chunks.
func BenchmarkReplayStreamed(b *testing.B) {
	var evs []event.Event
	for turn := 1; len(evs) < 20_000; turn++ {
		evs = append(evs, streamedTurn(turn, int64(len(evs)), 45)...)
	}
	s, path := createWith(b, "streamed", evs)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Read", func(b *testing.B) {
		b.SetBytes(fi.Size())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, got, err := s.Read("streamed"); err != nil || len(got) != len(evs) {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("ReadCommitted", func(b *testing.B) {
		b.SetBytes(fi.Size())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, err := s.ReadCommitted("streamed"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Open", func(b *testing.B) {
		b.SetBytes(fi.Size())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			l, _, err := s.Open("streamed")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
