package subagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// sdkChild is a `dsh sdk` (or any SDK-protocol runtime) driven with
// sdkrpc/client. It initializes with the permissions capability so the
// child's permission requests come to us and go to the parent's gate.
type sdkChild struct {
	reg *Registry
	cl  *client.Client

	callCtx
	wg sync.WaitGroup // cancel requests in flight
	closer
}

func spawnSDK(ctx context.Context, r *Registry, s spawnSpec) (*sdkChild, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subagent request was aborted before the SDK child started: %w", context.Cause(ctx))
	}
	cfg := client.Config{
		Command: s.argv, Env: s.env, Dir: s.cwd,
		EOFGrace: r.ladder.eof, TermGrace: r.ladder.term, KillGrace: r.ladder.kill,
		Options: client.Options{Logger: r.log.With("subagent", s.name), InitializeTimeout: r.initTimeout},
	}
	init := protocol.InitializeParams{
		Cwd: s.cwd, Provider: s.cfg.Provider, Model: s.cfg.Model, MaxTokens: int64(s.cfg.MaxTokens),
		ReasoningEffort: s.cfg.ReasoningEffort, Capabilities: &protocol.ClientCapabilities{Permissions: true},
	}
	if s.parent != nil {
		// The child reaches the same MCP servers as the session that
		// delegates to it (it merges them with its config file's by name).
		init.MCPServers = mcp.EncodeFile(s.parent.MCPServers())
	}
	cl, _, err := client.Start(ctx, cfg, init)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("subagent request was aborted before the SDK child started: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("the SDK child failed to start: %w", err)
	}
	c := &sdkChild{reg: r, cl: cl, closer: newCloser()}
	parent := s.parent
	cl.OnPermissionRequest(func(h context.Context, p protocol.RequestPermissionParams) (protocol.RequestPermissionResult, error) {
		ctx, call, stop := c.within(h)
		defer stop()
		return protocol.Select(string(decide(ctx, parent, call, permissionRequest(p)))), nil
	})
	return c, nil
}

func (c *sdkChild) open(context.Context) (string, error) { return c.cl.NewSession().ID(), nil }

func (c *sdkChild) prompt(ctx context.Context, sid, text string, rep *reporter) runResult {
	res, err := c.cl.Session(sid).Run(ctx, text, client.OnEvent(func(ev client.Event) { report(rep, ev.Event) }))
	var r runResult
	var last *event.TurnEndReason
	if res != nil {
		for _, ev := range res.Events {
			switch ev.Type {
			case event.TypeAssistantMessage:
				if am, derr := event.Decode[event.AssistantMessage](ev); derr == nil {
					if t := event.JoinText(am.Message.Content); t != "" {
						r.Output = t
					}
				}
			case event.TypeTurnEnd:
				if te, derr := event.Decode[event.TurnEnd](ev); derr == nil {
					last = &te.Reason
				}
			}
		}
	}
	if err != nil {
		r.StopReason, r.broken = StopError, true
		var tce *client.TransportClosedError
		var re *client.ResponseError
		switch {
		case errors.As(err, &tce):
			r.Diagnostic = "the SDK child disconnected mid-run: " + describeTransport(tce)
		case errors.As(err, &re):
			r.Diagnostic = "the SDK child refused the prompt: " + re.Message
		default:
			r.Diagnostic = "the SDK child failed: " + err.Error()
		}
		return r
	}
	if last == nil {
		r.StopReason, r.Diagnostic = StopError, "the SDK child went idle without ending a turn"
		return r
	}
	// The original maps completed, max-tokens and aborted 1:1 and all else
	// to error; we keep refusal too (dsh reports it), and say why an error
	// happened.
	r.StopReason, r.Diagnostic = fromTurnEnd(*last)
	return r
}

// report passes a dsh child's tool calls and messages on to rep (Run calls
// it on its own goroutine, which rep never blocks).
func report(rep *reporter, ev event.Event) {
	switch ev.Type {
	case event.TypeToolCall:
		if tc, err := event.Decode[event.ToolCall](ev); err == nil {
			if tc.Facts != nil {
				rep.toolCall(tc.Facts.Title, "", "") // as the child recorded it
			} else {
				rep.toolCall("", tc.Tool(), tc.Arguments) // a child older than recorded facts
			}
		}
	case event.TypeAssistantMessage:
		if am, err := event.Decode[event.AssistantMessage](ev); err == nil {
			rep.message(am.Message.Content)
		}
	}
}

// describeTransport says how an SDK child's connection ended, with the end
// of its stderr (the client keeps 400 lines; a model needs a few).
func describeTransport(e *client.TransportClosedError) string {
	var b strings.Builder
	switch {
	case e.Exited && e.Signal != "":
		fmt.Fprintf(&b, "the process was killed by signal %s", e.Signal)
	case e.Exited:
		fmt.Fprintf(&b, "the process exited with code %d", e.ExitCode)
	default:
		b.WriteString(e.Reason)
	}
	if tail := e.StderrTail; len(tail) > 0 {
		if len(tail) > 10 {
			tail = tail[len(tail)-10:]
		}
		b.WriteString("; its stderr ended with:\n")
		b.WriteString(strings.Join(tail, "\n"))
	}
	return b.String()
}

func (c *sdkChild) cancel(sid string) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), c.reg.cancelGrace)
		defer cancel()
		if err := c.cl.Session(sid).Cancel(ctx); err != nil {
			c.reg.log.Debug("subagent: session/cancel failed", "err", err)
		}
	}()
}

// finish closes the child session in the child runtime, so a pooled child
// does not accumulate sessions and the log is flushed.
func (c *sdkChild) finish(ctx context.Context, sid string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.cl.Session(sid).Close(ctx); err != nil {
		c.reg.log.Debug("subagent: session/close failed; not reusing the child", "err", err)
		return false
	}
	return c.healthy()
}

func (c *sdkChild) healthy() bool { return c.cl.Err() == nil }

func (c *sdkChild) close(ctx context.Context) error {
	err := c.closer.do(ctx, c.cl.Close)
	c.wg.Wait()
	return err
}

func (c *sdkChild) pid() int { return c.cl.Pid() }

// spawnSpec is what a child process is started with.
type spawnSpec struct {
	name   string
	argv   []string
	env    []string
	cwd    string
	cfg    event.Config
	parent *core.Session
}

// permissionRequest is the SDK child's permission request as the parent's
// gate asks it.
func permissionRequest(p protocol.RequestPermissionParams) permission.Request {
	return permission.Request{
		SessionID: p.SessionID, CallID: p.ToolCall.CallID, Tool: p.ToolCall.Tool, Kind: p.ToolCall.Kind,
		Paths: p.ToolCall.Paths, Write: p.ToolCall.Write, Command: p.ToolCall.Command,
		Title: p.ToolCall.Title, Workspace: p.Workspace, RawInput: p.ToolCall.RawInput,
	}
}
