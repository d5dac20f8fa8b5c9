package subagent

import (
	"bytes"
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
)

// proc is a child process with our own stdin/stdout pipes, a bounded tail
// of its stderr, and a goroutine that reaps it. It runs in its own process
// group so the close ladder reaches the whole tree (an agent's tools).
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File // our write end
	stdout *os.File // our read end
	tail   *tailBuf
	exited chan struct{} // closed once reaped
	state  *os.ProcessState
}

// startProc starts argv in dir with env.
func startProc(argv, env []string, dir string) (*proc, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("no command to run")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	setProcessGroup(cmd)
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
	p := &proc{cmd: cmd, stdin: inW, stdout: outR, tail: newTailBuf(40), exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.tail
	// A grandchild that keeps stderr open must not keep Wait from
	// returning after the child exits.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	inR.Close()
	outW.Close()
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// describe says how the process ended (or that it runs) and shows the end
// of its stderr.
func (p *proc) describe() string {
	var b strings.Builder
	select {
	case <-p.exited:
		ws, ok := p.state.Sys().(syscall.WaitStatus)
		switch {
		case ok && ws.Signaled():
			fmt.Fprintf(&b, "the process was killed by signal %s", ws.Signal())
		default:
			fmt.Fprintf(&b, "the process exited with code %d", p.state.ExitCode())
		}
	default:
		b.WriteString("the process is still running")
	}
	if lines := p.tail.lines(); len(lines) > 0 {
		b.WriteString("; its stderr ended with:\n")
		b.WriteString(strings.Join(lines, "\n"))
	}
	return b.String()
}

// stop runs the close ladder: stdin EOF and l.eof, SIGTERM to the group and
// l.term, SIGKILL to the group and l.kill. A done ctx skips to SIGKILL.
// The process is always reaped unless even SIGKILL did not end it.
func (p *proc) stop(ctx context.Context, l ladder) error {
	_ = p.stdin.Close()
	defer func() {
		// Stragglers of the group (tools the agent started) go too, and
		// our read end is closed so the connection's reader ends.
		signalGroup(p.cmd, syscall.SIGKILL)
		_ = p.stdout.Close()
	}()
	if p.await(ctx, l.eof) {
		return nil
	}
	if ctx.Err() == nil {
		signalGroup(p.cmd, syscall.SIGTERM)
		if p.await(ctx, l.term) {
			return nil
		}
	}
	signalGroup(p.cmd, syscall.SIGKILL)
	if p.await(context.Background(), l.kill) {
		return nil
	}
	return fmt.Errorf("child process %d did not exit within %v after SIGKILL", p.pid(), l.kill)
}

func (p *proc) await(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return !p.alive()
	}
}

// tailBuf keeps the last n lines written to it, each capped, for error
// reports.
type tailBuf struct {
	mu      sync.Mutex
	n       int
	buf     []string
	partial []byte
}

const maxTailLine = 2 << 10

func newTailBuf(n int) *tailBuf { return &tailBuf{n: n} }

func (t *tailBuf) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if room := maxTailLine - len(t.partial); room > 0 {
			t.partial = append(t.partial, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		t.push(string(bytes.TrimRight(t.partial, "\r")))
		t.partial = t.partial[:0]
		b = b[i+1:]
	}
	return n, nil
}

func (t *tailBuf) push(line string) {
	t.buf = append(t.buf, line)
	if len(t.buf) > t.n {
		t.buf = t.buf[len(t.buf)-t.n:]
	}
}

// lines returns the kept lines, at most the last 10, for a diagnostic.
func (t *tailBuf) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.buf...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	if len(out) > 10 {
		out = out[len(out)-10:]
	}
	return out
}

var _ io.Writer = (*tailBuf)(nil)

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
