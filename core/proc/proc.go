package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Ladder is how a child is closed: stdin EOF and EOF to exit, then SIGTERM
// to its group and Term, then SIGKILL to its group and Kill, after which
// Stop gives up. A zero EOF skips the EOF step (for children that read
// nothing); a zero Term goes straight to SIGKILL.
type Ladder struct {
	EOF, Term, Kill time.Duration
}

// DefaultLadder is the original's close ladder (6 s, 3 s, 3 s).
var DefaultLadder = Ladder{EOF: 6 * time.Second, Term: 3 * time.Second, Kill: 3 * time.Second}

// Config describes a child to start.
type Config struct {
	// Argv is the command; Argv[0] is looked up in PATH when it has no
	// separator.
	Argv []string
	// Env is the child's whole environment; nil inherits ours.
	Env []string
	// Dir is the child's working directory; empty inherits ours.
	Dir string

	// Pipes gives the child a stdin and a stdout pipe whose other ends are
	// Process.Stdin and Process.Stdout (passed as *os.File, so no copying
	// goroutine sits between, and reaping never closes our read end before
	// the last bytes are read). Without it, Stdin and Stdout are used.
	Pipes bool
	// Stdin and Stdout when Pipes is false; nil is /dev/null.
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr, if set, receives the child's stderr as it is written (a slow
	// writer slows the child); the tail keeps its last lines either way.
	Stderr io.Writer
	// TailLines and TailLineBytes size the stderr tail (0: the defaults).
	// A negative TailLines keeps no tail and passes Stderr to the child
	// unchanged, so Stderr == Stdout shares one pipe and keeps the order.
	TailLines, TailLineBytes int

	// NewSession starts the child in a session of its own (setsid) rather
	// than only a process group of its own: it then has no controlling
	// terminal, so nothing it runs can block on a /dev/tty prompt.
	NewSession bool
	// ParentDeathSignal is sent to the child by the kernel when dsh dies
	// (Linux; 0 means SIGKILL). The reaper asks for SIGTERM so it can end
	// its command's whole tree before it goes.
	ParentDeathSignal syscall.Signal
	// Cloneflags are namespaces (CLONE_NEW*) to start the child in, Linux
	// only (the sandbox of root: a non-dumpable dsh cannot map a user
	// namespace for its child; the reaper does that, see ReaperStart).
	Cloneflags uintptr
	// Reaped runs the child under the reaper named by UseReaper (when one
	// is): what the child detaches (setsid, a double fork) is adopted and
	// reaped there instead of lingering as a zombie of ours or escaping to
	// PID 1, and the whole tree ends when the child exits, when Stop sends
	// SIGTERM (reaperGrace, then SIGKILL — shorter than any ladder's Term
	// step), or when dsh dies, SIGKILL included (the reaper's parent-death
	// signal is SIGTERM). Process.Pid is then the reaper's.
	Reaped bool
	// WaitDelay bounds how long reaping waits for the stdio copiers after
	// the child exited, when a grandchild still holds them (0: 1 s).
	WaitDelay time.Duration

	// Logger receives the ladder's steps at Warn (nil: none); Name says
	// what the child is in those lines ("sdk client: runtime").
	Logger *slog.Logger
	Name   string
}

// Process is a started child: its pipes, its stderr tail, and the
// goroutine that reaps it.
type Process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our write end (Pipes)
	stdout *os.File // our read end (Pipes)
	tail   *Tail
	log    *slog.Logger
	name   string

	done    chan struct{} // closed once reaped
	state   *os.ProcessState
	waitErr error
}

// ErrNoCommand is returned by Start for an empty Argv.
var ErrNoCommand = errors.New("no command to run")

// Start starts the child described by cfg. The child runs until it exits
// or Stop ends it; one goroutine reaps it.
func Start(cfg Config) (*Process, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, ErrNoCommand
	}
	if cfg.Reaped {
		var err error
		if cfg, err = underReaper(cfg); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Env, cmd.Dir = cfg.Env, cfg.Dir
	cmd.SysProcAttr = sysProcAttr(cfg.NewSession, cfg.ParentDeathSignal)
	setNamespaces(cmd.SysProcAttr, cfg.Cloneflags, false)
	cmd.WaitDelay = cfg.WaitDelay
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = time.Second
	}
	p := &Process{cmd: cmd, tail: NewTail(cfg.TailLines, cfg.TailLineBytes), log: cfg.Logger,
		name: cfg.Name, done: make(chan struct{})}
	if p.name == "" {
		p.name = "child process"
	}
	switch {
	case cfg.TailLines < 0: // no tail: Stderr as given (== Stdout merges them)
		cmd.Stderr = cfg.Stderr
	case cfg.Stderr != nil:
		cmd.Stderr = io.MultiWriter(p.tail, cfg.Stderr)
	default:
		cmd.Stderr = p.tail
	}
	var theirs []*os.File // the child's ends, closed once it has them
	if cfg.Pipes {
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			return nil, fmt.Errorf("stdout pipe: %w", err)
		}
		cmd.Stdin, cmd.Stdout = inR, outW
		p.stdin, p.stdout = inW, outR
		theirs = []*os.File{inR, outW}
	} else {
		cmd.Stdin, cmd.Stdout = cfg.Stdin, cfg.Stdout
	}
	err := cmd.Start()
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		if cfg.Pipes {
			p.stdin.Close()
			p.stdout.Close()
		}
		return nil, fmt.Errorf("start %s: %w", cfg.Argv[0], err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdin is our write end of the child's stdin (Config.Pipes), else nil.
// Closing it is the first step of the ladder; Stop closes it.
func (p *Process) Stdin() *os.File { return p.stdin }

// Stdout is our read end of the child's stdout (Config.Pipes), else nil.
// The caller closes it when done reading.
func (p *Process) Stdout() *os.File { return p.stdout }

// Done is closed once the child has been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Running reports whether the child has not been reaped yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// State is how the child ended; nil until Done is closed.
func (p *Process) State() *os.ProcessState {
	if p.Running() {
		return nil
	}
	return p.state
}

// WaitErr is what reaping reported (an *exec.ExitError for a non-zero
// exit, exec.ErrWaitDelay when a grandchild held the stdio); nil until
// Done is closed.
func (p *Process) WaitErr() error {
	if p.Running() {
		return nil
	}
	return p.waitErr
}

// StderrTail returns the last lines the child wrote to stderr.
func (p *Process) StderrTail() []string { return p.tail.Lines() }

// Signal sends sig to the child's whole process group. The group outlives
// its leader only while members remain, so its id cannot have been reused
// by an unrelated group. A group that is gone is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	return signalGroup(p.Pid(), sig)
}

// Describe says how the child ended (or that it still runs) and shows the
// last lines of its stderr (at most lines of them).
func (p *Process) Describe(lines int) string {
	var b strings.Builder
	if st := p.State(); st == nil {
		b.WriteString("the process is still running")
	} else if sig, ok := Signaled(st); ok {
		fmt.Fprintf(&b, "the process was killed by signal %s", sig)
	} else {
		fmt.Fprintf(&b, "the process exited with code %d", st.ExitCode())
	}
	tail := p.StderrTail()
	if len(tail) > lines {
		tail = tail[len(tail)-lines:]
	}
	if len(tail) > 0 {
		b.WriteString("; its stderr ended with:\n")
		b.WriteString(strings.Join(tail, "\n"))
	}
	return b.String()
}

// Signaled reports the signal that ended st, if one did.
func Signaled(st *os.ProcessState) (syscall.Signal, bool) {
	if st == nil {
		return 0, false
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return ws.Signal(), true
}

// NotExitedError is Stop's error when even SIGKILL did not end the child
// within Ladder.Kill.
type NotExitedError struct {
	Pid    int
	Waited time.Duration
	// KillErr is why the SIGKILL was refused, nil when it was accepted.
	KillErr error
}

func (e *NotExitedError) Error() string {
	how := "accepted"
	if e.KillErr != nil {
		how = "refused: " + e.KillErr.Error()
	}
	return fmt.Sprintf("process %d did not exit within %v after SIGKILL (%s)", e.Pid, e.Waited, how)
}

// Stop runs the close ladder l and returns once the child is reaped: stdin
// EOF (with Pipes) and l.EOF, SIGTERM to the group and l.Term, SIGKILL to
// the group and l.Kill. A done ctx skips straight to SIGKILL. Whatever is
// left of the group after the child is gone (tools it started) is killed,
// and those of them that are our children (we are a subreaper) reaped.
// Stop is safe to call more than once and concurrently with Done.
func (p *Process) Stop(ctx context.Context, l Ladder) error {
	defer p.sweep()
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	if l.EOF > 0 && p.await(ctx, l.EOF) {
		return nil
	}
	if ctx.Err() == nil && l.Term > 0 && p.Running() {
		p.warn("did not exit; sending SIGTERM", "waited", l.EOF)
		if err := p.Signal(syscall.SIGTERM); err != nil {
			p.warn("SIGTERM failed", "err", err)
		}
		if p.await(ctx, l.Term) {
			return nil
		}
	}
	if !p.Running() {
		return nil
	}
	p.warn("still running; sending SIGKILL")
	killErr := p.Signal(syscall.SIGKILL)
	if killErr != nil {
		p.warn("SIGKILL failed", "err", killErr)
	}
	if p.await(context.Background(), l.Kill) {
		return nil
	}
	return &NotExitedError{Pid: p.Pid(), Waited: l.Kill, KillErr: killErr}
}

// sweep kills and reaps what is left of the group once the leader is gone.
func (p *Process) sweep() {
	if p.Running() {
		return
	}
	_ = p.Signal(syscall.SIGKILL)
	ReapGroup(p.Pid())
}

func (p *Process) warn(msg string, args ...any) {
	if p.log != nil {
		p.log.Warn(p.name+": "+msg, append([]any{"pid", p.Pid()}, args...)...)
	}
}

// await waits up to d for the child to be reaped; false on timeout or
// when ctx ends first.
func (p *Process) await(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return !p.Running()
	}
}

// Isolate applies the spawn rules of Start to a command started by other
// code (the MCP SDK's CommandTransport takes an *exec.Cmd): a process
// group of its own and the parent-death signal. Call it before cmd.Start;
// it replaces cmd.SysProcAttr. Pair it with KillGroup to end the tree.
func Isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = sysProcAttr(false, 0)
}

// KillGroup sends sig to process group pgid (a child started by Start or
// Isolate has pgid == its pid); a group that is gone is not an error.
func KillGroup(pgid int, sig syscall.Signal) error { return signalGroup(pgid, sig) }
