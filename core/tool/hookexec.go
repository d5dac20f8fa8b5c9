package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core/sandbox"
)

// HookRequest is one hook command to run (see RunHook).
type HookRequest struct {
	Command string
	Workdir string
	Env     []string // the whole environment; nil: ours, scrubbed
	Stdin   []byte
	Timeout time.Duration
	// Limit bounds what is kept of stdout and of stderr, each.
	Limit int
	Scope sandbox.Scope
}

// HookResult is how a hook command ended.
type HookResult struct {
	Stdout, Stderr string
	ExitCode       int // -1 when killed or not started
	TimedOut       bool
	// Cut says output past Limit was dropped.
	Cut bool
}

// RunHook runs a hook command as the bash tool runs a command — /bin/bash
// -c in its own session, under the reaper and the sandbox of ex when ex is
// a local executor — but with the event on stdin and stdout and stderr
// kept apart, each bounded to its first Limit bytes (a hook's answer is
// read from the start). A hook that outlives Timeout is killed with its
// whole tree.
func RunHook(ctx context.Context, ex Executor, req HookRequest) (HookResult, error) {
	if err := ctx.Err(); err != nil {
		return HookResult{ExitCode: -1}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	out, errOut := &firstBytes{max: req.Limit}, &firstBytes{max: req.Limit}
	er := ExecRequest{Command: req.Command, Workdir: req.Workdir, Env: req.Env, Scope: req.Scope}
	p, ladder, err := startShell(er, localOptions(ex), bytes.NewReader(req.Stdin), out, errOut)
	if err != nil {
		return HookResult{ExitCode: -1}, err
	}
	select {
	case <-p.Done():
	case <-runCtx.Done():
	}
	stopErr := p.Stop(context.Background(), ladder)
	res := HookResult{Stdout: out.String(), Stderr: errOut.String(), ExitCode: -1, Cut: out.cut() || errOut.cut()}
	if st := p.State(); st != nil {
		res.ExitCode = st.ExitCode()
	}
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case runCtx.Err() != nil:
		res.TimedOut = true
		return res, nil
	case stopErr != nil:
		return res, fmt.Errorf("run hook: %w", stopErr)
	}
	if res.ExitCode < 0 {
		return res, errors.New("the hook was killed by a signal")
	}
	return res, nil
}

// firstBytes keeps the first max bytes written and counts the rest.
type firstBytes struct {
	mu      sync.Mutex
	b       []byte
	max     int
	dropped int64
}

func (w *firstBytes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.b); room > 0 {
		k := min(room, len(p))
		w.b = append(w.b, p[:k]...)
		w.dropped += int64(len(p) - k)
	} else {
		w.dropped += int64(len(p))
	}
	return len(p), nil
}

func (w *firstBytes) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

func (w *firstBytes) cut() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped > 0
}
