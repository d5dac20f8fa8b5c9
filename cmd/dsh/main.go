// Command dsh is a coding-agent runtime with three doors: an ACP agent for
// editors (dsh acp), an SDK JSON-RPC runtime for programs (dsh sdk) and a
// headless run for one task per process (dsh run). This package only parses
// flags and wires parts together; the logic lives in core and the doors.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `dsh — a coding-agent runtime (ACP agent, SDK JSON-RPC runtime, headless runner)

Usage:
  dsh acp [flags]                                ACP agent on stdin/stdout (Zed and other editors)
  dsh sdk [flags]                                SDK JSON-RPC runtime on stdin/stdout (program hosts)
  dsh run [flags] [--json] [--session-id ID] [TASK...|-]   one task, then exit
  dsh sessions list [--cwd DIR] [--json] | show ID | rm ID
  dsh version
  dsh --profile acp|sdk|headless ...             aliases for acp, sdk and run

Run 'dsh <command> --help' for the flags of a command.

`

func main() {
	// A peer that goes away must not kill us with SIGPIPE mid-write: the
	// write fails with EPIPE instead and the door shuts down cleanly,
	// flushing session logs.
	signal.Ignore(syscall.SIGPIPE)
	harden()
	os.Exit(dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// dispatch runs one invocation and returns the exit code.
func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage+envDoc)
		return 2
	}
	cmd, rest := args[0], args[1:]
	if cmd == "--profile" || len(cmd) > len("--profile=") && cmd[:len("--profile=")] == "--profile=" {
		var profile string
		if cmd == "--profile" {
			if len(rest) == 0 {
				fmt.Fprintln(stderr, "dsh: --profile needs a value: acp, sdk or headless")
				return 2
			}
			profile, rest = rest[0], rest[1:]
		} else {
			profile = cmd[len("--profile="):]
		}
		switch profile {
		case "acp", "sdk":
			cmd = profile
		case "headless":
			cmd = "run"
		default:
			fmt.Fprintf(stderr, "dsh: unknown profile %q (want acp, sdk or headless)\n", profile)
			return 2
		}
	}
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage+envDoc)
		return 0
	case "version", "--version":
		fmt.Fprintf(stdout, "dsh %s\n", version)
		return 0
	case "sessions":
		return sessionsCommand(rest, stdout, stderr)
	case "run":
		return runCommand(rest, stdin, stdout, stderr)
	case "sdk":
		return sdkCommand(rest, stdin, stdout, stderr)
	case "acp":
		return acpCommand(rest, stdin, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "dsh: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
