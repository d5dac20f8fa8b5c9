package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// readingProvider answers like a model that reads a file, then reports,
// forever, under a 128k-token window; summary calls get a short summary.
// It records the size of the last request.
type readingProvider struct {
	n        atomic.Int64
	reqBytes atomic.Int64
}

func (p *readingProvider) Name() string { return "test" }
func (p *readingProvider) Caps(string) model.Caps {
	return model.Caps{ContextWindow: 128_000, DefaultMaxTokens: 8192}
}
func (p *readingProvider) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	size := 0
	for _, m := range req.Messages {
		size += len(m.Content) + len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			size += len(tc.Arguments) + len(tc.Name)
		}
	}
	usage := &event.Usage{InputTokens: int64(size / 4), OutputTokens: 20}
	if req.Summary {
		return &model.Response{Text: "Summary: the user reads data.txt each turn; it was read.", FinishReason: "stop", Usage: usage}, nil
	}
	p.reqBytes.Store(int64(size))
	n := p.n.Add(1)
	if n%2 == 0 {
		return &model.Response{Reasoning: "report", Text: "read", FinishReason: "stop", Usage: usage}, nil
	}
	return &model.Response{Reasoning: "read it", FinishReason: "tool_calls", Usage: usage,
		ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("c%d", n), Name: "read", Arguments: `{"file_path":"data.txt"}`}}}, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkContextStep measures the harness's CPU per step and the request
// size when a session holds 100, 1,000 and 10,000 events of history under
// a 128k-token window: each turn reads a 4 KB file and answers, so the
// history would grow without bound, and compaction keeps it within the
// window. Every op resumes the same log and runs one turn (two steps);
// only the turn is timed. fsync is excluded.
func BenchmarkContextStep(b *testing.B) {
	for _, events := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			root, cwd := b.TempDir(), b.TempDir()
			if err := os.WriteFile(filepath.Join(cwd, "data.txt"), []byte(strings.Repeat("0123456789abcdef ", 240)), 0o644); err != nil {
				b.Fatal(err)
			}
			prov := &readingProvider{}
			rt, err := New(Config{Store: store.New(root).WithoutSync(), NewProvider: func(string) (model.Provider, error) { return prov, nil },
				Defaults: event.Config{Provider: "test", Model: "m"}, PermissionMode: permission.ModeFull, Tools: tool.Builtins()})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close(context.Background())
			s, _ := rt.Create(context.Background(), SessionOptions{Cwd: cwd})
			turn := func() {
				tk, _ := s.Prompt(context.Background(), []event.ContentBlock{event.Text("read data.txt")})
				<-tk.Done()
			}
			for s.lg.NextSeq() < int64(events) {
				turn()
			}
			// Every op starts from the same history: the log as it is now.
			logPath := filepath.Join(s.Dir(), "session.jsonl")
			if err := s.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			snapshot, err := os.ReadFile(logPath)
			if err != nil {
				b.Fatal(err)
			}
			var cpu time.Duration
			var reqKB float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if err := os.WriteFile(logPath, snapshot, 0o600); err != nil {
					b.Fatal(err)
				}
				if s, err = rt.Resume(context.Background(), s.ID(), SessionOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := cpuTime()
				turn()
				cpu += cpuTime() - start
				b.StopTimer()
				reqKB += float64(prov.reqBytes.Load()) / 1024
				if err := s.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(2*b.N), "µs-cpu/step")
			b.ReportMetric(reqKB/float64(b.N), "req-KB")
		})
	}
}
