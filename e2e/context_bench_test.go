package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model/modeltest"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// BenchmarkContextCacheHits runs a 300-turn session through `dsh sdk`
// against the fake DeepSeek server with a 128k-token window, each turn
// reading an 8 KB file, so the session compacts several times, and reports
// the prefix-cache hit ratio as the server measures it (cached prompt
// tokens / prompt tokens over every request, summary calls included).
func BenchmarkContextCacheHits(b *testing.B) {
	for i := 0; i < b.N; i++ {
		loop := &readLoop{}
		srv := modeltest.New(b, modeltest.WithContextLimit(128_000), modeltest.WithResponder(loop.respond))
		dir := b.TempDir()
		cwd := filepath.Join(dir, "ws")
		if err := os.MkdirAll(cwd, 0o755); err != nil {
			b.Fatal(err)
		}
		writeBig(b, cwd, 8<<10)
		env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DSH_SESSION_ROOT=" + filepath.Join(dir, "sessions"),
			"DSH_CONTEXT_WINDOW=128000"}, srv.Env()...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		c, _, err := client.Start(ctx, client.Config{Command: []string{dshBin, "sdk"}, Env: env, Dir: cwd},
			protocol.InitializeParams{Cwd: cwd})
		if err != nil {
			b.Fatal(err)
		}
		sess := c.Session("")
		for turn := range 300 {
			res, err := sess.Run(ctx, fmt.Sprintf("turn %d: read big.txt", turn))
			if err != nil || res.FinishReason != event.ReasonCompleted {
				b.Fatalf("turn %d: %v %v", turn, err, res.FinishReason)
			}
		}
		_ = c.Close(ctx)
		cancel()
		if v := srv.Violations(); len(v) != 0 || loop.refused != 0 {
			b.Fatalf("%d violations, %d refused requests", len(v), loop.refused)
		}
		b.ReportMetric(loop.ratio(), "cache-hit-ratio")
		b.ReportMetric(float64(loop.summaries), "compactions")
	}
}

// writeCompactedSession writes a session of n events like writeLongSession
// and ends it with a compaction checkpoint, as a session that compacted
// recently leaves its log.
func writeCompactedSession(b *testing.B, w *benchWorld, id string, n int) {
	b.Helper()
	writeLongSession(b, w, id, n)
	lg, evs, err := store.New(w.Root).WithoutSync().Open(id)
	if err != nil {
		b.Fatal(err)
	}
	turn := 0
	for _, ev := range evs {
		if ev.Type == event.TypeTurnStart {
			turn++
		}
	}
	cfg := event.Config{Provider: "scripted", Model: "deepseek-flash"}
	cp := event.CompactionCheckpoint{Trigger: event.CompactAuto, Turn: turn, Summary: "The user fixes failing tests, one package a turn.",
		History: []event.CheckpointMessage{
			{Kind: "task", Role: "user", Content: "Turn 1: look at the build output and fix the failing test in pkg/1."},
			{Kind: "summary", Role: "user", Content: modeltest.CompactedPrefix + "The user fixes failing tests, one package a turn."}},
		ReplacedThroughSeq: lg.NextSeq() - 1, ReplacedMessages: turn * 4, ContextWindow: 1_000_000,
		State: &event.CheckpointState{Turn: turn, Titled: true, Config: &cfg}}
	ev := event.New(event.TypeCompactionCheckpoint, cp)
	ev.Seq = lg.NextSeq()
	if err := lg.Append(ev); err != nil {
		b.Fatal(err)
	}
	if err := lg.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkContextWake100k measures a wake of a 100,000-event session whose
// log ends with a checkpoint: `dsh run --json --session-id` from process
// start to its first line, the session line (goal: 50 ms or less).
func BenchmarkContextWake100k(b *testing.B) {
	w := newBenchWorld(b, `{"steps":[{"text":"ok"}],"repeat":"last"}`)
	const id = "session-bench-wake-100k"
	writeCompactedSession(b, w, id, 100_000)
	benchFirstSessionLine(b, w, "run", "--json", "--session-id", id, "one more thing")
}

// BenchmarkContextMemory100k reports the resident memory of one `dsh sdk`
// that resumed a 100,000-event session (its log ends with a checkpoint)
// and ran a turn in it (goal: 30 MiB or less).
func BenchmarkContextMemory100k(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	for i := 0; i < b.N; i++ {
		w := newBenchWorld(b, `{"steps":[{"text":"ok"}],"repeat":"last"}`)
		const id = "session-bench-mem-100k"
		writeCompactedSession(b, w, id, 100_000)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, _, err := client.Start(ctx, client.Config{Command: []string{dshBin, "sdk"}, Env: w.Env, Dir: w.Cwd},
			protocol.InitializeParams{Cwd: w.Cwd, Provider: "scripted"})
		if err != nil {
			b.Fatal(err)
		}
		res, err := c.Session(id).Run(ctx, "one more thing")
		if err != nil || res.FinishReason != event.ReasonCompleted {
			b.Fatalf("turn: %v %v", err, res.FinishReason)
		}
		pid := c.Pid()
		rss, _ := procStatusKB(pid, "VmRSS")
		hwm, _ := procStatusKB(pid, "VmHWM")
		_ = c.Close(ctx)
		cancel()
		b.ReportMetric(float64(rss)/1024, "MiB-rss")
		b.ReportMetric(float64(hwm)/1024, "MiB-peak")
	}
}
