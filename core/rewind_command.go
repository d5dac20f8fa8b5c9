package core

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

// rewindUsage answers a /rewind it cannot read.
const rewindUsage = "usage: /rewind (list the turns), /rewind N [files|conversation] [force] (go back to before turn N), /rewind undo [force]"

// runRewind is /rewind: with no argument it lists the turns with their
// prompts; "/rewind N" rewinds to before turn N (files and conversation,
// or the one named), "/rewind undo" undoes the last rewind. A refusal
// (a conflict, a running turn, a turn that does not exist) is the reply.
func runRewind(ctx context.Context, s *Session, args string) (CommandResult, error) {
	fields := strings.Fields(strings.ToLower(args))
	if len(fields) == 0 {
		turns, err := s.Turns()
		if err != nil {
			return CommandResult{}, err
		}
		if len(turns) == 0 {
			return CommandResult{Reply: "This session has no turns yet."}, nil
		}
		return CommandResult{Reply: "Turns of this session (`/rewind N` goes back to before turn N, `/rewind undo` undoes):\n\n```\n" +
			TurnList(turns) + "```"}, nil
	}
	req, ok := parseRewindArgs(fields)
	if !ok {
		return CommandResult{Reply: rewindUsage}, nil
	}
	res, err := s.Rewind(ctx, req)
	var ce *ConflictError
	switch {
	case errors.As(err, &ce):
		return CommandResult{Reply: err.Error() + "\n\nAdd `force` to overwrite them."}, nil
	case errors.Is(err, ErrBadInput), errors.Is(err, ErrBusy), errors.Is(err, ErrNothingToUndo):
		return CommandResult{Reply: "Rewind refused: " + err.Error()}, nil
	case err != nil:
		return CommandResult{}, err
	}
	return CommandResult{Reply: RewindSummary(res), Committed: true, Seq: res.LastSeq}, nil
}

// parseRewindArgs reads "undo [force]" or "N [files|conversation] [force]".
func parseRewindArgs(fields []string) (RewindRequest, bool) {
	var req RewindRequest
	for i, f := range fields {
		switch {
		case f == "undo" && i == 0:
			req.Undo = true
		case i == 0:
			n, err := strconv.Atoi(strings.TrimPrefix(f, "#"))
			if err != nil || n < 1 {
				return req, false
			}
			req.Turn = n
		case f == "force" || f == "--force":
			req.Force = true
		case (f == "files" || f == "--files-only") && !req.Undo && req.Scope == "":
			req.Scope = event.ScopeFiles
		case (f == "conversation" || f == "--conversation-only") && !req.Undo && req.Scope == "":
			req.Scope = event.ScopeConversation
		default:
			return req, false
		}
	}
	return req, true
}
