package acp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// compactionNotice is the short agent message that shows a compaction in
// the editor, live and when a session is loaded.
func compactionNotice(cp event.CompactionCheckpoint) string {
	why := map[string]string{event.CompactAuto: "it neared the context window",
		event.CompactOverflow: "the model refused it as too long", event.CompactManual: "/compact"}[cp.Trigger]
	if why == "" {
		why = cp.Trigger
	}
	return fmt.Sprintf("\n\n*Context compacted (%s): %s summarised; about %d of %d tokens before, %d after.*\n\n",
		why, plural(cp.ReplacedMessages, "message"), cp.TokensBefore, cp.ContextWindow, cp.TokensAfter)
}

// trimNotice shows messages dropped to fit the window.
func trimNotice(tr event.CompactionTrim) string {
	return fmt.Sprintf("\n\n*%s dropped to fit the context window (%s).*\n\n", plural(tr.Dropped, "older message"), tr.Reason)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// command runs a prompt that is one of the session's slash commands (core's
// registry). done says it was answered: resp is the prompt's answer. A
// command that expands to a prompt (/init) returns the blocks to send in
// its place; a prompt that is no command returns blocks unchanged.
//
// opts are what a command file asks of the turn its prompt starts.
func (a *agent) command(ctx context.Context, st *sessState, blocks []sdk.ContentBlock) (prompt []sdk.ContentBlock, opts core.PromptOptions, resp sdk.PromptResponse, done bool, err error) {
	if len(blocks) == 0 || blocks[0].Text == nil {
		return blocks, opts, resp, false, nil
	}
	name, args, ok := core.ParseCommand(blocks[0].Text.Text)
	if !ok {
		return blocks, opts, resp, false, nil
	}
	res, err := st.s.RunCommand(ctx, name, args)
	switch {
	case errors.Is(err, core.ErrUnknownCommand):
		return blocks, opts, resp, false, nil // not ours: the model reads it
	case errors.Is(err, context.Canceled) || (err != nil && ctx.Err() != nil):
		return nil, opts, sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, true, nil
	case errors.Is(err, core.ErrUntrusted) || errors.Is(err, core.ErrHookBlocked) || errors.Is(err, core.ErrBadInput):
		resp, err := a.refused(ctx, st, err.Error())
		return nil, opts, resp, true, err
	case err != nil:
		return nil, opts, resp, true, rpcError(codeInternalError, "/%s failed: %v", name, err)
	case res.Prompt != "":
		prompt = append([]sdk.ContentBlock{sdk.TextBlock(res.Prompt)}, blocks[1:]...)
		return prompt, core.PromptOptions{Command: res.Turn}, resp, false, nil
	}
	if res.Reply != "" {
		msg := sdk.UpdateAgentMessageText(res.Reply)
		if err := st.rd.pushWait(ctx, item{update: &msg}); err != nil {
			return nil, opts, sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, true, nil
		}
	}
	if res.Committed {
		_ = st.waitFor(context.Background(), func() bool { return st.sent >= res.Seq })
	}
	return nil, opts, sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, true, nil
}

// rewindNotice is the short agent message that shows, in a replay, where
// the session was rewound (the rewound turns themselves are left out).
func rewindNotice(rw event.Rewind) string {
	if rw.Undo {
		return fmt.Sprintf("\n\n*Undid the rewind to before turn %d (%s).*\n\n", rw.Turn, rw.Scope)
	}
	return fmt.Sprintf("\n\n*Rewound to before turn %d (%s): %d file(s) restored.*\n\n", rw.Turn, rw.Scope, rw.ChangeCount)
}
