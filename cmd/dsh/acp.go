package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/acp"
	"github.com/dsh-dev/dsh/core"
)

func acpCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s, _, code := parseCommon("acp", "dsh acp [flags]   (alias: dsh --profile acp)",
		"Serve the Agent Client Protocol on stdin/stdout, for Zed and other editors.", args, stderr, stdout, "ask", nil)
	if code >= 0 {
		return code
	}
	rate, err := acpUpdateRate()
	if err != nil {
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return 2
	}
	if _, err := core.ParsePrices(s.Prices); err != nil {
		fmt.Fprintf(stderr, "dsh: config file: %v\n", err)
		return 2
	}
	logger := newLogger(stderr, s.LogLevel)
	logToolListWarnings(logger, s)
	rt, err := buildRuntime(s, "acp", logger)
	if err != nil {
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return 1
	}
	ctx, sigCode, stop := signalContext()
	defer stop()
	opts := acp.Options{Logger: logger, Version: version, UpdatesPerSecond: rate, ContainTerminal: rt.containTerminal}
	if s.Depth == 0 {
		// A subagent child's parent has told the user already; in the
		// child's session the message would land in the subagent's answer.
		opts.SandboxNotice = rt.sandbox.Notice
	}
	err = acp.Serve(ctx, rt.Runtime, stdin, stdout, opts)
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

// acpUpdateRate reads DSH_ACP_UPDATES_PER_SEC: the pace of session/update
// notifications (0 or unset: the door's default; "off": unpaced).
func acpUpdateRate() (float64, error) {
	v := strings.TrimSpace(os.Getenv("DSH_ACP_UPDATES_PER_SEC"))
	switch v {
	case "", "0":
		return 0, nil
	case "off":
		return -1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("DSH_ACP_UPDATES_PER_SEC must be a positive number of updates per second or off, got %q", v)
	}
	return f, nil
}
