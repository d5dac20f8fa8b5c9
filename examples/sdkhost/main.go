// Command sdkhost is an SDK host written against sdkrpc/client: it starts
// `dsh sdk`, runs a prompt in a session, and prints the answer as it
// streams.
//
//	go run ./examples/sdkhost -cwd ~/project "list the Go packages here"
//	go run ./examples/sdkhost -session session-1234 "and now the tests"   # the same session again
//	go run ./examples/sdkhost -ask "delete the build folder"              # approve tools yourself
//	go run ./examples/sdkhost -events "explain main.go"                   # the event iterator
//
// It shows the whole host side of the client:
//
//   - client.Start spawns the runtime and initializes it (reaping it if
//     either fails); Close runs the close ladder (shutdown, stdin EOF,
//     SIGTERM, SIGKILL) and always reaps it.
//   - c.NewSession() / c.Session(id) is a handle on one session; the runtime
//     creates it on the first prompt, or resumes it from its log.
//   - s.Run(ctx, prompt, client.OnText(...), ...) prompts and waits for the
//     session to go idle, handing over the live text as it streams. Ctrl-C
//     cancels Run's ctx, and that cancels the turn on the runtime.
//   - s.Prompt + s.Events(ctx) is the lower-level pair: enqueue, then range
//     over the session's events (deltas, committed messages, tool calls,
//     the turn's end) yourself.
//   - c.OnPermissionRequest answers the runtime's permission questions when
//     initialize declared the capability; without it the permission mode
//     decides.
//   - Typed results: res.FinishReason is a client.FinishReason
//     (client.FinishCompleted, ...), a finish chunk's reason a
//     client.StopReason.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

func main() {
	os.Exit(run())
}

type flags struct {
	dsh, provider, model, cwd, session string
	verbose, ask, events, thoughts     bool
}

func run() int {
	var f flags
	flag.StringVar(&f.dsh, "dsh", "dsh", "the dsh binary (looked up in PATH)")
	flag.StringVar(&f.provider, "provider", protocol.DefaultProvider, "model provider")
	flag.StringVar(&f.model, "model", protocol.DefaultModel, "model id")
	flag.StringVar(&f.cwd, "cwd", ".", "working directory of the session")
	flag.StringVar(&f.session, "session", "", "session id to continue (default: a new session)")
	flag.BoolVar(&f.ask, "ask", false, "answer the runtime's permission requests on the terminal")
	flag.BoolVar(&f.events, "events", false, "read the answer with Prompt and the Events iterator instead of Run")
	flag.BoolVar(&f.thoughts, "thoughts", false, "print the model's reasoning (to stderr) as it streams")
	flag.BoolVar(&f.verbose, "v", false, "copy the runtime's stderr to ours")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: sdkhost [flags] <prompt...>\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	if strings.TrimSpace(prompt) == "" {
		flag.Usage()
		return 2
	}

	// Ctrl-C ends ctx: Run then cancels the turn on the runtime.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := client.Config{Command: []string{f.dsh, "sdk"}}
	if f.verbose {
		cfg.Stderr = os.Stderr
	}
	init := protocol.InitializeParams{Cwd: f.cwd, Provider: f.provider, Model: f.model}
	if f.ask {
		init.Capabilities = &protocol.ClientCapabilities{Permissions: true}
	}
	c, info, err := client.Start(ctx, cfg, init)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sdkhost: start %s: %v\n", f.dsh, err)
		return 1
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := c.Close(cctx); err != nil {
			fmt.Fprintf(os.Stderr, "sdkhost: close: %v\n", err)
		}
	}()
	if f.verbose {
		fmt.Fprintf(os.Stderr, "sdkhost: connected to %s %s\n", info.ServerInfo.Name, info.ServerInfo.Version)
	}
	if f.ask {
		c.OnPermissionRequest(askOnTerminal)
	}

	s := c.Session(f.session) // "" is a new session
	fmt.Fprintf(os.Stderr, "sdkhost: session %s\n", s.ID())
	var reason client.FinishReason
	if f.events {
		reason, err = followEvents(ctx, s, prompt, f.thoughts)
	} else {
		reason, err = runOnce(ctx, s, prompt, f.thoughts)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nsdkhost: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "sdkhost: turn ended: %s\n", describe(reason))
	if reason != client.FinishCompleted {
		return 1
	}
	return 0
}

// runOnce is the one-call way: Run streams the text to stdout as it comes
// and returns once the session is idle.
func runOnce(ctx context.Context, s *client.Session, prompt string, thoughts bool) (client.FinishReason, error) {
	opts := []client.RunOption{
		client.OnText(func(delta string) { fmt.Print(delta) }),
		client.OnEvent(func(e client.Event) {
			if e.Type == event.TypeToolCall {
				if tc, err := event.Decode[event.ToolCall](e.Event); err == nil {
					fmt.Fprintf(os.Stderr, "\n[tool %s %s]\n", tc.Name, tc.Arguments)
				}
			}
		}),
	}
	if thoughts {
		opts = append(opts, client.OnReasoning(func(delta string) { fmt.Fprint(os.Stderr, delta) }))
	}
	res, err := s.Run(ctx, prompt, opts...)
	fmt.Println()
	if errors.Is(err, context.Canceled) {
		// Run has cancelled the turn on the runtime; report how it ended.
		return res.FinishReason, nil
	}
	return res.FinishReason, err
}

// followEvents is the lower-level way: take the iterator first (it
// subscribes at once), enqueue the prompt, then range until the turn ends.
func followEvents(ctx context.Context, s *client.Session, prompt string, thoughts bool) (client.FinishReason, error) {
	events := s.Events(ctx)
	if _, err := s.Prompt(ctx, client.Text(prompt)); err != nil {
		return "", err
	}
	for ev, err := range events {
		if err != nil {
			return "", err
		}
		if d, ok := ev.TextDelta(); ok {
			fmt.Print(d)
		}
		if d, ok := ev.ReasoningDelta(); ok && thoughts {
			fmt.Fprint(os.Stderr, d)
		}
		if stop, ok := ev.Stop(); ok && stop == client.StopError {
			fmt.Fprintln(os.Stderr, "\n[the model call failed; retrying]")
		}
		if r, ok := ev.TurnEnd(); ok {
			fmt.Println()
			return r, nil
		}
	}
	return "", ctx.Err()
}

// askOnTerminal answers a permission request from the terminal.
func askOnTerminal(_ context.Context, p protocol.RequestPermissionParams) (protocol.RequestPermissionResult, error) {
	fmt.Fprintf(os.Stderr, "\nallow %s? %s [y]es / [a]lways / [n]o / ne[v]er: ", p.ToolCall.Tool, p.ToolCall.Title)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return protocol.RequestPermissionResult{}, err
	}
	answer := map[string]string{"y": "allow_once", "a": "allow_always", "v": "reject_always"}[strings.TrimSpace(line)]
	if answer == "" {
		answer = "reject_once"
	}
	return protocol.RequestPermissionResult{Outcome: protocol.PermissionOutcome{Outcome: protocol.OutcomeSelected, OptionID: answer}}, nil
}

func describe(r client.FinishReason) string {
	switch r {
	case "":
		return "no turn ended"
	case client.FinishCompleted:
		return "completed"
	case client.FinishAborted:
		return "cancelled"
	case client.FinishMaxTokens:
		return "the answer hit the output cap"
	}
	return string(r)
}
