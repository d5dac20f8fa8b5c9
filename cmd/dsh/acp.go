package main

import (
	"fmt"
	"io"

	"github.com/dsh-dev/dsh/acp"
)

func acpCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s, _, code := parseCommon("acp", "dsh acp [flags]   (alias: dsh --profile acp)",
		"Serve the Agent Client Protocol on stdin/stdout, for Zed and other editors.", args, stderr, stdout, "ask", nil)
	if code >= 0 {
		return code
	}
	logger := newLogger(stderr, s.LogLevel)
	rt, err := buildRuntime(s, "acp", logger)
	if err != nil {
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return 1
	}
	ctx, sigCode, stop := signalContext()
	defer stop()
	err = acp.Serve(ctx, rt.Runtime, stdin, stdout, acp.Options{Logger: logger, Version: version})
	if err != nil && ctx.Err() == nil {
		logger.Error("acp", "err", err)
	}
	if err := shutdownRuntime(rt); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	if c := sigCode(); c != 0 {
		return c
	}
	return 0
}
