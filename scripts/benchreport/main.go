// Command benchreport reads `go test -bench` output on stdin and prints one
// table: each benchmark's median per unit over its runs (-count), with the
// project's target beside it where one is set. scripts/bench.sh runs it.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// target is a goal for one benchmark metric.
type target struct {
	bench, unit string  // bench matches by prefix (after "Benchmark", without -N)
	max, min    float64 // the median must be <= max (if > 0) and >= min (if > 0)
	label       string
}

var targets = []target{
	{bench: "Replay10k", unit: "ms/op", max: 50, label: "< 50 ms (issue 2)"},
	{bench: "StepOverhead/nosync", unit: "µs/step", max: 1000, label: "< 1 ms/step, fsync excluded (issue 3)"},
	{bench: "RunStartup", unit: "ms/op", max: 20, label: "< 20 ms to the first session line (issue 5)"},
	{bench: "RunResume10k", unit: "ms/op", max: 100, label: "< 100 ms (issue 5)"},
	{bench: "SDKStartInitialize", unit: "ms/op", max: 15, label: "< 15 ms (issue 6)"},
	{bench: "SDKNotifications", unit: "notifications/s", min: 50000, label: "> 50,000/s (issue 6)"},
	{bench: "Notifications/stream.Notify", unit: "notifications/s", min: 50000, label: "> 50,000/s, the SDK wire path alone (issue 6)"},
	{bench: "Memory", unit: "MiB-idle", label: "reported (issue 9)"},
	{bench: "Memory/sessions=", unit: "MiB-peak", label: "reported: peak of one dsh sdk with 16 / 50 / 100 sessions of one turn (issue 25)"},
	{bench: "ACPFlow/load100k/raw", unit: "updates/s", label: "reported: session/load to the fastest reader; against DSH_ACP_UPDATES_PER_SEC=off (issue 25)"},
	{bench: "ACPFlow/load100k/handler=", unit: "disconnects/op", label: "0: acp-go-sdk clients stay connected (issue 25)"},
	{bench: "SDKChunks", unit: "chunk-events/s", label: "reported: the live stream end to end (issue 18)"},
	{bench: "ChunkStream", unit: "fsyncs/step", label: "the same with and without deltas (issue 18)"},
	{bench: "ChunkStream", unit: "chunk-events/s", label: "reported (issue 18)"},
	{bench: "DelegationE2E", unit: "ms-cold-dsh-sdk", label: "reported (issue 8)"},
	{bench: "ContextStep/events=", unit: "µs-cpu/step", label: "flat: 10,000 events within 1.3x of 100 (issue 13)"},
	{bench: "ContextStep/events=", unit: "req-KB", label: "bounded by the window (issue 13)"},
	{bench: "ContextCacheHits", unit: "cache-hit-ratio", min: 0.9, label: ">= 0.9 over 300 turns with compactions (issue 13)"},
	{bench: "ContextWake100k", unit: "p50-ms", max: 50, label: "<= 50 ms to the session line, checkpoint near the end (issue 13)"},
	{bench: "ContextMemory100k", unit: "MiB-peak", max: 30, label: "<= 30 MiB for one dsh sdk holding a 100k-event session (issue 13)"},
	{bench: "WakeStreamed100k", unit: "p50-wake-ms", label: "reported: wake of an uncompacted 100k-event streamed session, to the session line (issue 25)"},
	{bench: "WakeStreamed100k", unit: "p50-cpu-ms", label: "reported: that wake's CPU, start to exit (issue 25)"},
	{bench: "WakeStreamed100k", unit: "wake-peak-MiB", label: "reported: that wake's peak RSS to the session line (issue 25)"},
	{bench: "CheckpointUnchanged10k", unit: "ms/op", max: 50, label: "< 50 ms: checkpoint of an unchanged 10,000-file workspace (issue 29)"},
	{bench: "CheckpointUnchanged10k", unit: "cpu-ms/op", label: "reported: its CPU time (issue 29)"},
	{bench: "Rewind300", unit: "ms/op", label: "reported: rewind of 300 changed files (issue 29)"},
	{bench: "BashStart/reaper", unit: "ms/op", label: "reported: a bash call under the reaper (issue 12)"},
	{bench: "BashStart/sandbox", unit: "ms/op", label: "reported: goal ≤ 10 ms over BashStart/reaper (issue 19)"},
	{bench: "BashOverRead", unit: "bash-over-read-ms", max: 5, label: "≤ 5 ms: a bash call over a read call, dsh run (issue 26)"},
	{bench: "BashOverRead", unit: "bash-over-read-cpu-ms", label: "reported: the same in CPU time, steadier on a busy machine (issue 26)"},
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

func main() {
	values := map[string]map[string][]float64{}
	pkgOf := map[string]string{}
	var order []string
	pkg := ""
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		if strings.HasPrefix(text, "pkg: ") {
			pkg = strings.TrimPrefix(text, "pkg: ")
			continue
		}
		m := line.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		name := strings.TrimPrefix(m[1], "Benchmark")
		if _, ok := values[name]; !ok {
			values[name] = map[string][]float64{}
			order = append(order, name)
			pkgOf[name] = pkg
		}
		fields := strings.Fields(m[4])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			unit := fields[i+1]
			if unit == "ns/op" {
				// Show times in a readable unit.
				unit, v = "ms/op", v/1e6
			}
			values[name][unit] = append(values[name][unit], v)
		}
	}
	fmt.Printf("%-44s %-20s %14s  %-6s %s\n", "benchmark", "unit", "median", "runs", "target")
	fmt.Println(strings.Repeat("-", 120))
	failed := 0
	for _, name := range order {
		units := make([]string, 0, len(values[name]))
		for u := range values[name] {
			units = append(units, u)
		}
		sort.Strings(units)
		for _, u := range units {
			if u == "B/op" || u == "allocs/op" {
				continue
			}
			vs := values[name][u]
			med := median(vs)
			tgt, verdict := "", ""
			for _, t := range targets {
				if u == t.unit && (name == t.bench || strings.HasPrefix(name, t.bench+"/")) {
					tgt = t.label
					ok := (t.max == 0 || med <= t.max) && (t.min == 0 || med >= t.min)
					verdict = "  ok"
					if t.max == 0 && t.min == 0 {
						verdict = ""
					} else if !ok {
						verdict = "  MISSED"
						failed++
					}
					break
				}
			}
			fmt.Printf("%-44s %-20s %14s  %-6d %s%s\n", short(name), u, format(med), len(vs), tgt, verdict)
		}
	}
	if failed > 0 {
		fmt.Printf("\n%d target(s) missed\n", failed)
	}
}

func short(s string) string {
	if len(s) > 44 {
		return s[:43] + "…"
	}
	return s
}

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
