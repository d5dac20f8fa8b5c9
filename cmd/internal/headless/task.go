package headless

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

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

// MaxPipedContext bounds the piped text a task given as words carries to
// the model: 256 KiB, about 64k tokens.
const MaxPipedContext = 256 << 10

// stdinWaitNote is how long a run waits for piped stdin's first bytes
// before it says on stderr what it is waiting for (a parent that keeps
// stdin open and writes nothing would otherwise look like a hang).
const stdinWaitNote = 3 * time.Second

// WithPipedContext adds what was piped to stdin to a task given as words
// (`printf 'ERROR…' | dsh run "explain this log"`), as `claude -p` and
// `codex exec` do: the task, then the text in a delimited block. Stdin is
// read to its end, at most MaxPipedContext bytes; a longer input is cut
// and said so, to the model and on stderr. Empty stdin leaves the task
// as it is; binary input (a NUL byte) is a usage error. The caller skips
// this when stdin is a terminal or a device such as /dev/null.
func WithPipedContext(task string, stdin io.Reader, stderr io.Writer) (string, error) {
	note := time.AfterFunc(stdinWaitNote, func() {
		fmt.Fprintf(stderr, "dsh: waiting for piped stdin to end (it joins the task as context; run with </dev/null to give none)\n")
	})
	buf := make([]byte, 0, 4096)
	n, err := stdin.Read(buf[:cap(buf)])
	note.Stop()
	buf = buf[:n]
	if err == nil {
		rest, rerr := io.ReadAll(io.LimitReader(stdin, MaxPipedContext+1-int64(n)))
		buf, err = append(buf, rest...), rerr
	}
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read piped stdin: %w", err)
	}
	if strings.TrimSpace(string(buf)) == "" {
		return task, nil
	}
	if bytes.IndexByte(buf, 0) >= 0 {
		return "", usageErrorf("stdin holds binary data (a NUL byte); pipe text to a run, or name the file in the task")
	}
	cut := len(buf) > MaxPipedContext
	if cut {
		buf = buf[:MaxPipedContext]
		fmt.Fprintf(stderr, "dsh: piped stdin is longer than %d KiB; the model gets its first %d KiB\n", MaxPipedContext>>10, MaxPipedContext>>10)
	}
	text := strings.ToValidUTF8(string(buf), "\uFFFD")
	open, close := "<stdin>", "</stdin>"
	for i := 2; strings.Contains(text, close); i++ {
		open, close = fmt.Sprintf("<stdin-%d>", i), fmt.Sprintf("</stdin-%d>", i)
	}
	what := fmt.Sprintf("%d bytes", len(buf))
	if cut {
		what = fmt.Sprintf("cut: its first %d KiB; the rest was not read", MaxPipedContext>>10)
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fmt.Sprintf("%s\n\nThe input piped to this run (stdin, %s):\n%s\n%s%s", task, what, open, text, close), nil
}
