package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

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

// process is a spawned runtime: its pipes, its stderr tail, and the
// goroutine that reaps it.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our write end
	stdout *os.File // our read end
	tail   *lineTail

	eofGrace, termGrace, killGrace time.Duration

	exited chan struct{} // closed after cmd.Wait returned
	state  *os.ProcessState
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
	return newClient(p.stdout, p.stdin, multiCloser{p.stdin, p.stdout}, p, cfg.Options), nil
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
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = cfg.Env
	cmd.Dir = cfg.Dir
	// Our own pipes for stdin/stdout, passed as *os.File so exec starts no
	// copying goroutine and cmd.Wait never closes our read end: with
	// StdoutPipe, reaping could close stdout before we read the last frames.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("spawn error: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("spawn error: stdout pipe: %w", err)
	}
	n := cfg.StderrTailLines
	if n <= 0 {
		n = DefaultStderrTailLines
	}
	tail := newLineTail(n)
	cmd.Stdin, cmd.Stdout = inR, outW
	if cfg.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, cfg.Stderr)
	} else {
		cmd.Stderr = tail
	}
	// Stderr goes through exec's copier; if a grandchild keeps it open,
	// Wait gives up on it this long after the runtime exits.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("spawn error: %w", err)
	}
	inR.Close()
	outW.Close()
	p := &process{
		cmd: cmd, stdin: inW, stdout: outR, tail: tail,
		eofGrace: orDefault(cfg.EOFGrace, DefaultEOFGrace), termGrace: orDefault(cfg.TermGrace, DefaultTermGrace),
		killGrace: orDefault(cfg.KillGrace, DefaultKillGrace),
		exited:    make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// describe fills e with the exit status (if exited) and the stderr tail.
func (p *process) describe(e *TransportClosedError) {
	select {
	case <-p.exited:
		e.Exited = true
		e.ExitCode = p.state.ExitCode()
		if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	default:
	}
	e.StderrTail = p.tail.Lines()
}

// stop runs the ladder after shutdown: stdin EOF → SIGTERM → SIGKILL.
func (p *process) stop(ctx context.Context, log *slog.Logger) error {
	_ = p.stdin.Close()
	if p.await(ctx, p.eofGrace) {
		return nil
	}
	if ctx.Err() == nil && runtime.GOOS != "windows" {
		log.Warn("sdk client: runtime did not exit after stdin closed; sending SIGTERM",
			"pid", p.cmd.Process.Pid, "waited", p.eofGrace)
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			log.Warn("sdk client: SIGTERM failed", "err", err)
		}
		if p.await(ctx, p.termGrace) {
			return nil
		}
	}
	log.Warn("sdk client: runtime still running; sending SIGKILL", "pid", p.cmd.Process.Pid)
	how := "accepted"
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		how = "refused"
		log.Warn("sdk client: SIGKILL failed", "err", err)
	}
	if p.await(context.Background(), p.killGrace) {
		return nil
	}
	return fmt.Errorf("runtime process did not exit within %dms after SIGKILL was %s", p.killGrace.Milliseconds(), how)
}

// await waits up to d for the process to be reaped; false on timeout or
// when ctx ends first.
func (p *process) await(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		select {
		case <-p.exited:
			return true
		default:
			return false
		}
	}
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

// lineTail keeps the last max lines written to it; each line is capped at
// maxTailLineBytes so a runaway line cannot hold unbounded memory.
type lineTail struct {
	mu      sync.Mutex
	max     int
	lines   []string // ring
	next    int
	full    bool
	partial []byte
	cut     bool // partial was truncated
}

const maxTailLineBytes = 8 << 10

func newLineTail(max int) *lineTail {
	return &lineTail{max: max, lines: make([]string, max)}
}

func (t *lineTail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if room := maxTailLineBytes - len(t.partial); len(chunk) > room {
			chunk = chunk[:max(room, 0)]
			t.cut = true
		}
		t.partial = append(t.partial, chunk...)
		if i < 0 {
			break
		}
		t.push()
		b = b[i+1:]
	}
	return n, nil
}

func (t *lineTail) push() {
	line := string(bytes.TrimSuffix(t.partial, []byte{'\r'}))
	if t.cut {
		line += " …[line truncated]"
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % t.max
	if t.next == 0 {
		t.full = true
	}
	t.partial, t.cut = t.partial[:0], false
}

// Lines returns the kept lines, oldest first, including an unfinished last
// line.
func (t *lineTail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	if t.full {
		out = append(out, t.lines[t.next:]...)
	}
	out = append(out, t.lines[:t.next]...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
		if len(out) > t.max {
			out = out[1:]
		}
	}
	return out
}
