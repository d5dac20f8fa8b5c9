package acp

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"time"
)

// cpuShare estimates the share of a CPU that a busy process gets on this
// machine now: the CPUs over the tasks that want one (the runnable count
// of /proc/loadavg, smoothed), at most 1. An ACP client runs on the machine
// that started dsh over stdio, so its handler runs that much slower when
// the share drops — the one measure of the client's pace an agent can
// read, since acp-go-sdk's reader drains the pipe whatever its handler's
// pace. The count is the machine's, not a load average: it reacts within a
// second to a load that starts mid-turn, and many idle cores keep the
// share at 1 however busy the rest of them are.
type cpuShare struct {
	path   string
	cpus   float64
	at     time.Time // when it was last read
	share  float64   // smoothed, 0..1
	usable bool
}

// shareEvery is how often the file is read; shareSmooth the time constant
// of the smoothing.
const (
	shareEvery  = 200 * time.Millisecond
	shareSmooth = time.Second
)

func newCPUShare(path string) *cpuShare {
	c := &cpuShare{path: path, cpus: float64(runtime.NumCPU()), share: 1}
	if n, ok := readRunnable(path); ok {
		c.at, c.usable = time.Now(), true
		c.share = c.of(n)
	}
	return c
}

// of is the share for n runnable tasks (the reader itself among them).
func (c *cpuShare) of(n int) float64 { return min(1, c.cpus/float64(max(n, 1))) }

// now returns the smoothed share, reading the file when the last reading
// is older than shareEvery; 1 where there is no such file.
func (c *cpuShare) now(now time.Time) float64 {
	if c == nil {
		return 1
	}
	if !c.usable || now.Sub(c.at) < shareEvery {
		return c.share
	}
	n, ok := readRunnable(c.path)
	if !ok {
		return c.share
	}
	w := min(1, now.Sub(c.at).Seconds()/shareSmooth.Seconds())
	c.share += w * (c.of(n) - c.share)
	c.at = now
	return c.share
}

// readRunnable reads the runnable count of a loadavg file ("0.54 2.22 3.02
// 2/81 6890": the 2).
func readRunnable(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 4 {
		return 0, false
	}
	run, _, ok := bytes.Cut(f[3], []byte("/"))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(run))
	return n, err == nil && n >= 0
}
