package acp

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// cpuPressure follows the kernel's CPU pressure (PSI, Linux 4.20 and
// later): the share of time some runnable task waited for a CPU. An ACP
// client runs on the machine that started dsh over stdio, so when that
// share is high the client's handler runs that much slower too — the one
// measure of the client's pace an agent can read, since acp-go-sdk's
// reader drains the pipe whatever its handler's pace.
type cpuPressure struct {
	path   string
	total  uint64    // the "some" stall total at the last sample, µs
	at     time.Time // when it was taken
	stall  float64   // smoothed share of time stalled, 0..1
	usable bool
}

// pressureEvery is how often the file is read; pressureSmooth the time
// constant of the smoothing (the kernel's own avg10 reacts too slowly to a
// load that starts mid-turn).
const (
	pressureEvery  = 200 * time.Millisecond
	pressureSmooth = time.Second
)

func newCPUPressure(path string) *cpuPressure {
	c := &cpuPressure{path: path}
	if t, ok := readStallTotal(path); ok {
		c.total, c.at, c.usable = t, time.Now(), true
	}
	return c
}

// share returns the smoothed stall share, sampling the file when the last
// sample is older than pressureEvery; 0 when the kernel has no PSI.
func (c *cpuPressure) share(now time.Time) float64 {
	if c == nil || !c.usable || now.Sub(c.at) < pressureEvery {
		return c.current()
	}
	t, ok := readStallTotal(c.path)
	if !ok || t < c.total {
		return c.stall
	}
	dt := now.Sub(c.at)
	got := min(1, float64(t-c.total)/float64(dt.Microseconds()))
	w := min(1, dt.Seconds()/pressureSmooth.Seconds())
	c.stall += w * (got - c.stall)
	c.total, c.at = t, now
	return c.stall
}

func (c *cpuPressure) current() float64 {
	if c == nil {
		return 0
	}
	return c.stall
}

// readStallTotal reads total= of the "some" line of a PSI file.
func readStallTotal(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.HasPrefix(line, []byte("some ")) {
		return 0, false
	}
	_, v, ok := bytes.Cut(line, []byte("total="))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
	return n, err == nil
}
