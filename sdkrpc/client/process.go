package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dsh-dev/dsh/core/proc"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// Close ladder defaults, the original's (spec §3.2).
const (
	DefaultEOFGrace  = 6 * time.Second
	DefaultTermGrace = 3 * time.Second
	DefaultKillGrace = 3 * time.Second
	// DefaultStderrTailLines is how many stderr lines errors carry.
	DefaultStderrTailLines = 400
)

// Config describes a runtime to spawn.
type Config struct {
	// Command is the argv, e.g. {"dsh", "sdk"}; Command[0] is looked up
	// in PATH when it has no separator.
	Command []string
	// Env is the child's whole environment; nil inherits the host's.
	Env []string
	// Dir is the child's working directory; empty inherits the host's.
	Dir string
	// Stderr, if set, also receives the child's stderr as it is written.
	// A slow writer slows the child.
	Stderr io.Writer
	// StderrTailLines is how many stderr lines to keep for errors (0:
	// DefaultStderrTailLines).
	StderrTailLines int
	// The close ladder: after shutdown, stdin is closed and the process has
	// EOFGrace to exit; then SIGTERM and TermGrace (skipped on Windows);
	// then SIGKILL and KillGrace, after which Close reports failure. Zero
	// values take the defaults; tests use short ones.
	EOFGrace, TermGrace, KillGrace time.Duration

	Options
}

// process is a spawned runtime: a core/proc child with stdio pipes, and
// its close ladder.
type process struct {
	p      *proc.Process
	ladder proc.Ladder
}

// Spawn starts the runtime and returns a client connected to its stdin and
// stdout. It does not initialize (see Start). ctx bounds only the start;
// the process lives until Close.
func Spawn(ctx context.Context, cfg Config) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("spawn runtime: %w", err)
	}
	p, err := startProcess(cfg)
	if err != nil {
		return nil, err
	}
	in, out := p.p.Stdin(), p.p.Stdout()
	return newClient(out, in, multiCloser{in, out}, p, cfg.Options), nil
}

// Start spawns the runtime and initializes it with init. On any failure the
// runtime is closed (and reaped) and the error returned; a *ResponseError
// from initialize stays reachable with errors.As.
func Start(ctx context.Context, cfg Config, init protocol.InitializeParams) (*Client, protocol.InitializeResult, error) {
	c, err := Spawn(ctx, cfg)
	if err != nil {
		return nil, protocol.InitializeResult{}, err
	}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeBudget(cfg))
		defer cancel()
		if cerr := c.Close(cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
		var tce *TransportClosedError
		if tail := c.StderrTail(); len(tail) > 0 && !errors.As(err, &tce) {
			err = fmt.Errorf("%w\nstderr tail:\n%s", err, joinLines(tail))
		}
		return nil, res, err
	}
	return c, res, nil
}

func closeBudget(cfg Config) time.Duration {
	d := cfg.ShutdownTimeout + cfg.EOFGrace + cfg.TermGrace + cfg.KillGrace
	if d <= 0 {
		d = DefaultShutdownTimeout + DefaultEOFGrace + DefaultTermGrace + DefaultKillGrace
	}
	return d + time.Second
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
}

func startProcess(cfg Config) (*process, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, ErrNoCommand
	}
	n := cfg.StderrTailLines
	if n <= 0 {
		n = DefaultStderrTailLines
	}
	// Its own process group and a parent-death signal: the close ladder
	// reaches the runtime's tools too, and a SIGKILLed host takes the
	// runtime with it.
	p, err := proc.Start(proc.Config{
		Argv: cfg.Command, Env: cfg.Env, Dir: cfg.Dir, Pipes: true,
		Stderr: cfg.Stderr, TailLines: n,
		Logger: cfg.Logger, Name: "sdk client: runtime",
	})
	if err != nil {
		return nil, fmt.Errorf("spawn error: %w", err)
	}
	return &process{p: p, ladder: proc.Ladder{
		EOF:  orDefault(cfg.EOFGrace, DefaultEOFGrace),
		Term: orDefault(cfg.TermGrace, DefaultTermGrace),
		Kill: orDefault(cfg.KillGrace, DefaultKillGrace),
	}}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// exited is closed once the runtime has been reaped.
func (p *process) exited() <-chan struct{} { return p.p.Done() }

// describe fills e with the exit status (if exited) and the stderr tail.
func (p *process) describe(e *TransportClosedError) {
	if st := p.p.State(); st != nil {
		e.Exited = true
		e.ExitCode = st.ExitCode()
		if sig, ok := proc.Signaled(st); ok {
			e.Signal = sig.String()
		}
	}
	e.StderrTail = p.p.StderrTail()
}

// stop runs the ladder after shutdown: stdin EOF → SIGTERM → SIGKILL, to
// the runtime's whole process group. Its failure reads as the original's.
func (p *process) stop(ctx context.Context) error {
	err := p.p.Stop(ctx, p.ladder)
	return stopMessage(err)
}

func stopMessage(err error) error {
	var ne *proc.NotExitedError
	if !errors.As(err, &ne) {
		return err
	}
	how := "accepted"
	if ne.KillErr != nil {
		how = "refused"
	}
	return fmt.Errorf("runtime process did not exit within %dms after SIGKILL was %s", ne.Waited.Milliseconds(), how)
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for _, c := range m {
		if err := c.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
