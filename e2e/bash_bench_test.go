package e2e

// BenchmarkBashOverRead is what a `bash` call costs over a `read` call, the
// figure issue 26 sets a goal for (≤ 5 ms): two `dsh run`s of the scripted
// provider, one whose turn makes bashOverReadCalls calls of `bash true`, one
// whose turn makes as many `read`s of a small file, each call its own step,
// in the default mode (auto: the sandbox on where the machine has one). The
// process start, the model steps and their fsyncs are the same in both, so
// the difference of the two runs' times, per call, is the bash call's
// extra: the reaper's start (the dsh binary re-executed), the sandbox and
// bash itself. The two runs alternate, so load on the machine falls on both.
//
// DSH_BENCH_BASE_BIN names a second dsh binary (an older build) measured in
// the same alternation, reported as base-bash-over-read-ms: before and
// after in one window of a busy machine.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const bashOverReadCalls = 20

func BenchmarkBashOverRead(b *testing.B) {
	// Each call differs from the last (the loop check stops a turn that
	// repeats one call).
	script := func(call string) string {
		var steps strings.Builder
		for i := range bashOverReadCalls {
			fmt.Fprintf(&steps, `{"toolCalls":[`+call+`]},`, i)
		}
		return `{"steps":[` + steps.String() + `{"text":"done"}]}`
	}
	bash := newBenchWorld(b, script(`{"name":"bash","arguments":{"command":"true %d","description":"nothing"}}`))
	read := newBenchWorld(b, script(`{"name":"read","arguments":{"file_path":"a%d.txt"}}`))
	for i := range bashOverReadCalls {
		if err := os.WriteFile(filepath.Join(read.Cwd, fmt.Sprintf("a%d.txt", i)), []byte("hello\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bins := []string{dshBin}
	if base := os.Getenv("DSH_BENCH_BASE_BIN"); base != "" {
		bins = append(bins, base)
	}
	over := make([][2][]time.Duration, len(bins)) // per binary: wall, CPU
	b.ResetTimer()
	for range b.N {
		for i, bin := range bins {
			wb, cb := timeRun(b, bin, bash)
			wr, cr := timeRun(b, bin, read)
			over[i][0] = append(over[i][0], (wb-wr)/bashOverReadCalls)
			over[i][1] = append(over[i][1], (cb-cr)/bashOverReadCalls)
		}
	}
	b.StopTimer()
	for i, prefix := range []string{"", "base-"}[:len(bins)] {
		for j, unit := range []string{"bash-over-read-ms", "bash-over-read-cpu-ms"} {
			ds := over[i][j]
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2])/float64(time.Millisecond), prefix+unit)
		}
	}
}

// timeRun times one `dsh run` of w's script with binary bin, start to exit,
// and returns the CPU time (user and system) of the run and every process
// it waited for (the reapers, bash): on a busy machine the wall time
// follows the load, the CPU time far less.
func timeRun(b *testing.B, bin string, w *benchWorld) (wall, cpu time.Duration) {
	b.Helper()
	cmd := w.command("run", "--json", "go")
	cmd.Path = bin
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil || !strings.Contains(string(out), `"type":"final"`) {
		b.Fatalf("%s: %v\n%s", bin, err, out)
	}
	if n := strings.Count(string(out), `"type":"tool_result","callId"`); n != bashOverReadCalls ||
		strings.Count(string(out), `"status":"completed"`) != n {
		b.Fatalf("want %d completed tool results:\n%s", bashOverReadCalls, out)
	}
	st := cmd.ProcessState
	return d, st.UserTime() + st.SystemTime()
}
