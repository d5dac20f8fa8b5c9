package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/core/tool"
)

// Grace periods of a stdio server's stop: stdin is closed first (the MCP
// way to ask a server to exit), then the process group gets SIGTERM, then
// SIGKILL. Together they keep a session's close under about 2 s.
const (
	stdinGrace = 1 * time.Second
	termGrace  = 800 * time.Millisecond
)

// stdioProc is one stdio server's process: its own process group, its
// stdin and stdout as plain pipes, stderr kept in a small ring for
// diagnostics.
type stdioProc struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *ring
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's error, valid after exited
	stop   sync.Once
}

// serverEnv is the environment of a stdio server: ours without credentials
// and without dsh's own DSH_* settings, plus what the server's entry sets.
func serverEnv(extra []KV) []string {
	var env []string
	for _, kv := range tool.ScrubEnv(os.Environ()) {
		if strings.HasPrefix(kv, "DSH_") {
			continue
		}
		env = append(env, kv)
	}
	for _, kv := range extra {
		env = append(env, kv.Name+"="+kv.Value)
	}
	return env
}

// lookCommand resolves the server's command as a shell would, using the
// PATH of the server's environment; a relative path with a slash is taken
// from the session's workspace.
func lookCommand(command, cwd string, env []string) (string, error) {
	if strings.ContainsRune(command, '/') {
		p := command
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if fi, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("command %q not found: %w", command, err)
		} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("command %q is not an executable file", command)
		}
		return p, nil
	}
	path := ""
	for i := len(env) - 1; i >= 0; i-- {
		if strings.HasPrefix(env[i], "PATH=") {
			path = env[i][len("PATH="):]
			break
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found on PATH", command)
}

// startStdio starts the server's process and returns the transport the
// SDK client speaks over.
func startStdio(c ServerConfig, cwd string, noise func(string)) (*stdioProc, sdk.Transport, error) {
	env := serverEnv(c.Env)
	path, err := lookCommand(c.Command, cwd, env)
	if err != nil {
		return nil, nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	p := &stdioProc{stdin: inW, stdout: outR, stderr: newRing(8 << 10), exited: make(chan struct{})}
	cmd := exec.Command(path, c.Args...)
	cmd.Args[0] = c.Command
	cmd.Dir = cwd
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second // stderr copying must not outlive the process for long
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, nil, fmt.Errorf("starting %s: %w", c.Command, err)
	}
	inR.Close()
	outW.Close()
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	pr, pw := io.Pipe()
	go func() {
		filterFrames(outR, pw, maxFrame, noise)
		outR.Close()
	}()
	return p, &sdk.IOTransport{Reader: pr, Writer: inW, MaxLineLength: maxFrame + 64}, nil
}

// exitText says how the process ended, with the end of its stderr.
func (p *stdioProc) exitText() string {
	s := "the process exited"
	if p.err != nil {
		s = "the process ended: " + p.err.Error()
	}
	if t := strings.TrimSpace(p.stderr.String()); t != "" {
		s += "; its stderr ends with: " + short(lastLines(t, 5), 600)
	}
	return s
}

// kill stops the process group: stdin closed, a grace period, SIGTERM, a
// grace period, SIGKILL; and, once the leader is gone, SIGKILL again for
// whatever it left in its group. It returns when the leader is reaped or
// ctx ends.
func (p *stdioProc) kill(ctx context.Context) error {
	var err error
	p.stop.Do(func() {
		_ = p.stdin.Close()
		pid := p.cmd.Process.Pid
		wait := func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-p.exited:
				return true
			case <-t.C:
				return false
			case <-ctx.Done():
				return false
			}
		}
		if !wait(stdinGrace) {
			killGroup(pid, false)
			if !wait(termGrace) {
				killGroup(pid, true)
				select {
				case <-p.exited:
				case <-ctx.Done():
					err = fmt.Errorf("the server process %d did not exit: %w", pid, ctx.Err())
				}
			}
		}
		killGroup(pid, true) // grandchildren left in the group
	})
	return err
}

// ring keeps the last n bytes written to it.
type ring struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newRing(n int) *ring { return &ring{n: n} }

func (r *ring) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, b...)
	if len(r.buf) > r.n {
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-r.n:]...)
	}
	return len(b), nil
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.ToValidUTF8(string(r.buf), "")
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

var errNotRunning = errors.New("the MCP server is not running")
