package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/sdkrpc/client"
)

// BenchmarkSDKChunks measures the live stream end to end: a scripted turn
// streams a 2,000-character answer one character per delta through `dsh
// sdk`, and a Go host reads it with Session.Run and OnText. It reports
// chunk-events/s (assistant/chunk notifications the host received over the
// wall time of the turns) and checks the text arrived whole.
//
//	go test -run XXX -bench SDKChunks -benchtime 20x ./e2e/
func BenchmarkSDKChunks(b *testing.B) {
	const n = 2000
	answer := strings.Repeat("x", n)
	c := sdkBenchStart(b, `{"chunkRunes":1,"steps":[{"text":"`+answer+`"}],"repeat":"last"}`)
	ctx := context.Background()
	chunks := 0
	b.ResetTimer()
	for range b.N {
		var text strings.Builder
		res, err := c.Session(fmt.Sprintf("chunks-%d", sdkBenchOp.Add(1))).Run(ctx, "go",
			client.OnText(func(d string) { text.WriteString(d) }),
			client.OnEvent(func(e client.Event) {
				if _, ok := e.Chunk(); ok {
					chunks++
				}
			}))
		if err != nil {
			b.Fatal(err)
		}
		if res.FinishReason != client.FinishCompleted || text.String() != answer {
			b.Fatalf("turn ended %s with %d of %d characters streamed", res.FinishReason, text.Len(), n)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunk-events/s")
}
