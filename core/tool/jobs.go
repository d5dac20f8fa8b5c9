package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core/proc"
)

// Limits of background jobs, per session.
const (
	// MaxRunningJobs is how many background jobs may run at once.
	MaxRunningJobs = 10
	// maxKeptJobs is how many jobs job_list remembers; the oldest finished
	// ones are forgotten first (their output files stay until the session
	// is removed).
	maxKeptJobs = 50
	// jobFirstWait is the longest bash run_in_background waits for a
	// job's first output (or its end) before returning; once output
	// comes, it returns after jobQuiet without more.
	jobFirstWait = time.Second
	jobQuiet     = 200 * time.Millisecond
	// jobMaxWait bounds job_output's wait_ms.
	jobMaxWait = 10 * time.Minute
)

// Errors of the job table, for errors.Is.
var (
	ErrNoSuchJob   = errors.New("no such job")
	ErrTooManyJobs = errors.New("too many background jobs")
	ErrJobsClosed  = errors.New("the session's jobs are closed")
)

// Jobs is a session's table of background jobs: commands started by bash
// with run_in_background that outlive the call, each in its own process
// group, its whole output (up to SpillMaxBytes) kept in a file of the
// session's spill folder. Close kills every one of them; the session
// closes it when it closes. Safe for concurrent use.
type Jobs struct {
	spill *Spill
	exec  LocalExecOptions // how jobs start: the local executor's rules

	mu     sync.Mutex
	jobs   map[string]*job
	order  []string // ids, oldest first
	n      int
	closed bool
}

// NewJobs returns an empty job table whose output files go to spill.
// Jobs start the way local runs its commands (the reaper, the sandbox:
// see LocalExecWith); any other executor, or nil, means LocalExec's way.
// Jobs always run on this machine. Job ids go on from the last one the
// session's earlier runs used (their output files say which), so an id in
// a resumed session's history never names a new job.
func NewJobs(spill *Spill, local Executor) *Jobs {
	js := &Jobs{spill: spill, exec: localOptions(local), jobs: map[string]*job{}}
	if spill != nil {
		ents, _ := os.ReadDir(spill.Dir())
		for _, e := range ents {
			var n int
			if _, err := fmt.Sscanf(e.Name(), "job-%d-", &n); err == nil && n > js.n {
				js.n = n
			}
		}
	}
	return js
}

// job is one background command.
type job struct {
	id, command, callID string
	started             time.Time
	p                   *proc.Process
	ladder              proc.Ladder
	out                 *jobLog
	done                chan struct{} // closed once the group is gone and the output drained

	mu     sync.Mutex
	exit   int
	killed bool
	ended  time.Time
	err    error
}

// JobStatus is what job_output and job_list say about a job.
type JobStatus struct {
	ID, Command string
	CallID      string // the bash call that started the job
	Running     bool
	ExitCode    int // -1 when killed by a signal
	Killed      bool
	Started     time.Time
	Ended       time.Time
	Output      string // new output since the last look (job_output)
	More        bool   // more new output waits than Output holds
	Dropped     int64  // bytes past the output file's limit, not kept
	LogPath     string
	Total       int64 // bytes the job has printed
}

// Start runs req.Command as a background job and returns its id once the
// process is started.
func (js *Jobs) Start(req ExecRequest) (string, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if err := js.roomLocked(); err != nil {
		return "", err
	}
	js.n++
	id := fmt.Sprintf("job-%d", js.n)
	log, err := newJobLog(js.spill, id)
	if err != nil {
		return "", err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		log.close()
		return "", fmt.Errorf("start job: %w", err)
	}
	p, ladder, err := startBash(req, js.exec, pw)
	pw.Close() // the children hold it now
	if err != nil {
		pr.Close()
		log.close()
		return "", err
	}
	j := &job{id: id, command: req.Command, callID: req.CallID, started: time.Now(), p: p, ladder: ladder, out: log, done: make(chan struct{}), exit: -1}
	go j.run(pr)
	js.jobs[id] = j
	js.order = append(js.order, id)
	js.forgetOld()
	return id, nil
}

// adopt takes over a bash call's running command as a background job: its
// output, pointed at the job's log from now on, and its process. It fails,
// leaving the command to the call, when the table is closed or full.
func (js *Jobs) adopt(req ExecRequest, p *proc.Process, ladder proc.Ladder, out *switchWriter) (string, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if err := js.roomLocked(); err != nil {
		return "", err
	}
	js.n++
	id := fmt.Sprintf("job-%d", js.n)
	log, err := newJobLog(js.spill, id)
	if err != nil {
		js.n--
		return "", err
	}
	out.point(log)
	j := &job{id: id, command: req.Command, callID: req.CallID, started: time.Now(), p: p, ladder: ladder, out: log, done: make(chan struct{}), exit: -1}
	go j.run(nil)
	js.jobs[id] = j
	js.order = append(js.order, id)
	js.forgetOld()
	return id, nil
}

// roomLocked says why no job may start now, or nil. Caller holds js.mu.
func (js *Jobs) roomLocked() error {
	if js.closed {
		return ErrJobsClosed
	}
	running := 0
	for _, j := range js.jobs {
		if !j.finished() {
			running++
		}
	}
	if running >= MaxRunningJobs {
		return fmt.Errorf("%w: %d are running, the most a session may have; stop one with job_kill (job_list shows them)", ErrTooManyJobs, running)
	}
	return nil
}

// run copies the job's output and waits for it. When the leader ends,
// whatever it left in its group is killed, as for a bash call.
func (j *job) run(pr *os.File) {
	copied := make(chan struct{})
	if pr == nil {
		// An adopted command: its output reaches the log through the
		// process's own copier, done once the process is reaped.
		close(copied)
	} else {
		go func() {
			_, _ = io.Copy(j.out, pr)
			pr.Close()
			close(copied)
		}()
	}
	<-j.p.Done()
	_ = j.p.Stop(context.Background(), proc.Ladder{}) // kills and reaps the rest of the group
	werr := j.p.WaitErr()
	select {
	case <-copied:
	case <-time.After(killGrace):
		// Something that left the group still holds the pipe: stop
		// reading so the job can end.
		pr.Close()
		<-copied
	}
	j.mu.Lock()
	if st := j.p.State(); st != nil {
		j.exit = st.ExitCode()
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		j.err = werr
	}
	j.ended = time.Now()
	j.mu.Unlock()
	j.out.close()
	close(j.done)
}

func (j *job) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// kill ends the job's whole group: SIGTERM, then SIGKILL after the grace,
// and waits until it is gone.
func (j *job) kill() {
	if j.finished() {
		return
	}
	j.mu.Lock()
	j.killed = true
	j.mu.Unlock()
	_ = j.p.Stop(context.Background(), j.ladder)
	<-j.done
}

// forgetOld drops the oldest finished jobs past maxKeptJobs. Caller holds
// js.mu.
func (js *Jobs) forgetOld() {
	for i := 0; len(js.order) > maxKeptJobs && i < len(js.order); {
		id := js.order[i]
		if js.jobs[id].finished() {
			delete(js.jobs, id)
			js.order = append(js.order[:i], js.order[i+1:]...)
			continue
		}
		i++
	}
}

func (js *Jobs) get(id string) (*job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.jobs[id]
	if !ok {
		ids := append([]string(nil), js.order...)
		if len(ids) == 0 {
			return nil, fmt.Errorf("%w %q: this session has no background jobs (start one with bash run_in_background)", ErrNoSuchJob, id)
		}
		return nil, fmt.Errorf("%w %q; this session's jobs are %s", ErrNoSuchJob, id, strings.Join(ids, ", "))
	}
	return j, nil
}

// Output returns the job's output since the last look, at most max bytes
// (cut on a line), waiting up to wait for some when there is none yet and
// the job runs.
func (js *Jobs) Output(ctx context.Context, id string, wait time.Duration, max int) (JobStatus, error) {
	j, err := js.get(id)
	if err != nil {
		return JobStatus{}, err
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			ch := j.out.changed() // before the check, so no write is missed
			if j.out.unread() || j.finished() {
				break
			}
			select {
			case <-ch:
			case <-j.done:
			case <-timer.C:
				return j.status(max), nil
			case <-ctx.Done():
				return j.status(max), ctx.Err()
			}
		}
	}
	return j.status(max), nil
}

// First waits for a new job's first burst of output: until it ends, or
// output came and then jobQuiet passed without more, or jobFirstWait
// passed; then it returns what the job printed.
func (js *Jobs) First(ctx context.Context, id string, max int) (JobStatus, error) {
	j, err := js.get(id)
	if err != nil {
		return JobStatus{}, err
	}
	deadline := time.NewTimer(jobFirstWait)
	defer deadline.Stop()
	quietT := time.NewTimer(jobQuiet)
	quietT.Stop()
	defer quietT.Stop()
	var quiet <-chan time.Time
	for !j.finished() {
		select {
		case <-j.out.changed():
			quietT.Reset(jobQuiet)
			quiet = quietT.C
			continue
		case <-quiet:
		case <-j.done:
		case <-deadline.C:
		case <-ctx.Done():
			return j.status(max), ctx.Err()
		}
		break
	}
	return j.status(max), nil
}

// Kill stops a job and returns its last output.
func (js *Jobs) Kill(id string, max int) (JobStatus, error) {
	j, err := js.get(id)
	if err != nil {
		return JobStatus{}, err
	}
	j.kill()
	return j.status(max), nil
}

// List returns every job the table remembers, oldest first, without
// consuming their output.
func (js *Jobs) List() []JobStatus {
	js.mu.Lock()
	jobs := make([]*job, 0, len(js.order))
	for _, id := range js.order {
		jobs = append(jobs, js.jobs[id])
	}
	js.mu.Unlock()
	out := make([]JobStatus, len(jobs))
	for i, j := range jobs {
		out[i] = j.status(0)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Started.Before(out[b].Started) })
	return out
}

// Close kills every job and waits until all are gone. Later starts fail.
func (js *Jobs) Close() {
	if js == nil {
		return
	}
	js.mu.Lock()
	js.closed = true
	jobs := make([]*job, 0, len(js.jobs))
	for _, j := range js.jobs {
		jobs = append(jobs, j)
	}
	js.mu.Unlock()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.kill()
		}()
	}
	wg.Wait()
}

// status reads the job's state; max > 0 also takes up to max bytes of new
// output.
func (j *job) status(max int) JobStatus {
	fin := j.finished()
	j.mu.Lock()
	st := JobStatus{ID: j.id, Command: j.command, CallID: j.callID, Running: !fin, ExitCode: j.exit, Killed: j.killed, Started: j.started, Ended: j.ended}
	j.mu.Unlock()
	if max > 0 {
		st.Output, st.More = j.out.next(max)
	}
	st.LogPath, st.Total, st.Dropped = j.out.path, j.out.totalBytes(), j.out.dropped()
	return st
}

// jobLog is a job's output: a file of the session's spill folder, written
// up to SpillMaxBytes and read forward by job_output.
type jobLog struct {
	path string

	mu      sync.Mutex
	f       *os.File
	kept    int64
	total   int64
	readPos int64
	ch      chan struct{} // closed and replaced at each write
	werr    error
}

func newJobLog(sp *Spill, id string) (*jobLog, error) {
	if sp == nil {
		return nil, errors.New("this session keeps no files, so it cannot run background jobs")
	}
	f, err := sp.create(id)
	if err != nil {
		return nil, fmt.Errorf("job output file: %w", err)
	}
	return &jobLog{path: f.Name(), f: f, ch: make(chan struct{})}, nil
}

// Write keeps p within SpillMaxBytes and never fails, so the job never
// dies of a full log.
func (l *jobLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(len(p))
	if room := SpillMaxBytes - l.kept; room > 0 && l.f != nil && l.werr == nil {
		k := p[:min(int64(len(p)), room)]
		n, err := l.f.Write(k)
		l.kept += int64(n)
		l.werr = err
	}
	close(l.ch)
	l.ch = make(chan struct{})
	return len(p), nil
}

func (l *jobLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

func (l *jobLog) changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ch
}

func (l *jobLog) unread() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readPos < l.kept
}

func (l *jobLog) totalBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

func (l *jobLog) dropped() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total - l.kept
}

// next returns up to max unread bytes, ending on a line when more remain,
// and moves the read position past them.
func (l *jobLog) next(max int) (string, bool) {
	l.mu.Lock()
	from, to := l.readPos, l.kept
	l.mu.Unlock()
	if from >= to {
		return "", false
	}
	n := min(to-from, int64(max))
	f, err := os.Open(l.path)
	if err != nil {
		return fmt.Sprintf("[the job's output file cannot be read: %v]", err), false
	}
	defer f.Close()
	buf := make([]byte, n)
	k, _ := f.ReadAt(buf, from)
	buf = buf[:k]
	more := from+int64(k) < to
	if more {
		if i := strings.LastIndexByte(string(buf), '\n'); i >= 0 {
			buf = buf[:i+1]
		} else {
			buf = trimRuneEnd(buf)
		}
	}
	l.mu.Lock()
	l.readPos = from + int64(len(buf))
	l.mu.Unlock()
	return string(buf), more
}
