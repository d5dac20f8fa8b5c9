package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

const rewindHelp = "Usage: dsh sessions rewind ID [TURN] [--files-only|--conversation-only] [--force] [--json]\n" +
	"       dsh sessions rewind ID --undo [--force]\n\n" +
	"Take a stored session back to before turn TURN: the workspace files (and additional roots) as they were when\n" +
	"the turn started, whatever changed them, and the conversation continued from there (the later turns stay in\n" +
	"the log, marked rewound, and the model never sees them again). Without TURN, list the turns with their prompts.\n" +
	"--files-only restores the files alone, --conversation-only the conversation alone. A file changed outside the\n" +
	"agent since that snapshot is not overwritten: the rewind is refused, naming the files, unless --force (its\n" +
	"current content is then kept for --undo). --undo puts files and conversation back as they were just before the\n" +
	"last rewind. ID may be a unique prefix. Refused while a process is writing the session."

// rewindFlags are the flags of dsh sessions rewind.
type rewindFlags struct{ filesOnly, convOnly, force, undo bool }

func (r *rewindFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&r.filesOnly, "files-only", false, "rewind: restore the files only")
	fs.BoolVar(&r.convOnly, "conversation-only", false, "rewind: rewind the conversation only")
	fs.BoolVar(&r.force, "force", false, "rewind: overwrite files changed outside the agent")
	fs.BoolVar(&r.undo, "undo", false, "rewind: undo the last rewind")
}

func (r rewindFlags) any() bool { return r.filesOnly || r.convOnly || r.force || r.undo }

// request turns the flags and the TURN argument into a core request.
func (r rewindFlags) request(rest []string) (core.RewindRequest, error) {
	req := core.RewindRequest{Undo: r.undo, Force: r.force}
	switch {
	case r.filesOnly && r.convOnly:
		return req, errors.New("--files-only and --conversation-only exclude each other")
	case r.undo && (r.filesOnly || r.convOnly):
		return req, errors.New("--undo undoes the last rewind in its own scope; leave out --files-only and --conversation-only")
	case r.undo && len(rest) > 0:
		return req, fmt.Errorf("--undo takes no TURN (got %q)", rest[0])
	case len(rest) > 1:
		return req, fmt.Errorf("unexpected argument %q", rest[1])
	case r.filesOnly:
		req.Scope = event.ScopeFiles
	case r.convOnly:
		req.Scope = event.ScopeConversation
	}
	if len(rest) == 1 {
		n, err := strconv.Atoi(rest[0])
		if err != nil || n < 1 {
			return req, fmt.Errorf("TURN %q is not a turn number (1 or more)", rest[0])
		}
		req.Turn = n
	}
	return req, nil
}

// sessionsRewind runs `dsh sessions rewind ID [TURN]` / `--undo`.
func sessionsRewind(s Settings, f sessionsFlags, rest []string, stdout, stderr io.Writer) int {
	if len(rest) == 0 || rest[0] == "" {
		fmt.Fprintf(stderr, "dsh sessions rewind: a session ID is required\n%s\n", rewindHelp)
		return 2
	}
	req, err := f.rewind.request(rest[1:])
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions rewind: %v\n", err)
		return 2
	}
	id, err := store.New(s.SessionRoot).Resolve(rest[0])
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions rewind: %v\n", err)
		return 1
	}
	ctx, sess, done, ok := resumeStored(s, "rewind", id, stderr)
	if !ok {
		return 1
	}
	defer done()
	if req.Turn == 0 && !req.Undo {
		return listTurns(sess, f.asJSON, stdout, stderr)
	}
	res, err := sess.Rewind(ctx, req)
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions rewind: %v\n", err)
		return 1
	}
	if f.asJSON {
		return writeJSON(stdout, stderr, res)
	}
	fmt.Fprintln(stdout, core.RewindSummary(res))
	return 0
}

func listTurns(sess *core.Session, asJSON bool, stdout, stderr io.Writer) int {
	turns, err := sess.Turns()
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions rewind: %v\n", err)
		return 1
	}
	if asJSON {
		return writeJSON(stdout, stderr, turns)
	}
	if len(turns) == 0 {
		fmt.Fprintf(stdout, "session %s has no turns yet\n", printable(sess.ID()))
		return 0
	}
	fmt.Fprint(stdout, core.TurnList(turns))
	return 0
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "dsh sessions rewind: %v\n", err)
		return 1
	}
	return 0
}
