package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	tJobOut  = jobOutputTool{}
	tJobKill = jobKillTool{}
	tJobList = jobListTool{}
)

// withJobs gives a test env a spill folder and a job table, closed (every
// job killed) when the test ends.
func withJobs(t *testing.T, te *testEnv) *Jobs {
	t.Helper()
	withSpill(t, te)
	te.Jobs = NewJobs(te.Spill, te.Exec)
	t.Cleanup(te.Jobs.Close)
	return te.Jobs
}

func bg(t *testing.T, te *testEnv, command string) (string, string) {
	t.Helper()
	out := mustOK(t, call(t, tBash, te.Env, obj{"command": command, "description": "job", "run_in_background": true}))
	m := regexp.MustCompile(`Started background job (job-\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no job id in %q", out)
	}
	return m[1], out
}

// pidOf finds "PID=<n>" in a job's output.
func pidOf(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`PID=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no PID in %q", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestBackgroundJobLifecycle(t *testing.T) {
	te := newTestEnv(t)
	withJobs(t, te)
	// A grandchild in the background of the job's shell, then a banner,
	// in one write: the call returns once output has been quiet for a
	// moment, and two echoes could straddle that on a loaded machine.
	id, out := bg(t, te, "sleep 1000 & printf 'PID=%s\nready\n' $!; exec sleep 1000")
	contains(t, out, "ready\n", "["+id+" is running;")
	pid := pidOf(t, out)
	if !alive(pid) {
		t.Fatal("the job's child is not running")
	}
	// Nothing new yet.
	contains(t, mustOK(t, call(t, tJobOut, te.Env, obj{"job_id": id})), "(no new output)", "is running")
	contains(t, mustOK(t, call(t, tJobList, te.Env, obj{})), id+"\trunning\t")
	// Kill: the whole group goes.
	r := call(t, tJobKill, te.Env, obj{"job_id": id})
	contains(t, mustOK(t, r), id+" was killed")
	if alive(pid) {
		t.Fatal("the job's child survived job_kill")
	}
	contains(t, mustOK(t, call(t, tJobList, te.Env, obj{})), id+"\tkilled")
}

func TestBackgroundJobOutputAcrossLooks(t *testing.T) {
	te := newTestEnv(t)
	withJobs(t, te)
	// The job waits on a FIFO the test writes to, so the test decides
	// when the second part is printed.
	gate := te.ws + "/go-on"
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	id, out := bg(t, te, fmt.Sprintf("echo first; read x < %s; echo second; exit 3", gate))
	contains(t, out, "first\n")
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := ""
	for !strings.Contains(got, "exited") {
		// wait_ms waits for output or the end, not a fixed time.
		o := mustOK(t, call(t, tJobOut, te.Env, obj{"job_id": id, "wait_ms": 20000}))
		got += o
	}
	contains(t, got, "second\n", "["+id+" exited; exit code: 3]")
	if strings.Contains(got, "first") {
		t.Fatalf("job_output repeated old output: %q", got)
	}
}

func TestJobBadInput(t *testing.T) {
	te := newTestEnv(t)
	withJobs(t, te)
	mustErr(t, call(t, tJobOut, te.Env, obj{"job_id": "job-99"}), `no such job "job-99": this session has no background jobs`)
	id, _ := bg(t, te, "echo hi")
	mustErr(t, call(t, tJobKill, te.Env, obj{"job_id": "nope"}), `no such job "nope"; this session's jobs are `+id)
	mustErr(t, call(t, tJobOut, te.Env, obj{}), "job_id is required")
	mustErr(t, call(t, tJobOut, te.Env, obj{"job_id": id, "wait_ms": -1}), "wait_ms must be 0 or more")
	// A session without a job table says so.
	plain := newTestEnv(t)
	mustErr(t, call(t, tBash, plain.Env, obj{"command": "echo x", "description": "x", "run_in_background": true}), "cannot run background jobs")
}

// TestTooManyJobsAndCloseKillsAll: 50 starts, only MaxRunningJobs run; the
// rest are refused with a clear message; Close leaves nothing alive.
func TestTooManyJobsAndCloseKillsAll(t *testing.T) {
	te := newTestEnv(t)
	js := withJobs(t, te)
	var pids []int
	refused := 0
	for i := 0; i < 50; i++ {
		r := call(t, tBash, te.Env, obj{"command": "echo PID=$$; exec sleep 1000", "description": "sleep", "run_in_background": true})
		if r.IsError {
			contains(t, text(r), "too many background jobs: 10 are running", "job_kill")
			refused++
			continue
		}
		pids = append(pids, pidOf(t, text(r)))
	}
	if len(pids) != MaxRunningJobs || refused != 50-MaxRunningJobs {
		t.Fatalf("%d started, %d refused", len(pids), refused)
	}
	js.Close()
	for _, pid := range pids {
		if alive(pid) {
			t.Fatalf("job process %d survived Close", pid)
		}
	}
	if _, err := js.Start(ExecRequest{Command: "true", Workdir: te.ws}); !errors.Is(err, ErrJobsClosed) {
		t.Fatalf("start after close: %v", err)
	}
}

// TestJobFillsItsOutputFile: past SpillMaxBytes output is dropped, counted
// and said; the job is not harmed.
func TestJobFillsItsOutputFile(t *testing.T) {
	te := newTestEnv(t)
	withJobs(t, te)
	id, _ := bg(t, te, fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo; echo END", SpillMaxBytes+(1<<20)))
	var last string
	for n := 0; !strings.Contains(last, "exited") && n < 2000; n++ {
		last = mustOK(t, call(t, tJobOut, te.Env, obj{"job_id": id, "wait_ms": 20000}))
		if len(last) > OutputBudget {
			t.Fatalf("job_output of %d bytes", len(last))
		}
	}
	if len(last) > 300 {
		last = last[len(last)-300:]
	}
	contains(t, last, "only the first 32 MiB are kept", "exit code: 0")
}

// TestCancelledStartKillsTheJob: a call cancelled while it waits for the
// first output does not leave its job behind.
func TestCancelledStartKillsTheJob(t *testing.T) {
	te := newTestEnv(t)
	js := withJobs(t, te)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := tBash.Run(ctx, args(t, obj{"command": "exec sleep 1000", "description": "x", "run_in_background": true}), te.Env)
	mustErr(t, r, "cancelled; background job job-1 was killed")
	if l := js.List(); len(l) != 1 || l[0].Running {
		t.Fatalf("jobs after a cancelled start: %+v", l)
	}
}

// TestJobIDsGoOnAcrossRuns: a new job table of the same session (a resumed
// session) does not hand out an id its history already used.
func TestJobIDsGoOnAcrossRuns(t *testing.T) {
	te := newTestEnv(t)
	js := withJobs(t, te)
	id, _ := bg(t, te, "echo one")
	if id != "job-1" {
		t.Fatalf("first id %s", id)
	}
	js.Close()
	te.Jobs = NewJobs(te.Spill, te.Exec)
	t.Cleanup(te.Jobs.Close)
	if id, _ := bg(t, te, "echo two"); id != "job-2" {
		t.Fatalf("id after a restart: %s", id)
	}
}

// TestBashYieldsToBackgroundJob: a foreground call without a timeout of
// its own that is still running after BashYield goes on as a job: the
// result says so with its id and the output so far, and job_output takes
// it from there; a call with timeout_ms is waited for and killed as before.
func TestBashYieldsToBackgroundJob(t *testing.T) {
	te := newTestEnv(t)
	withJobs(t, te)
	te.BashYield = time.Second
	fifo := filepath.Join(te.ws, "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	quick := mustOK(t, call(t, tBash, te.Env, obj{"command": "echo quick", "description": "quick"}))
	if !strings.Contains(quick, "quick\n[exit code: 0]") || strings.Contains(quick, "job") {
		t.Fatalf("a quick command: %q", quick)
	}
	r := call(t, tBash, te.Env, obj{"command": "echo first; cat gate; echo second; exit 3", "description": "server"})
	out := mustOK(t, r)
	m := regexp.MustCompile(`still running after 1s, so it goes on as background job (job-\d+)`).FindStringSubmatch(out)
	if m == nil || r.Meta == nil || r.Meta.Job == nil || r.Meta.Job.ID != m[1] {
		t.Fatalf("no yield: %q meta %+v", out, r.Meta)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	all := out
	for !strings.Contains(all, "exited; exit code: 3") {
		all += mustOK(t, call(t, tJobOut, te.Env, obj{"job_id": m[1], "wait_ms": 20_000}))
	}
	if i, j, k := strings.Index(all, "first\n"), strings.Index(all, "go\n"), strings.Index(all, "second\n"); i < 0 || j < i || k < j {
		t.Fatalf("output lost or out of order: %q", all)
	}
	// With its own timeout the call waits, and kills at the timeout.
	r = call(t, tBash, te.Env, obj{"command": "cat gate", "description": "wait", "timeout_ms": 1500})
	if !r.IsError || !strings.Contains(text(r), "timed out after 1.5s") {
		t.Fatalf("with timeout_ms: %q", text(r))
	}
}
