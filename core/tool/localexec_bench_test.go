package tool

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/sandbox"
)

// sandboxExec is testExec with the sandbox on (auto: as much as this
// machine allows; the level is what the dsh binary would use here).
func sandboxExec(network bool) Executor {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	sb := sandbox.New(sandbox.Config{Setting: sandbox.Auto, Network: network, Reaper: self})
	return LocalExecWith(LocalExecOptions{Reaper: self, Sandbox: sb})
}

// BenchmarkBashStart is the start-to-end cost of a trivial command
// (`true`) through each exec path: bash alone, under the reaper, and under
// the reaper with the sandbox (network on, and off: a network namespace).
// The differences are what containment adds to every bash call (issue
// #19's goal: the sandbox adds at most 10 ms median over unconfined, i.e.
// sandbox - reaper). Reported as ms/op and median-ms; run it as root
// (namespaces made by dsh) and as another user (through a user
// namespace: the reaper starts a second reaper) to see both.
func BenchmarkBashStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		ex   Executor
	}{{"direct", LocalExec()}, {"reaper", testExec()}, {"sandbox", sandboxExec(true)}, {"sandbox-nonet", sandboxExec(false)}} {
		b.Run(bc.name, func(b *testing.B) {
			ws := b.TempDir()
			req := ExecRequest{Command: "true", Workdir: ws, Scope: sandbox.Scope{Workspace: ws}}
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := bc.ex.Exec(context.Background(), req)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v %v", res, err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
		})
	}
}
