package core

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/tool"
)

// admit decides whether a validated call runs: its PreToolUse hooks
// first (a block refuses it; an updatedInput replaces its arguments,
// which are validated again; an allow or ask answers for the gate, as
// Claude Code's precedence has it: deny rules and lists still refuse),
// then the permission gate. The decision is recorded, with the arguments
// a hook put in place of the model's. It sets p.out when the call must
// not run.
func (s *Session) admit(ctx context.Context, p *prepared, acc tool.Access, env *tool.Env) {
	c := p.call
	hook := s.preToolHooks(ctx, p.t.Name(), c.ID, p.args)
	rec := event.PermissionDecision{CallID: c.ID, Tool: p.t.Name()}
	if hook.Block {
		rec.Decision, rec.By, rec.Detail = "deny", permission.ByHook, hook.Reason
		s.recordDecision(rec)
		p.out = &outcome{res: tool.ErrorResult("refused by a PreToolUse hook: " + hook.Reason), code: event.ToolPermissionDenied}
		return
	}
	if hook.UpdatedInput != nil {
		rec.Input = hook.UpdatedInput
		updated, err := s.hookInput(p.t, hook.UpdatedInput, env)
		if err != nil {
			rec.Decision, rec.By, rec.Detail = "deny", permission.ByHook, "its updatedInput is invalid: "+err.Error()
			s.recordDecision(rec)
			p.out = &outcome{res: tool.ErrorResult("not run: a PreToolUse hook replaced the arguments with invalid ones: " + err.Error()),
				code: event.ToolInvalidArguments}
			return
		}
		p.args, acc = hook.UpdatedInput, updated
	}
	if p.t.Kind() != tool.KindExecute && !acc.SessionOwned {
		p.paths = acc.Paths
	}
	var d permission.Decision
	if acc.SessionOwned && !acc.Write && hook.Decision != ext.DecisionAsk {
		// Reading the session's own spill files needs nobody's leave.
		d = permission.Decision{Allow: true, By: "session"}
	} else {
		verdict := permission.HookVerdict{Decision: hook.Decision, Reason: hook.DecisionReason}
		d = s.decide(ctx, permission.Request{CallID: c.ID, Tool: p.t.Name(), Kind: string(p.t.Kind()), Paths: acc.Paths,
			Write: acc.Write, Command: acc.Command, Title: acc.Title, RawInput: p.args,
			ShowKind: displayKind(p.t), Preview: s.preview(p.t, p.args, env)},
			func(g *permission.Gate) { g.Hook = verdict })
	}
	rec.Decision, rec.By, rec.Rule, rec.Detail = "allow", d.By, d.Rule, d.Reason
	switch {
	case d.Cancelled:
		rec.Decision = "cancelled"
	case !d.Allow:
		rec.Decision = "deny"
	}
	s.recordDecision(rec)
	switch {
	case d.Cancelled:
		p.out = &outcome{res: tool.ErrorResult("not run: the permission request was cancelled"), code: event.ToolAborted}
	case !d.Allow:
		reason := d.Reason
		if reason == "" {
			reason = "permission denied"
		}
		p.out = &outcome{res: tool.ErrorResult(reason), code: event.ToolPermissionDenied}
	}
}

var errNotObject = errors.New("not a JSON object")

// hookInput validates arguments a PreToolUse hook put in place of the
// model's, as the model's own are: a JSON object the tool accepts.
func (s *Session) hookInput(t tool.Tool, args json.RawMessage, env *tool.Env) (tool.Access, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return tool.Access{}, errNotObject
	}
	return s.inspect(t, args, env)
}

// recordDecision commits a permission/decision; a failure to record is
// logged (the call is decided either way).
func (s *Session) recordDecision(d event.PermissionDecision) {
	if err := s.Record(event.New(event.TypePermissionDecision, d)); err != nil {
		s.rt.log.Warn("permission decision not recorded", "session", s.id, "err", err)
	}
}
