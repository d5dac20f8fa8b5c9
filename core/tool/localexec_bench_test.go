package tool

import (
	"context"
	"testing"
)

// BenchmarkBashStart is the start-to-end cost of a trivial command
// (`true`) through each exec path: bash alone, and under the reaper (what
// the dsh binary runs). The difference is what containment adds to every
// bash call. Reported as ms/op.
func BenchmarkBashStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		ex   Executor
	}{{"direct", LocalExec()}, {"reaper", testExec()}} {
		b.Run(bc.name, func(b *testing.B) {
			req := ExecRequest{Command: "true", Workdir: b.TempDir()}
			for b.Loop() {
				res, err := bc.ex.Exec(context.Background(), req)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v %v", res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
