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
