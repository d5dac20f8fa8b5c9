package acp

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/internal/outpipe"
)

// Options configure Serve.
type Options struct {
	// Logger receives diagnostics (never the protocol stream). Nil
	// discards them.
	Logger *slog.Logger
	// ProtocolVersion is the latest ACP version we speak; 0 means the SDK's
	// (1). A client asking for a version we do not speak gets this one.
	ProtocolVersion int
	// MaxFrameBytes caps an incoming frame (one line). A longer frame is
	// read to its end without being kept and answered with error -32600.
	// 0 means DefaultMaxFrameBytes.
	MaxFrameBytes int
	// Version is reported in agentInfo.
	Version string
	// Models are the model ids offered by the model selector, besides the
	// session's current model.
	Models []string
	// UpdatesPerSecond paces session/update notifications after a burst of
	// 768: acp-go-sdk clients drop the connection when their handler falls
	// 1,024 notifications behind, and no ACP message tells an agent how far
	// a client's handler has got. 0 means 4,000 per second, which a client
	// whose handler takes 100 µs per update keeps up with; a slower client
	// needs a lower setting (800 holds a 1 ms handler). A write the pipe
	// holds back halves the rate for a while. A negative value disables
	// pacing (the pipe's backpressure alone remains). While the client is
	// held to the pace, queued updates that a later one continues or
	// supersedes merge, so a turn needs fewer frames.
	UpdatesPerSecond float64
	// SandboxNotice says what the machine cannot contain of the commands
	// the model runs (core/sandbox's Sandbox.Notice: the one fact, also
	// logged on stderr at startup); each session this connection opens
	// shows it once, as an agent message. Nil or "" shows nothing.
	SandboxNotice func() string
	// ContainTerminal, when set, turns a command that an editor's terminal
	// is to run (terminal/create) into one that runs contained, and what
	// to add to its environment (core/sandbox's Sandbox.Standalone: the
	// dsh binary's reaper over it, which makes the namespaces itself). Its
	// error refuses the command (sandbox: required on a machine that
	// cannot contain). Nil runs terminals unconfined.
	ContainTerminal func(sc core.SandboxScope, argv []string) (out, env []string, err error)
	// onOutboxFull, for tests, runs each time a producer waits for room in
	// the outbox.
	onOutboxFull func()
	// onForget, for tests, runs when the state of a closed session is
	// dropped.
	onForget func(sessionID string)
	// CloseTimeout bounds the wait for running turns to settle when the
	// connection ends (default 10 s).
	CloseTimeout time.Duration
}

// DefaultMaxFrameBytes is the default cap on an incoming frame: a little
// under the 10 MiB line cap of acp-go-sdk, so that what dsh accepts is what
// SDK-based peers (and the subagent gateway's children) can carry too.
const DefaultMaxFrameBytes = 10<<20 - 4<<10

// Error codes of JSON-RPC 2.0 used by the door.
const (
	codeInvalidParams = wire.CodeInvalidParams
	codeInternalError = wire.CodeInternalError
)

// eofGrace is how long requests in flight when the input ends may still
// answer before teardown.
const eofGrace = time.Second

// Serve speaks ACP with one client over in/out until the client disconnects
// (in ends) or ctx ends. On return every session it opened is cancelled and
// closed. It returns nil when the client disconnected, else ctx's error.
//
// A goroutine keeps reading in; if ctx ends first and in is not closed by
// the caller, that goroutine stays blocked in Read until in delivers data or
// is closed (stdin of a process that exits does not matter).
func Serve(ctx context.Context, rt *core.Runtime, in io.Reader, out io.Writer, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ProtocolVersion <= 0 {
		opts.ProtocolVersion = sdk.ProtocolVersionNumber
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 10 * time.Second
	}

	a := newAgent(rt, opts)
	// Every write to the client goes through w, which teardown abandons:
	// a client that stopped reading cannot keep the door from exiting.
	w := outpipe.New(out)
	defer w.Abandon()
	conn := wire.New(in, w, a, wire.Options{MaxFrameBytes: opts.MaxFrameBytes, Logger: opts.Logger})
	a.conn = &peer{c: conn}
	rate := opts.UpdatesPerSecond
	if rate == 0 {
		rate = defaultUpdatesPerSecond
	}
	a.out = newOutbox(conn, rate)
	a.out.onFull = opts.onOutboxFull
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		a.out.run(func(err error) { opts.Logger.Debug("acp: session/update not sent", "err", err) })
	}()

	readDone := make(chan error, 1)
	go func() { readDone <- conn.Run() }()

	var result error
	select {
	case err := <-readDone:
		if err != nil {
			opts.Logger.Warn("acp: reading the client failed", "err", err)
		}
	case <-ctx.Done():
		result = ctx.Err()
		conn.Stop()
	}
	if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok && result != nil {
		// Unblock the reader when in supports it (a pipe or socket).
		_ = d.SetReadDeadline(time.Now())
	}

	// Input ended: requests already read (a piped one-shot client's
	// initialize, say) still get their answers, for a short grace. A write
	// to a reader that has gone fails with EPIPE; the grace bounds the case
	// of a reader that is alive but no longer reading.
	if result == nil {
		answered := make(chan struct{})
		go func() { conn.Wait(); close(answered) }()
		grace := time.NewTimer(eofGrace)
		select {
		case <-answered:
		case <-grace.C:
		}
		grace.Stop()
	}

	// Teardown: nothing more goes out (a write the client is not reading
	// is abandoned, and the outbox drops what it holds, so no reader waits
	// for room), every session closes (its turn is cancelled and settles;
	// commits never wait for the door), then the sessions' readers stop and
	// the handlers return.
	conn.CloseWrite()
	w.Abandon()
	conn.Stop()
	a.out.close()
	a.shutdown()
	close(a.stop)
	a.readers.Wait()
	<-outDone
	a.handlers.Wait()
	conn.Wait()
	return result
}

// shutdown refuses new work and closes every session of the connection.
func (a *agent) shutdown() {
	a.mu.Lock()
	a.closing = true
	states := make([]*sessState, 0, len(a.sessions))
	for _, st := range a.sessions {
		states = append(states, st)
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.CloseTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, st := range states {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := st.s.Close(ctx); err != nil {
				a.log.Warn("acp: closing a session failed", "session", st.id, "err", err)
			}
		}()
	}
	wg.Wait()
}
