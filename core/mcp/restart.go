package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// RestartPolicy bounds how a server that dies within its session is
// started again: a server that keeps dying must not loop, and one that
// crashed once should not cost the session its tools.
type RestartPolicy struct {
	// Max restarts within Window (default 3 within 5 minutes); a server
	// that dies, or fails a restart, with Max restarts in the window is
	// left down. A negative Max never restarts (config mcpRestarts: 0).
	Max    int
	Window time.Duration
	// Backoff is the pause before a restart, doubled for each restart
	// already in the window (default 200 ms: 200, 400, 800 ms), up to
	// MaxRestartBackoff.
	Backoff time.Duration
}

// Defaults of RestartPolicy.
const (
	DefaultMaxRestarts    = 3
	DefaultRestartWindow  = 5 * time.Minute
	DefaultRestartBackoff = 200 * time.Millisecond
	// MaxRestartBackoff caps the doubling pause.
	MaxRestartBackoff = 30 * time.Second
)

func (p RestartPolicy) withDefaults() RestartPolicy {
	if p.Max == 0 {
		p.Max = DefaultMaxRestarts
	}
	if p.Window <= 0 {
		p.Window = DefaultRestartWindow
	}
	if p.Backoff <= 0 {
		p.Backoff = DefaultRestartBackoff
	}
	return p
}

// pause is the wait before a restart when n restarts are already in the
// window: Backoff doubled n times, at most MaxRestartBackoff (a policy
// that allows many restarts would otherwise wait hours for the last ones).
func (p RestartPolicy) pause(n int) time.Duration {
	d := p.Backoff
	for ; n > 0 && d < MaxRestartBackoff; n-- {
		d *= 2
	}
	return min(d, MaxRestartBackoff)
}

var errStopped = errors.New("the session closed while the server was starting")

// died takes a ready server whose connection cs went away (why) to
// restarting, and restarts it eagerly: the death is reported at once, and
// the next call finds the server back rather than paying for its start.
// Only the first report of a connection's death counts (the watcher and a
// call may both notice it).
func (s *server) died(cs *sdk.ClientSession, why string) {
	why = "stopped working: " + why
	s.mu.Lock()
	if s.closing || s.state != StateReady || s.cs != cs {
		s.mu.Unlock()
		return
	}
	if !s.restartsLeft() {
		s.mu.Unlock()
		s.fail(s.notRestarted(why), true)
		return
	}
	s.state, s.err, s.waiting = StateRestarting, why, make(chan struct{})
	s.loops.Add(1)
	s.mu.Unlock()
	s.set.changed(s)
	go s.restart()
}

// restartsLeft reports whether the policy allows another restart now,
// forgetting the restarts older than its window. Called with s.mu held.
func (s *server) restartsLeft() bool {
	pol := s.set.opts.Restart
	since := time.Now().Add(-pol.Window)
	s.restartedAt = slices.DeleteFunc(s.restartedAt, func(t time.Time) bool { return t.Before(since) })
	return len(s.restartedAt) < pol.Max
}

func (s *server) notRestarted(why string) string {
	pol := s.set.opts.Restart
	if pol.Max < 0 {
		return "died and was not restarted (restarts are off: mcpRestarts is 0): " + why
	}
	return fmt.Sprintf("died and was not restarted (%d restarts within %s already): %s", pol.Max, pol.Window, why)
}

// restart releases the dead connection and starts the server again, after
// the backoff, until it is up or the policy says stop.
func (s *server) restart() {
	defer s.loops.Done()
	s.drop()
	for {
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			return
		}
		pause := s.set.opts.Restart.pause(len(s.restartedAt))
		s.restartedAt = append(s.restartedAt, time.Now())
		s.restarts++
		s.mu.Unlock()
		if !s.pause(pause) {
			return
		}
		cs, tools, note, err := s.connect(s.set.ctx)
		if err == nil {
			s.up(cs, tools, note)
			return
		}
		if errors.Is(err, errStopped) || !s.retry(err) {
			return
		}
	}
}

// retry reports a failed restart and whether another is allowed; when not,
// the server is failed for good.
func (s *server) retry(err error) bool {
	s.drop()
	why := fmt.Sprintf("restart %d failed: %v", s.status().Restarts, err)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	if !s.restartsLeft() {
		s.mu.Unlock()
		s.fail(s.notRestarted(why), false)
		return false
	}
	s.err = why
	s.mu.Unlock()
	s.set.changed(s)
	return true
}

// pause waits d, or until the server is stopped (false).
func (s *server) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}

// drop releases the current connection and process and forgets them.
func (s *server) drop() {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return // stop releases them
	}
	cs, p := s.cs, s.proc
	s.cs, s.proc = nil, nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := releaseConn(ctx, cs, p); err != nil {
		s.set.warn(s.cfg.Name, "releasing the dead server: "+err.Error())
	}
}

// sameTool reports whether two listings of a tool offer the model the same.
func sameTool(a, b remoteTool) bool {
	return a.name == b.name && a.title == b.title && a.desc == b.desc && string(a.schema) == string(b.schema) &&
		slices.Equal(a.required, b.required) && a.hints == b.hints
}
