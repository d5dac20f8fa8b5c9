package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/core/proc"
	"github.com/dsh-dev/dsh/core/tool"
)

// stopLadder is how a stdio server is stopped (core/proc): stdin closed
// (the MCP way to ask a server to exit), then SIGTERM to its process
// group, then SIGKILL; together under about 2 s before the kill.
var stopLadder = proc.Ladder{EOF: time.Second, Term: 800 * time.Millisecond, Kill: 2 * time.Second}

// stdioProc is one stdio server's process, started by core/proc: its own
// process group, the parent-death signal, stdin and stdout as plain pipes,
// a tail of its stderr for diagnostics, one goroutine reaping it.
type stdioProc struct {
	p      *proc.Process
	exited <-chan struct{} // closed once reaped
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
// noise reports lines the filter skipped, dropped the tools left out of a
// tools/list answer.
func startStdio(c ServerConfig, cwd string, noise, dropped func(string)) (*stdioProc, sdk.Transport, error) {
	env := serverEnv(c.Env)
	path, err := lookCommand(c.Command, cwd, env)
	if err != nil {
		return nil, nil, err
	}
	p, err := proc.Start(proc.Config{Argv: append([]string{path}, c.Args...), Env: env, Dir: cwd, Pipes: true,
		Reaped: true, TailLines: 20, Name: "mcp server " + c.Name})
	if err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", c.Command, err)
	}
	pr, pw := io.Pipe()
	lists := &listWatch{}
	go func() {
		filter{limit: maxFrame, noise: noise, lists: lists, dropped: dropped}.run(p.Stdout(), pw)
		p.Stdout().Close()
	}()
	sp := &stdioProc{p: p, exited: p.Done()}
	return sp, &sdk.IOTransport{Reader: pr, Writer: stdinWriter{p.Stdin(), lists}, MaxLineLength: maxFrame + 64}, nil
}

// stdinWriter notes our tools/list requests for the filter, and leaves
// closing stdin to the process's stop ladder.
type stdinWriter struct {
	w     io.Writer
	lists *listWatch
}

func (s stdinWriter) Write(p []byte) (int, error) {
	s.lists.note(p)
	return s.w.Write(p)
}

func (stdinWriter) Close() error { return nil }

// exitedWithin waits up to d for the process to be reaped: a server whose
// connection just broke is usually exiting, and how it ended (its exit
// status, the end of its stderr, all captured once it is reaped) says more
// than the broken pipe.
func (p *stdioProc) exitedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitText says how the process ended, with the end of its stderr.
func (p *stdioProc) exitText() string {
	s := "the process exited"
	if err := p.p.WaitErr(); err != nil {
		s = "the process ended: " + err.Error()
	}
	if t := p.stderrTail(); t != "" {
		s += "; its stderr ends with: " + t
	}
	return s
}

func (p *stdioProc) stderrTail() string {
	lines := p.p.StderrTail()
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return short(strings.TrimSpace(strings.Join(lines, " | ")), 600)
}

// kill stops the process group with the ladder and returns once the
// server is reaped (or ctx ends).
func (p *stdioProc) kill(ctx context.Context) error { return p.p.Stop(ctx, stopLadder) }

var errNotRunning = errors.New("the MCP server is not running")
