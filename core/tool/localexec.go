package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Defaults of LocalExec.
const (
	defaultOutputLimit = 30_000
	// killGrace is how long the process group gets between SIGTERM and
	// SIGKILL on cancel or timeout; with the final group SIGKILL it keeps the
	// whole kill well under 2 s.
	killGrace = time.Second
)

// LocalExec returns the Executor that runs commands on this machine:
// /bin/bash -c in a new session (so in its own process group, and without
// the controlling terminal: ssh, sudo or git cannot block on a password
// prompt on /dev/tty), stdin /dev/null, stdout and stderr merged into one
// bounded head-and-tail buffer. Cancel and timeout signal the whole group
// (SIGTERM, then SIGKILL after a grace second), grandchildren included; when
// the command ends, whatever it left running in its group is killed too, so
// nothing outlives the call.
func LocalExec() Executor { return localExec{} }

type localExec struct{}

func (localExec) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
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
	env := req.Env
	if env == nil {
		env = ScrubEnv(os.Environ())
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if req.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, req.Timeout)
	}
	defer cancel()

	out := newHeadTail(limit)
	req.Env = env
	cmd := bashCommand(runCtx, req)
	var sink io.Writer = out
	if req.Spill != nil {
		sink = io.MultiWriter(out, req.Spill)
	}
	cmd.Stdout = sink
	cmd.Stderr = sink
	cmd.Cancel = func() error {
		// The whole group, not just bash: grandchildren must go too.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	// After the grace, os/exec kills the leader and closes the pipes so Wait
	// cannot hang on a grandchild holding them; the group SIGKILL below
	// takes care of the rest.
	cmd.WaitDelay = killGrace

	if err := cmd.Start(); err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("start /bin/bash: %w", err)
	}
	pgid := cmd.Process.Pid
	waitErr := cmd.Wait()
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // stragglers; ESRCH is fine
	reapGroup(pgid)

	res := ExecResult{Output: out.String(), Truncated: out.truncated(), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if runCtx.Err() != nil {
		res.TimedOut = true
		return res, nil
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
			return res, fmt.Errorf("run command: %w", waitErr)
		}
	}
	return res, nil
}

// bashCommand is the one way a command line becomes a process, for bash
// calls and background jobs alike: /bin/bash -c in the workdir, with the
// request's environment, stdin /dev/null, in a new session (its own
// process group, no controlling terminal). Whatever contains commands
// contains both by construction.
func bashCommand(ctx context.Context, req ExecRequest) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/bin/bash", "-c", req.Command)
	cmd.Dir = req.Workdir
	cmd.Env = req.Env
	if cmd.Env == nil {
		cmd.Env = ScrubEnv(os.Environ())
	}
	cmd.Stdin = nil // /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
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

// reapGroup collects the zombies of a killed process group. Orphaned
// grandchildren are reparented to the nearest subreaper: when this process
// is one (BecomeSubreaper), they are our children and only we can reap
// them, so the group truly disappears; otherwise wait4 says ECHILD at once
// and init reaps them. Waiting on -pgid never touches other children.
func reapGroup(pgid int) {
	deadline := time.Now().Add(killGrace)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil: // ECHILD: none of ours left in the group
			return
		case pid > 0:
			continue
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
