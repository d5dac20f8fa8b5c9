package headless

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dsh-dev/dsh/cmd/internal/argv"
)

// UsageError is a command-line mistake: the process exits 2 with its message
// on one line (or, in --json mode, as an `error` event). The message never
// carries an "error: " prefix, so one event type has one message shape.
type UsageError = argv.UsageError

func usageErrorf(format string, a ...any) *UsageError {
	return &UsageError{Msg: fmt.Sprintf(format, a...)}
}

// Task resolution messages.
const (
	msgTaskRequired = `a task is required, for example: dsh run "run the tests"`
	msgDashAlone    = "`-` must be the only task argument"
)

// ResolveTask returns the task text of a run. Order: the positionals joined
// by single spaces; else a lone `-`, which reads all of stdin; else, with no
// positional at all, piped stdin. Stdin is returned verbatim, trailing
// newline included.
//
// Usage errors (*UsageError): `-` mixed with other words; positionals that
// are blank once joined (stdin is then never read, so an accidental blank
// argument cannot consume a pipe meant for something else); no positional
// while stdin is a terminal; stdin that is blank. A failure to read stdin is
// an ordinary error.
func ResolveTask(args []string, stdin io.Reader, stdinIsTerminal bool) (string, error) {
	if len(args) > 0 {
		for _, a := range args {
			if a == "-" && len(args) > 1 {
				return "", usageErrorf("%s", msgDashAlone)
			}
		}
		if args[0] != "-" {
			task := strings.Join(args, " ")
			if strings.TrimSpace(task) == "" {
				return "", usageErrorf("%s", msgTaskRequired)
			}
			return task, nil
		}
		// A lone `-` reads stdin even from a terminal: the user asked for
		// it explicitly and ends the task with EOF.
	} else if stdinIsTerminal {
		return "", usageErrorf("%s", msgTaskRequired)
	}
	if stdin == nil {
		return "", usageErrorf("%s", msgTaskRequired)
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return "", fmt.Errorf("read task from stdin: %w", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", usageErrorf("%s", msgTaskRequired)
	}
	return string(data), nil
}

// IsTerminal reports whether f is an interactive terminal (on Linux by
// asking the tty driver, elsewhere by the character-device bit). Without a
// terminal check a run started from a shell with no task would block
// forever reading the keyboard; with one, it fails with a usage error.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	return isTerminal(f)
}

// isCharDevice is the fallback off Linux: any character device. It also
// matches /dev/null, which then reads as "no task" — the same usage error
// an empty pipe gets, so the imprecision is harmless.
func isCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0
}
