package acp

import sdk "github.com/coder/acp-go-sdk"

// sandboxNotice is the message that tells the user, once in each session
// this connection opens, what the sandbox cannot contain on this machine;
// nil when it contains everything. It goes out after the session's slash
// commands, like the other start-of-session messages, and is not an event
// of the session: it is a fact of this dsh process, not of the session's
// history (a later process on another machine may contain everything).
func (a *agent) sandboxNotice() *sdk.SessionUpdate {
	if a.opts.SandboxNotice == nil {
		return nil
	}
	n := a.opts.SandboxNotice()
	if n == "" {
		return nil
	}
	u := sdk.UpdateAgentMessageText("⚠ " + n)
	return &u
}
