package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/core/proc"
	"github.com/dsh-dev/dsh/core/sandbox"
)

// Defaults of LocalExec.
const (
	defaultOutputLimit = 30_000
	// killGrace is how long the process group gets between SIGTERM and
	// SIGKILL on cancel or timeout; with the final group SIGKILL it keeps the
	// whole kill well under 2 s.
	killGrace = time.Second
)

// LocalExec returns the Executor that runs commands on this machine
// directly: /bin/bash -c in a new session (so in its own process group,
// and without the controlling terminal: ssh, sudo or git cannot block on a
// password prompt on /dev/tty), stdin /dev/null, stdout and stderr merged
// into one bounded head-and-tail buffer. Cancel and timeout signal the
// whole group (SIGTERM, then SIGKILL after a grace second); when the
// command ends, whatever it left running in its group is killed too. What
// left the group (setsid, a daemon) is reached only with a reaper: use
// LocalExecWith, as the dsh binary does.
func LocalExec() Executor { return localExec{} }

// LocalExecOptions configure LocalExecWith.
type LocalExecOptions struct {
	// Reaper is the path of a binary that dispatches proc.ReaperArg (the
	// dsh binary itself). Each command then runs under it: a child
	// subreaper that ends every descendant of the command however it
	// detached, when the command ends, on cancel and timeout, and when dsh
	// dies. Empty runs bash directly (LocalExec).
	Reaper string
	// Sandbox contains each command (needs Reaper): see core/sandbox. Nil
	// runs commands unconfined.
	Sandbox *sandbox.Sandbox
}

// LocalExecWith is LocalExec with options. Every command the model runs,
// bash calls and background jobs (NewJobs takes this executor) alike,
// starts through its startBash, so what the options add holds for all.
func LocalExecWith(o LocalExecOptions) Executor { return localExec{o} }

type localExec struct{ o LocalExecOptions }

// localOptions are the options of ex when it is a local executor (the
// zero options otherwise: jobs always run locally).
func localOptions(ex Executor) LocalExecOptions {
	if l, ok := ex.(localExec); ok {
		return l.o
	}
	return LocalExecOptions{}
}

func (e localExec) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if strings.TrimSpace(req.Command) == "" {
		return ExecResult{ExitCode: -1}, errors.New("command is empty")
	}
	if err := ctx.Err(); err != nil {
		return ExecResult{ExitCode: -1}, err
	}
	limit := req.OutputLimit
	if limit <= 0 {
		limit = defaultOutputLimit
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if req.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, req.Timeout)
	}
	defer cancel()

	out := newHeadTail(limit)
	var tee io.Writer = out
	if req.Spill != nil {
		tee = io.MultiWriter(out, req.Spill)
	}
	sink := &switchWriter{w: tee}
	p, ladder, err := startBash(req, e.o, sink)
	if err != nil {
		return ExecResult{ExitCode: -1}, err
	}
	var yield <-chan time.Time
	if req.YieldAfter > 0 && req.Jobs != nil {
		t := time.NewTimer(req.YieldAfter)
		defer t.Stop()
		yield = t.C
	}
wait:
	select {
	case <-p.Done():
	case <-runCtx.Done():
	case <-yield:
		id, err := req.Jobs.adopt(req, p, ladder, sink)
		if err != nil {
			yield = nil // no room for another job: wait on as a call does
			goto wait
		}
		return ExecResult{Output: out.String(), Truncated: out.truncated(), ExitCode: -1, JobID: id}, nil
	}
	// On cancel or timeout this is the ladder; after a normal exit it only
	// kills and reaps what is left of the group.
	stopErr := p.Stop(context.Background(), ladder)

	res := ExecResult{Output: out.String(), Truncated: out.truncated(), ExitCode: -1}
	if st := p.State(); st != nil {
		res.ExitCode = st.ExitCode()
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if runCtx.Err() != nil {
		res.TimedOut = true
		return res, nil
	}
	if stopErr != nil {
		return res, fmt.Errorf("run command: %w", stopErr)
	}
	if waitErr := p.WaitErr(); waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
			return res, fmt.Errorf("run command: %w", waitErr)
		}
	}
	return res, nil
}

// switchWriter is a command's output sink that can be pointed elsewhere
// while the command runs: a yielded command's output goes on into its
// job's log.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// point sends all later output to w.
func (s *switchWriter) point(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

// startBash is the one way a command line becomes a process, for bash
// calls and background jobs alike: /bin/bash -c in the workdir, with the
// request's environment (scrubbed when nil), stdin /dev/null, stdout and
// stderr both to out, in a new session (its own process group, no
// controlling terminal), under the reaper when o names one. It returns the
// ladder that ends it: without a reaper, SIGTERM to bash's group and
// SIGKILL killGrace later; with one, the reaper owns that grace for the
// whole tree and our SIGKILL is only a backstop.
func startBash(req ExecRequest, o LocalExecOptions, out io.Writer) (*proc.Process, proc.Ladder, error) {
	return startShell(req, o, nil, out, out)
}

// startShell is startBash with the command's stdin (nil: /dev/null) and
// its stderr apart from its stdout (hooks read both).
func startShell(req ExecRequest, o LocalExecOptions, stdin io.Reader, stdout, stderr io.Writer) (*proc.Process, proc.Ladder, error) {
	env := req.Env
	if env == nil {
		env = NonInteractive(CommandEnv(os.Environ(), nil))
	}
	argv := []string{"/bin/bash", "-c", req.Command}
	ladder := proc.Ladder{Term: killGrace, Kill: killGrace}
	var plan sandbox.Command
	if o.Reaper != "" {
		var err error
		if plan, err = o.Sandbox.Plan(req.Scope); err != nil {
			return nil, ladder, err
		}
		ladder.Term = 2 * killGrace
	}
	for {
		cfg := proc.Config{
			Argv: argv, Env: append(env, plan.Env...), Dir: req.Workdir,
			Stdin: stdin, Stdout: stdout, Stderr: stderr, TailLines: -1, // one pipe when the same, output in order
			NewSession:        true,
			ParentDeathSignal: syscall.SIGTERM, // the reaper ends its tree; bash just goes
			Cloneflags:        plan.Cloneflags,
			// After exit, stop waiting for a grandchild holding the pipe (only
			// possible without the reaper; the group SIGKILL then ends it).
			WaitDelay: killGrace,
		}
		if o.Reaper != "" {
			cfg.Argv = proc.ReaperArgv(o.Reaper, killGrace, plan.Policy, argv...)
		}
		p, err := proc.Start(cfg)
		if err == nil {
			return p, ladder, nil
		}
		// Namespaces refused at run time (a container without the right):
		// auto goes on with Landlock alone, required fails.
		next, ok := o.Sandbox.Fallback(plan, err)
		if !ok {
			if plan.Cloneflags != 0 {
				return nil, ladder, fmt.Errorf("%w: starting the sandboxed command: %v", sandbox.ErrCannotContain, err)
			}
			return nil, ladder, fmt.Errorf("start /bin/bash: %w", err)
		}
		plan = next
	}
}

// ScrubEnv returns environ without credentials: DEEPSEEK_API_KEY,
// OPENAI_API_KEY and every variable whose name ends in _TOKEN, _SECRET,
// _KEY (so also _API_KEY) or _PASSWORD, compared case-insensitively. A
// command the model runs must never see the keys the runtime holds.
func ScrubEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if isCredential(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func isCredential(name string) bool {
	n := strings.ToUpper(name)
	switch n {
	case "DEEPSEEK_API_KEY", "OPENAI_API_KEY":
		return true
	}
	for _, suf := range []string{"_TOKEN", "_SECRET", "_KEY", "_PASSWORD"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}
