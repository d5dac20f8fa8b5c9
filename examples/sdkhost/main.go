// Command sdkhost is a minimal SDK host: it starts `dsh sdk`, initializes it,
// runs one prompt, and prints the final response and the finish reason.
//
//	go run ./examples/sdkhost -cwd ~/project "list the Go packages here"
//
// It shows the whole host side of the SDK protocol through sdkrpc/client:
// Start (spawn + initialize, reaping the runtime if either fails), Run (the
// owned run: prompt, then the session's notifications from the enqueue
// receipt through idle), Cancel on Ctrl-C, and Close (the close ladder).
package main

import (
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

	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

func main() {
	os.Exit(run())
}

func run() int {
	dsh := flag.String("dsh", "dsh", "the dsh binary (looked up in PATH)")
	provider := flag.String("provider", protocol.DefaultProvider, "model provider")
	model := flag.String("model", protocol.DefaultModel, "model id")
	cwd := flag.String("cwd", ".", "working directory of the session")
	verbose := flag.Bool("v", false, "copy the runtime's stderr to ours")
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := client.Config{Command: []string{*dsh, "sdk"}}
	if *verbose {
		cfg.Stderr = os.Stderr
	}
	c, info, err := client.Start(ctx, cfg, protocol.InitializeParams{Cwd: *cwd, Provider: *provider, Model: *model})
	if err != nil {
		fmt.Fprintf(os.Stderr, "sdkhost: start %s: %v\n", *dsh, err)
		return 1
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := c.Close(cctx); err != nil {
			fmt.Fprintf(os.Stderr, "sdkhost: close: %v\n", err)
		}
	}()
	if *verbose {
		fmt.Fprintf(os.Stderr, "sdkhost: connected to %s %s\n", info.ServerInfo.Name, info.ServerInfo.Version)
	}

	res, err := c.Run(ctx, "", prompt)
	if errors.Is(err, context.Canceled) && info.Capabilities != nil && info.Capabilities.Cancel {
		// Ctrl-C: end the turn cleanly so the session log records it.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Cancel(cctx, res.SessionID)
		cancel()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sdkhost: run: %v\n", err)
		return 1
	}
	printResult(os.Stdout, res)
	if res.FinishReason != "completed" {
		return 1
	}
	return 0
}

func printResult(w io.Writer, res *client.RunResult) {
	fmt.Fprintln(w, res.FinalResponse)
	reason := res.FinishReason
	if reason == "" {
		reason = "(no turn ended)"
	}
	fmt.Fprintf(w, "finish reason: %s\n", reason)
}
