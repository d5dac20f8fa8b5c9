package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dsh-dev/dsh/sdkrpc"
)

// shutdownGrace bounds how long disposal may take at exit.
const shutdownGrace = 10 * time.Second

// signalContext is cancelled on SIGTERM or SIGINT; code reports which
// (0 for SIGTERM, 130 for SIGINT, as the original's SDK bin).
func signalContext() (ctx context.Context, code func() int, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	exit := 0
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			if sig == syscall.SIGINT {
				exit = 130
			}
			cancel()
		case <-done:
		}
	}()
	return ctx, func() int { return exit }, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

func sdkCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s, _, code := parseCommon("sdk", "dsh sdk [flags]   (alias: dsh --profile sdk)",
		"Serve the SDK JSON-RPC protocol (newline-delimited JSON-RPC 2.0) on stdin/stdout for a host program.", args, stderr, stdout, "auto", nil)
	if code >= 0 {
		return code
	}
	logger := newLogger(stderr, s.LogLevel)
	logToolListWarnings(logger, s)
	rt, err := buildRuntime(s, "sdk", logger)
	if err != nil {
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return 1
	}
	ctx, sigCode, stop := signalContext()
	defer stop()
	exit := sdkrpc.Serve(ctx, rt.Runtime, stdin, stdout, sdkrpc.Options{Version: version, Logger: logger, DefaultCwd: os.Getenv("DSH_CWD")})
	if err := shutdownRuntime(rt); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	if c := sigCode(); c != 0 {
		return c
	}
	return exit
}
