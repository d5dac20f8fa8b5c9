package subagent

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core/proc"
)

// childProc is an agent child process (core/proc): our stdin/stdout
// pipes, a bounded stderr tail, its own process group so the close ladder
// reaches the whole tree (an agent's tools), and a parent-death signal so
// it dies with a SIGKILLed dsh.
type childProc struct {
	*proc.Process
	stdin  *os.File // our write end
	stdout *os.File // our read end
}

// startProc starts argv in dir with env.
func startProc(argv, env []string, dir string) (*childProc, error) {
	p, err := proc.Start(proc.Config{Argv: argv, Env: env, Dir: dir, Pipes: true, Reaped: true, TailLines: 40, TailLineBytes: 2 << 10})
	if err != nil {
		return nil, err
	}
	return &childProc{Process: p, stdin: p.Stdin(), stdout: p.Stdout()}, nil
}

func (p *childProc) pid() int { return p.Pid() }

func (p *childProc) alive() bool { return p.Running() }

// describe says how the process ended (or that it runs) and shows the end
// of its stderr.
func (p *childProc) describe() string { return p.Describe(10) }

// stop runs the close ladder: stdin EOF and l.eof, SIGTERM to the group and
// l.term, SIGKILL to the group and l.kill. A done ctx skips to SIGKILL.
// Our read end is closed after, so the connection's reader ends.
func (p *childProc) stop(ctx context.Context, l ladder) error {
	defer p.stdout.Close()
	return p.Stop(ctx, proc.Ladder{EOF: l.eof, Term: l.term, Kill: l.kill})
}

func (p *childProc) await(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.Done():
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return !p.alive()
	}
}

// gatedReader holds reads until open is called. The ACP SDK starts reading
// inside its constructor, before the caller can configure the connection
// (SetLogger) — a data race if the peer speaks first; the gate closes it.
type gatedReader struct {
	r    io.Reader
	gate chan struct{}
	once sync.Once
}

func newGatedReader(r io.Reader) *gatedReader {
	return &gatedReader{r: r, gate: make(chan struct{})}
}

func (g *gatedReader) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}
