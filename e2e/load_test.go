package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// loadScript is one tool step (todo_write: a real tool call with a result,
// but no child process, so the load is dsh's own) and one answer per turn.
const loadScript = `{"repeat":"cycle","steps":[
 {"reasoning":"Track the work.","toolCalls":[{"name":"todo_write","arguments":{"todos":[{"content":"answer","status":"in_progress"}]}}]},
 {"reasoning":"Answer.","text":"Turn done."}
]}`

const (
	loadSessions = 100
	loadTurns    = 10
)

// TestLoadSDK drives one `dsh sdk` process with 100 concurrent sessions of
// 10 turns each from one Go client. Every session.event must arrive exactly
// once, in order, with contiguous seqs, and be the log's event byte for
// byte; every turn completes. The process's peak RSS (VmHWM) is reported.
func TestLoadSDK(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(loadScript)...)
	c := pxStartSDK(t, w, "scripted")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	// One subscription sees the whole wire, in wire order.
	all := c.Subscribe(func(n client.Notification) bool { return n.Method == protocol.NotifySessionEvent })
	defer all.Close()

	ids := make([]string, loadSessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("load-%03d-%s", i, newSessionID())
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, loadSessions)
	runEvents := make([][]event.Event, loadSessions)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 1; turn <= loadTurns; turn++ {
				res, err := c.Session(id).Run(ctx, fmt.Sprintf("session %d turn %d", i, turn))
				if err != nil {
					errs <- fmt.Errorf("session %s turn %d: %w", id, turn, err)
					return
				}
				if res.FinishReason != event.ReasonCompleted {
					errs <- fmt.Errorf("session %s turn %d ended %q", id, turn, res.FinishReason)
					return
				}
				runEvents[i] = append(runEvents[i], res.Events...)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	hwm, rss := loadProcMem(t, c.Pid())

	// Exactly once, in order, contiguous: per session the seqs received
	// are 0, 1, 2, … with nothing missing or repeated. Every Run returned
	// at its session's idle, which follows its last event on the wire, so
	// the queue holds everything; closing the client would drop it.
	got := map[string][]event.Event{}
	total := 0
	for {
		n, ok, _ := all.TryNext()
		if !ok {
			break
		}
		pe, err := n.Event()
		if err != nil {
			t.Fatal(err)
		}
		got[pe.SessionID] = append(got[pe.SessionID], pe.Event)
		total++
	}
	pxClose(t, c) // shutdown flushes every log before the process exits
	if len(got) != loadSessions {
		t.Fatalf("events of %d sessions, want %d", len(got), loadSessions)
	}
	for i, id := range ids {
		evs := got[id]
		for j, ev := range evs {
			if ev.Seq != int64(j) {
				t.Fatalf("session %s: event %d of the wire has seq %d (duplicate, gap or reorder)", id, j, ev.Seq)
			}
		}
		log := pxRead(t, w, id)
		if len(log) != len(evs) {
			t.Fatalf("session %s: %d events delivered, %d in the log", id, len(evs), len(log))
		}
		pxPrefix(t, evs, log)
		ends := pxTurnEnds(t, log)
		if len(ends) != loadTurns || strings.Count(strings.Join(ends, ","), event.ReasonCompleted) != loadTurns {
			t.Fatalf("session %s: turns ended %v", id, ends)
		}
		// Each owned run saw a contiguous slice of the same stream.
		for j := 1; j < len(runEvents[i]); j++ {
			if a, b := runEvents[i][j-1].Seq, runEvents[i][j].Seq; b <= a {
				t.Fatalf("session %s: run events out of order (%d then %d)", id, a, b)
			}
		}
	}
	t.Logf("LOAD: one dsh sdk, %d sessions x %d turns (%d turns, %d session.events, each delivered exactly once, in order) in %s; "+
		"peak RSS (VmHWM) %.1f MiB, RSS at the end %.1f MiB",
		loadSessions, loadTurns, loadSessions*loadTurns, total, elapsed.Round(time.Millisecond), hwm, rss)
}

// loadProcMem reads the peak and current resident set of pid, in MiB,
// from /proc/<pid>/status (VmHWM, VmRSS). Elsewhere than Linux it reports
// zeros.
func loadProcMem(t *testing.T, pid int) (hwm, rss float64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Logf("no /proc status for pid %d: %v", pid, err)
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmHWM:":
			hwm = kb / 1024
		case "VmRSS:":
			rss = kb / 1024
		}
	}
	return hwm, rss
}
