// Command dsh is a coding-agent runtime with three doors: an ACP agent for
// editors (dsh acp), an SDK JSON-RPC runtime for programs (dsh sdk) and a
// headless run for one task per process (dsh run). This package only parses
// flags and wires parts together; the logic lives in core and the doors.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/cmd/internal/argv"
	"github.com/dsh-dev/dsh/core/proc"
	"github.com/dsh-dev/dsh/core/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `dsh — a coding-agent runtime (ACP agent, SDK JSON-RPC runtime, headless runner)

Usage:
  dsh acp [flags]                                ACP agent on stdin/stdout (Zed and other editors)
  dsh sdk [flags]                                SDK JSON-RPC runtime on stdin/stdout (program hosts)
  dsh run [flags] [--json] [-q] [-c | --session-id ID] [--image PATH]... [TASK...|-]
                                                 one task, then exit
  dsh sessions list|show|rm|compact|rewind ...   look after stored sessions (an id or a unique prefix of it)
  dsh config [--json]                            the resolved settings, where each came from, the file read
  dsh trust [--revoke | --list] [DIR]            let a project's hooks and command shell lines run
  dsh mcp list | add NAME -- CMD... | remove NAME  the config file's MCP servers: state and tools; add, remove
  dsh completion bash|zsh|fish                   a shell completion script
  dsh version                                    version, module and VCS revision (also -v, --version)
  dsh help [COMMAND [SUBCOMMAND]]                this help, or a command's (the same as COMMAND --help)
  dsh --profile acp|sdk|headless ...             aliases for acp, sdk and run

Flags go before or after the command word. Run 'dsh help <command>' (or 'dsh <command> --help') for the
flags of a command.

`

// commandNames are the command words, for completion and messages.
var commandNames = []string{"acp", "completion", "config", "mcp", "run", "sdk", "sessions", "trust", "version"}

// commands maps each command word to its implementation.
var commands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	"run":        runCommand,
	"sdk":        sdkCommand,
	"acp":        acpCommand,
	"sessions":   func(a []string, _ io.Reader, o, e io.Writer) int { return sessionsCommand(a, o, e) },
	"config":     func(a []string, _ io.Reader, o, e io.Writer) int { return configCommand(a, o, e) },
	"completion": func(a []string, _ io.Reader, o, e io.Writer) int { return completionCommand(a, o, e) },
	"version":    func(a []string, _ io.Reader, o, e io.Writer) int { return versionCommand(a, o, e) },
	"trust":      func(a []string, _ io.Reader, o, e io.Writer) int { return trustCommand(a, o, e) },
	"mcp":        func(a []string, _ io.Reader, o, e io.Writer) int { return mcpCommand(a, o, e) },
}

func main() {
	// The reaper every bash command runs under is this binary re-executed;
	// it must start before anything here touches signals (an ignored
	// SIGPIPE would be inherited by the command).
	if len(os.Args) > 1 && os.Args[1] == proc.ReaperArg {
		syscall.Exit(proc.ReaperMain(os.Args[2:], os.Stderr, sandbox.Setup))
	}
	// MCP servers and ACP agents run under the reaper too: what detaches
	// from them (a daemon, npx's node) is adopted and reaped there, and
	// ends with them or with us. dsh itself is not a subreaper: nothing
	// would reap what came to it.
	if exe, err := os.Executable(); err == nil {
		proc.UseReaper(exe)
	}
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
	args, code := applyProfile(args, stderr)
	if code >= 0 {
		return code
	}
	i := commandIndex(args)
	if i < 0 {
		if len(args) > 0 && isHelp(args[0]) {
			fmt.Fprint(stdout, usage+envDoc)
			return 0
		}
		if len(args) > 0 && (args[0] == "--version" || args[0] == "-v" || args[0] == "-version") {
			return versionCommand(args[1:], stdout, stderr)
		}
		fmt.Fprintf(stderr, "dsh: a command is required: %s\n\n%s", strings.Join(commandNames, ", "), usage)
		return 2
	}
	cmd := args[i]
	rest := append(append([]string{}, args[:i]...), args[i+1:]...)
	if cmd == "help" {
		return helpCommand(rest, stdin, stdout, stderr)
	}
	run, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "dsh: unknown command %q (want %s, or help)\n", cmd, strings.Join(commandNames, ", "))
		return 2
	}
	return run(rest, stdin, stdout, stderr)
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// helpCommand is `dsh help [COMMAND [SUBCOMMAND]]`: the global help, or
// exactly what `dsh COMMAND [SUBCOMMAND] --help` prints, so there is one
// help text per command.
func helpCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (len(args) == 1 && args[0] == "help") {
		fmt.Fprint(stdout, usage+envDoc)
		return 0
	}
	run, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dsh help: unknown command %q (want %s)\n", args[0], strings.Join(commandNames, ", "))
		return 2
	}
	return run(append(append([]string{}, args[1:]...), "--help"), stdin, stdout, stderr)
}

// applyProfile rewrites the original's --profile aliases into commands.
func applyProfile(args []string, stderr io.Writer) ([]string, int) {
	cmd, rest := args[0], args[1:]
	if cmd != "--profile" && !strings.HasPrefix(cmd, "--profile=") {
		return args, -1
	}
	profile, ok := strings.CutPrefix(cmd, "--profile=")
	if !ok {
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "dsh: --profile needs a value: acp, sdk or headless")
			return nil, 2
		}
		profile, rest = rest[0], rest[1:]
	}
	switch profile {
	case "acp", "sdk":
		return append([]string{profile}, rest...), -1
	case "headless":
		return append([]string{"run"}, rest...), -1
	}
	fmt.Fprintf(stderr, "dsh: unknown profile %q (want acp, sdk or headless)\n", profile)
	return nil, 2
}

// commandIndex finds the command word: the first positional, skipping the
// shared settings flags (and their values) that may come before it.
func commandIndex(args []string) int {
	fs := flag.NewFlagSet("dsh", flag.ContinueOnError)
	registerSettingFlags(fs)
	kind := argv.KindOf(fs)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			if a == "--" {
				return -1
			}
			return i
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if kind(name) == argv.Value {
			i++
		}
	}
	return -1
}
