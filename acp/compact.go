package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// compactCommand reports whether a prompt is the /compact slash command
// and returns its focus text.
func compactCommand(blocks []sdk.ContentBlock) (string, bool) {
	if len(blocks) == 0 || blocks[0].Text == nil {
		return "", false
	}
	t := strings.TrimLeft(blocks[0].Text.Text, " \t\r\n")
	rest, ok := strings.CutPrefix(t, "/compact")
	if !ok || (rest != "" && !strings.ContainsAny(rest[:1], " \t\r\n")) {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// compact runs /compact: it answers end_turn once the checkpoint is
// committed and its notice is on the wire, cancelled when session/cancel
// (or the request's cancellation) stopped the summary call.
func (a *agent) compact(ctx context.Context, st *sessState, focus string) (sdk.PromptResponse, error) {
	type outcome struct {
		c   *core.Compaction
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		c, err := st.s.Compact(context.WithoutCancel(ctx), focus)
		done <- outcome{c, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		st.s.Cancel(nil)
		o = <-done
	}
	switch {
	case errors.Is(o.err, context.Canceled):
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case errors.Is(o.err, core.ErrNothingToCompact):
		msg := sdk.UpdateAgentMessageText("There is no conversation to compact yet.")
		if err := a.pump.enqueueWait(ctx, item{st: st, update: &msg}); err != nil {
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	case o.err != nil:
		return sdk.PromptResponse{}, rpcError(codeInternalError, "compaction failed: %v", o.err)
	}
	_ = st.waitFor(context.Background(), a.pump.stopped, func() bool { return st.sent >= o.c.Seq })
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

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
