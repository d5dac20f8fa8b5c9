package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// procStatusKB reads a field (VmRSS, VmHWM) of /proc/<pid>/status in KiB.
func procStatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, field+":") {
			fields := strings.Fields(strings.TrimPrefix(line, field+":"))
			if len(fields) > 0 {
				return strconv.ParseInt(fields[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

// BenchmarkMemory reports the resident memory of one `dsh sdk` process:
// idle after initialize, and its peak after 16, 50 or 100 concurrent
// sessions of one scripted turn each (a tool step and a text step).
func BenchmarkMemory(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	for _, n := range []int{16, 50, 100} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				idle, peak := memoryOnce(b, n)
				b.ReportMetric(float64(idle)/1024, "MiB-idle")
				b.ReportMetric(float64(peak)/1024, "MiB-peak")
			}
		})
	}
}

func memoryOnce(b *testing.B, sessions int) (idleKB, peakKB int64) {
	b.Helper()
	dir := b.TempDir()
	script := dir + "/script.json"
	os.WriteFile(script, []byte(`{"steps":[{"toolCalls":[{"name":"todo_write","arguments":{"todos":[{"content":"x","status":"pending"}]}}]},{"text":"done"}],"repeat":"cycle"}`), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DSH_SESSION_ROOT=" + dir + "/sessions",
		"DSH_PROVIDER=scripted", "DSH_SCRIPT=" + script}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := client.Start(ctx, client.Config{Command: []string{dshBin, "sdk"}, Env: env, Dir: dir},
		protocol.InitializeParams{Cwd: dir, Provider: "scripted", Model: "scripted"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	time.Sleep(50 * time.Millisecond)
	if idleKB, err = procStatusKB(c.Pid(), "VmRSS"); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Session(fmt.Sprintf("mem-%d", i)).Run(ctx, "go"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if peakKB, err = procStatusKB(c.Pid(), "VmHWM"); err != nil {
		b.Fatal(err)
	}
	return idleKB, peakKB
}
