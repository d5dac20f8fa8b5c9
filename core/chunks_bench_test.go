package core

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// BenchmarkChunkStream records one step that streams n text deltas, with
// the real store (fsync on). It reports chunk-events/s (the runtime's cost
// of recording and publishing the live stream) and fsyncs/step, which must
// be the same for every n: chunks are appended without an fsync of their
// own (issue 18).
//
//	go test -run XXX -bench ChunkStream ./core/
func BenchmarkChunkStream(b *testing.B) {
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("deltas-%d", n), func(b *testing.B) {
			pieces := strings.Split(strings.Repeat("x", n), "")
			if n == 0 {
				pieces = nil
			}
			p := &streamProvider{}
			rt, err := New(Config{Store: store.New(b.TempDir()), NewProvider: func(string) (model.Provider, error) { return p, nil },
				Defaults: event.Config{Provider: "test", Model: "m"}, PermissionMode: permission.ModeFull, Tools: tool.Builtins()})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close(context.Background())
			s, err := rt.Create(context.Background(), SessionOptions{Cwd: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			var syncs, chunks int64
			b.ResetTimer()
			for range b.N {
				p.steps = append(p.steps[:0], streamed(nil, append([]string{"a"}, pieces...)))
				before, seq := s.lg.Syncs(), s.lg.NextSeq()
				tk, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("go")})
				if err != nil {
					b.Fatal(err)
				}
				<-tk.Done()
				syncs += s.lg.Syncs() - before
				chunks += int64(countChunks(s, seq))
			}
			b.StopTimer()
			b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/step")
			b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunk-events/s")
			p.reqs = nil
		})
	}
}

func countChunks(s *Session, from int64) int {
	n := 0
	for _, ev := range s.Events()[from:] {
		if ev.Type == event.TypeAssistantChunk {
			n++
		}
	}
	return n
}
