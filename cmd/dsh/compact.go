package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/store"
)

const compactHelp = "Usage: dsh sessions compact ID [FOCUS...]\n\n" +
	"Compact a stored session now: the session's model writes a summary of the conversation, which replaces it\n" +
	"from then on (the log keeps everything). FOCUS, if given, says what the summary should focus on.\n" +
	"ID may be a unique prefix. Exits once the checkpoint is committed; refused while a process is writing the session.\n" +
	"SIGINT or SIGTERM cancel the summary call and leave the session as it was."

// sessionsCompact runs `dsh sessions compact ID [FOCUS...]` with the
// model settings of this invocation.
func sessionsCompact(s Settings, f sessionsFlags, rest []string, stdout, stderr io.Writer) int {
	if len(rest) == 0 || rest[0] == "" {
		fmt.Fprintf(stderr, "dsh sessions compact: a session ID is required\n%s\n", compactHelp)
		return 2
	}
	if f.asJSON {
		fmt.Fprintln(stderr, "dsh sessions compact: --json applies to list and show")
		return 2
	}
	id, err := store.New(s.SessionRoot).Resolve(rest[0])
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions compact: %v\n", err)
		return 1
	}
	ctx, sess, done, ok := resumeStored(s, "compact", id, stderr)
	if !ok {
		return 1
	}
	defer done()
	c, err := sess.Compact(ctx, strings.Join(rest[1:], " "))
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "dsh sessions compact: cancelled; the session is unchanged")
		return 1
	case errors.Is(err, core.ErrNothingToCompact):
		fmt.Fprintf(stdout, "session %s has nothing to compact yet\n", printable(id))
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "dsh sessions compact: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "compacted session %s: %d messages summarised, about %d tokens before and %d after (window %d)\n",
		printable(id), c.ReplacedMessages, c.TokensBefore, c.TokensAfter, c.ContextWindow)
	return 0
}

// resumeStored builds a runtime and resumes the stored session id for
// `dsh sessions VERB`, under a context that SIGINT and SIGTERM cancel; done
// ends both. When ok is false it has said why on stderr.
func resumeStored(s Settings, verb, id string, stderr io.Writer) (ctx context.Context, sess *core.Session, done func(), ok bool) {
	rt, err := buildRuntime(s, "run", newLogger(stderr, s.LogLevel))
	if err != nil {
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return nil, nil, nil, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	done = func() {
		stop()
		_ = shutdownRuntime(rt)
	}
	if sess, err = rt.Resume(ctx, id, core.SessionOptions{}); err != nil {
		done()
		fmt.Fprintf(stderr, "dsh sessions %s: %v\n", verb, err)
		return nil, nil, nil, false
	}
	return ctx, sess, done, true
}
