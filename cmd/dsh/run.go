package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dsh-dev/dsh/cmd/internal/headless"
	"github.com/dsh-dev/dsh/core/event"
)

const offlineHint = `to try dsh offline, use the scripted provider with a one-step script:
  echo '[{"text": "Hello from the scripted provider."}]' > hello.json
  dsh run --provider scripted --script hello.json "say hello"`

func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dsh run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sf := registerSettingFlags(fs)
	rf, pos, err := headless.ParseRunFlags(fs, args)
	usageFail := func(msg string) int {
		if rf.JSON {
			_ = headless.NewProjector(stdout).Error(msg)
		} else {
			fmt.Fprintf(stderr, "dsh: %s\n", msg)
		}
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, "Usage: dsh run [flags] [--json] [-c | --session-id ID] [--image PATH]... [TASK...|-]   (alias: dsh --profile headless)\n\n"+
				"Perform one task and exit. The task is the joined words, or stdin when there are none or the only word is -.\n"+
				"With words and piped stdin, the piped text (at most 256 KiB) follows the task as context.\n"+
				"Each --image (PNG, JPEG, GIF or WebP, at most 20 MiB) follows the task in its message; the model must take images.\n"+
				"Plain runs show progress on stderr and the answer on stdout; --json writes run events to stdout.\n"+
				"Exit status: 0 when the turn completed, 1 otherwise, 2 for usage errors, 130 after Ctrl-C.\n\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fmt.Fprint(stdout, "\n"+envDoc)
			return 0
		}
		return usageFail(err.Error())
	}
	s, err := sf.resolve("auto")
	if err != nil {
		return usageFail(err.Error())
	}
	// Before the task is read and before any session opens: a bad image
	// leaves stdin unread and nothing recorded.
	images, err := headless.LoadImages(rf.Images)
	if err != nil {
		return usageFail(err.Error())
	}
	isTTY, piped := false, true
	if f, ok := stdin.(*os.File); ok {
		isTTY = headless.IsTerminal(f)
		// A terminal or a device (/dev/null) carries no piped context.
		fi, err := f.Stat()
		piped = err == nil && fi.Mode()&os.ModeCharDevice == 0
	}
	task, err := headless.ResolveTask(pos, stdin, isTTY)
	if err == nil && len(pos) > 0 && pos[0] != "-" && piped && !isTTY {
		task, err = headless.WithPipedContext(task, stdin, stderr)
	}
	if err != nil {
		// Only command-line mistakes exit 2; stdin that cannot be read is
		// a runner failure like any other (exit 1).
		code := usageFail(err.Error())
		var ue *headless.UsageError
		if !errors.As(err, &ue) {
			code = 1
		}
		return code
	}
	logger := newLogger(stderr, s.LogLevel)
	rt, err := buildRuntime(s, "run", logger)
	if err != nil {
		return usageFail(err.Error())
	}
	ctx, sigCode, stop := signalContext()
	defer stop()
	errTTY := false
	if f, ok := stderr.(*os.File); ok {
		errTTY = headless.IsTerminal(f)
	}
	code := headless.Run(ctx, rt.Runtime, headless.Options{JSON: rf.JSON, SessionID: rf.SessionID, Adopt: rf.SessionIDSet,
		Continue: rf.Continue, Task: task, Images: images, Reconfigure: flagConfig(s), SandboxLine: runSandboxLine(rf, s, rt), Stdout: stdout, Stderr: stderr, Logger: logger, OfflineHint: offlineHint,
		Progress: headless.ProgressOptions{TTY: errTTY, Color: errTTY && os.Getenv("NO_COLOR") == "", Quiet: rf.Quiet}})
	if err := shutdownRuntime(rt); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	// Ctrl-C ends the turn aborted (recorded), then exits as shells expect.
	if c := sigCode(); c != 0 {
		return c
	}
	return code
}

// flagConfig is how an adopted session's configuration changes for the
// model settings given as flags on this command line (a session keeps its
// recorded model otherwise: an environment or config-file default is for
// new sessions), or nil when none was.
func flagConfig(s Settings) func(event.Config) event.Config {
	flagged := func(key string) bool { return strings.HasPrefix(s.Sources[key], "flag ") }
	if !flagged("provider") && !flagged("model") && !flagged("reasoningEffort") && !flagged("maxTokens") {
		return nil
	}
	return func(c event.Config) event.Config {
		if flagged("provider") {
			c.Provider = s.Provider
		}
		if flagged("model") {
			c.Model = s.Model
		}
		if flagged("reasoningEffort") {
			c.ReasoningEffort = s.ReasoningEffort
		}
		if flagged("maxTokens") {
			c.MaxTokens = s.MaxTokens
		}
		return c
	}
}
