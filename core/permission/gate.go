package permission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/tool"
)

// ParseMode parses a permission mode name: one of ours, or one of the
// original's, accepted as aliases so its launchers run dsh unchanged. Its
// workspace-write lets commands run and files change inside the workspace,
// which is auto; its danger-full-access checks nothing, which is full (its
// read-only is ours).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeReadOnly, ModeAsk, ModeAuto, ModeFull:
		return m, nil
	case "workspace-write":
		return ModeAuto, nil
	case "danger-full-access":
		return ModeFull, nil
	}
	return "", fmt.Errorf("unknown permission mode %q: want read-only, ask, auto or full (or the original's workspace-write or danger-full-access)", s)
}

// Decision sources (Decision.By).
const (
	ByMode    = "mode"
	ByRule    = "rule"
	ByUser    = "user"
	ByNoAsker = "no-asker"
)

// Gate decides tool calls for one session: the mode, then the remembered
// rules, then a person through the Asker. Paths outside the workspace are
// never allowed silently (ARCHITECTURE.md §6): they need a rule or an answer,
// except in full mode.
type Gate struct {
	Mode  Mode
	Rules *Rules // nil: nothing remembered, "always" answers act once
	Asker Asker  // nil: no one can be asked
	// Lists are the user's standing allow and deny lists (see Lists).
	Lists Lists
	// Turn are rules granted for one turn (a custom command's
	// allowed-tools): they stand for a person's "allow once" where the
	// mode would ask, and for nothing else (see Grants).
	Turn Grants
	// Hook is what a PreToolUse hook answered for this call.
	Hook HookVerdict
}

// Grants are allow rules that answer, for a while, the questions the gate
// would ask a person: a call the mode would ask about, inside the
// workspace, that one of Rules matches runs without asking. They never
// reach past a deny (list or rule), a read-only mode's refusal, a path
// outside the workspace, or a command line that cannot be analysed with
// confidence. Source names them in decisions ("allowed-tools of /commit").
type Grants struct {
	Rules  []Rule
	Source string
}

// HookVerdict is a PreToolUse hook's permission decision (Claude Code's
// permissionDecision): HookAllow skips the question the mode would ask
// (as a grant does: no deny, read-only refusal or outside path is passed),
// HookAsk asks even where the mode would allow; deny rules and the deny
// list refuse before either. Reason is the hook's, shown to the person.
type HookVerdict struct {
	Decision string // "", HookAllow or HookAsk
	Reason   string
}

// Hook decisions (HookVerdict.Decision) and the decision source of a
// call a hook allowed.
const (
	HookAllow = "allow"
	HookAsk   = "ask"
	ByHook    = "hook"
)

// granted is the decision of a question the mode would ask that a hook's
// allow or a turn's grant answers; ok is false when neither does.
func (g *Gate) granted(req Request, outside string) (Decision, bool) {
	if outside != "" {
		return Decision{}, false
	}
	if g.Hook.Decision == HookAllow {
		return Decision{Allow: true, By: ByHook, Reason: g.Hook.Reason}, true
	}
	if len(g.Turn.Rules) > 0 {
		if r, ok := (&Rules{rules: g.Turn.Rules}).Match(req); ok && r.Allow {
			return Decision{Allow: true, By: ByRule, Rule: fmt.Sprintf("%s (%s)", r, g.Turn.Source)}, true
		}
	}
	return Decision{}, false
}

// Decide returns the verdict for req. It blocks while the Asker asks and
// honours ctx: a cancelled ctx is a cancelled decision.
//
//   - a call the deny list (Lists) matches is refused, in every mode.
//   - full: everything allowed.
//   - exempt tools (todo_write): always allowed.
//   - a matching deny rule refuses (in every mode but full).
//   - a command line that cannot be analysed with confidence and mentions
//     a denied command is asked about (refused when no one can be asked),
//     whatever the mode would allow.
//   - a call the allow list matches is allowed, in every mode.
//   - read-only: reads inside the workspace; everything else refused.
//   - ask: reads inside the workspace free; the rest by allow rule or asked.
//   - auto: reads, writes and commands inside the workspace free; anything
//     touching a path outside by allow rule or asked.
//
// Asking when no one can be asked refuses.
func (g *Gate) Decide(ctx context.Context, req Request) Decision {
	if ctx.Err() != nil {
		return Decision{Cancelled: true, By: ByUser, Reason: "the tool call was cancelled"}
	}
	mode := g.Mode
	if mode == "" {
		mode = ModeAsk
	}
	listed, inList := g.Lists.match(req)
	if inList && !listed.Allow {
		return Decision{By: ByRule, Rule: listed.String(), Reason: fmt.Sprintf("permission denied: %s is refused by the disallowed-tools list (%s)", action(req, ""), listed)}
	}
	if g.Hook.Decision == HookAsk && !readOnlyRefuses(mode, req) {
		return g.hookAsks(ctx, req)
	}
	if mode == ModeFull {
		return Decision{Allow: true, By: ByMode}
	}
	if req.Kind == string(tool.KindExempt) {
		return Decision{Allow: true, By: ByMode}
	}
	outside := outsidePath(req)
	rule, ruled := g.Rules.Match(req)
	if ruled && !rule.Allow {
		r := rule
		return Decision{By: ByRule, Rule: r.String(), Reason: fmt.Sprintf("permission denied: %s is refused by the rule %s", action(req, ""), r)}
	}
	if r, ok := g.Lists.suspect(req); ok {
		why := fmt.Sprintf("%s cannot be analysed with confidence and may run what the disallowed-tools list refuses (%s)", action(req, ""), r)
		return g.askWhy(ctx, req, why, false)
	}
	if mode != ModeReadOnly && (!ruled || rule.Allow) {
		if r, ok := g.Rules.Suspect(req); ok {
			why := fmt.Sprintf("%s cannot be analysed with confidence and may run what the rule %s refuses", action(req, ""), r)
			return g.askWhy(ctx, req, why, false)
		}
	}
	if inList {
		return Decision{Allow: true, By: ByRule, Rule: listed.String() + " (allowed-tools list)"}
	}
	if req.Kind == string(tool.KindMCP) || req.Kind == string(tool.KindMCPRead) {
		return g.decideMCP(ctx, req, mode, rule, ruled)
	}
	isRead := req.Kind == string(tool.KindRead) && !req.Write
	switch mode {
	case ModeReadOnly:
		if isRead && outside == "" {
			return Decision{Allow: true, By: ByMode}
		}
		if isRead {
			return Decision{By: ByMode, Reason: fmt.Sprintf("permission denied: %s is outside the workspace %s and the session is read-only", action(req, outside), req.Workspace)}
		}
		return Decision{By: ByMode, Reason: fmt.Sprintf("permission denied: the session is read-only; %s is not allowed", action(req, ""))}
	case ModeAsk:
		if isRead && outside == "" {
			return Decision{Allow: true, By: ByMode}
		}
	case ModeAuto:
		if outside == "" {
			return Decision{Allow: true, By: ByMode}
		}
	default:
		return Decision{By: ByMode, Reason: fmt.Sprintf("permission denied: unknown permission mode %q", mode)}
	}
	if ruled && rule.Allow {
		return Decision{Allow: true, By: ByRule, Rule: rule.String()}
	}
	return g.ask(ctx, req, mode, outside)
}

// decideMCP decides a call of an MCP server's tool (deny rules and full
// mode are handled before): read-only runs only tools the server marks
// readOnlyHint; auto runs those and asks for the rest; ask asks for all.
// An allow rule (mcp__server__tool) stands for an answer.
func (g *Gate) decideMCP(ctx context.Context, req Request, mode Mode, rule Rule, ruled bool) Decision {
	readOnly := req.Kind == string(tool.KindMCPRead)
	switch mode {
	case ModeReadOnly:
		if readOnly {
			return Decision{Allow: true, By: ByMode}
		}
		return Decision{By: ByMode, Reason: fmt.Sprintf("permission denied: the session is read-only and its MCP server does not mark %s read-only", req.Tool)}
	case ModeAuto:
		if readOnly {
			return Decision{Allow: true, By: ByMode}
		}
	case ModeAsk:
	default:
		return Decision{By: ByMode, Reason: fmt.Sprintf("permission denied: unknown permission mode %q", mode)}
	}
	if ruled && rule.Allow {
		return Decision{Allow: true, By: ByRule, Rule: rule.String()}
	}
	return g.ask(ctx, req, mode, "")
}

// readOnlyRefuses reports whether a read-only session refuses req whatever
// a person would answer: anything but a read inside the workspace. A
// hook's ask must not turn that refusal into a question a person could
// approve.
func readOnlyRefuses(mode Mode, req Request) bool {
	if mode != ModeReadOnly || req.Kind == string(tool.KindMCPRead) {
		return false
	}
	return req.Kind != string(tool.KindRead) || req.Write || outsidePath(req) != ""
}

// hookAsks asks about a call a PreToolUse hook wants asked about, in
// every mode (a read-only session's refusals stay refusals, see
// readOnlyRefuses); a deny rule still refuses it first.
func (g *Gate) hookAsks(ctx context.Context, req Request) Decision {
	if rule, ruled := g.Rules.Match(req); ruled && !rule.Allow {
		return Decision{By: ByRule, Rule: rule.String(), Reason: fmt.Sprintf("permission denied: %s is refused by the rule %s", action(req, ""), rule)}
	}
	why := action(req, "") + " needs approval: a PreToolUse hook asks for it"
	if g.Hook.Reason != "" {
		why += " (" + g.Hook.Reason + ")"
	}
	return g.askWhy(ctx, req, why, false)
}

// ask asks a person about a call the mode does not allow by itself,
// unless a hook's allow or a turn's grant answers for them.
func (g *Gate) ask(ctx context.Context, req Request, mode Mode, outside string) Decision {
	if d, ok := g.granted(req, outside); ok {
		return d
	}
	why := fmt.Sprintf("%s needs approval in %s mode", action(req, ""), mode)
	if outside != "" {
		why = fmt.Sprintf("%s is outside the workspace %s", action(req, outside), req.Workspace)
	}
	return g.askWhy(ctx, req, why, true)
}

// askWhy asks about req, why being the reason given if it is refused.
// canRemember false turns an "allow always" into an allow of this call
// only: no rule could stand for the answer.
func (g *Gate) askWhy(ctx context.Context, req Request, why string, canRemember bool) Decision {
	if g.Asker == nil {
		return Decision{By: ByNoAsker, Reason: "permission denied: " + why + " and no one could be asked"}
	}
	ans, err := g.Asker.Ask(ctx, req)
	if err != nil {
		switch {
		case ctx.Err() != nil || errors.Is(err, context.Canceled):
			return Decision{Cancelled: true, By: ByUser, Reason: "the tool call was cancelled"}
		case errors.Is(err, ErrNoAsker):
			return Decision{By: ByNoAsker, Reason: "permission denied: " + why + " and no one could be asked"}
		}
		return Decision{By: ByNoAsker, Reason: fmt.Sprintf("permission denied: %s and asking for permission failed: %v", why, err)}
	}
	switch ans {
	case AllowOnce:
		return Decision{Allow: true, By: ByUser}
	case AllowAlways:
		if !canRemember {
			return Decision{Allow: true, By: ByUser}
		}
		return Decision{Allow: true, By: ByUser, Rule: g.remember(req, true)}
	case RejectOnce:
		return Decision{By: ByUser, Reason: fmt.Sprintf("permission denied: the user refused %s", action(req, ""))}
	case RejectAlways:
		rule := g.remember(req, false)
		return Decision{By: ByUser, Rule: rule, Reason: fmt.Sprintf("permission denied: the user refused %s, and will refuse it from now on", action(req, ""))}
	case Cancelled:
		return Decision{Cancelled: true, By: ByUser, Reason: "the user cancelled this tool call"}
	}
	return Decision{By: ByUser, Reason: fmt.Sprintf("permission denied: unknown answer %q to the permission request", ans)}
}

// remember persists the rules of an "always" answer. A failure to persist
// does not change the answer (the person decided); it is logged.
func (g *Gate) remember(req Request, allow bool) string {
	rules := RulesFor(req, allow)
	names := make([]string, 0, len(rules))
	for _, r := range rules {
		names = append(names, r.String())
		if g.Rules == nil {
			continue
		}
		if err := g.Rules.Add(r); err != nil {
			slog.Warn("permission: could not remember rule", "rule", r.String(), "err", err)
		}
	}
	return strings.Join(names, "; ")
}

// outsidePath returns the first path of req outside its workspace and its
// other roots, or "". With no workspace every path is outside.
func outsidePath(req Request) string {
	for _, p := range req.Paths {
		if req.Workspace == "" || !insideAny(req, p) {
			return p
		}
	}
	return ""
}

func insideAny(req Request, p string) bool {
	if tool.Inside(req.Workspace, p) {
		return true
	}
	for _, r := range req.Roots {
		if r != "" && tool.Inside(r, p) {
			return true
		}
	}
	return false
}

// action words what a call does, for reasons: "writing /w/a.go",
// "running `make`". at names the path to mention (the outside one).
func action(req Request, at string) string {
	if req.Command != "" {
		cmd := strings.TrimSpace(req.Command)
		if len(cmd) > 200 {
			cmd = cmd[:200] + "…"
		}
		s := fmt.Sprintf("running `%s`", cmd)
		if at != "" {
			s += " in " + at
		}
		return s
	}
	p := at
	if p == "" && len(req.Paths) > 0 {
		p = req.Paths[0]
		if len(req.Paths) > 1 {
			p += fmt.Sprintf(" (and %d more)", len(req.Paths)-1)
		}
	}
	verb := "using " + req.Tool
	switch {
	case req.Write || req.Kind == string(tool.KindMutate):
		verb = "writing"
	case req.Kind == string(tool.KindRead):
		verb = "reading"
	}
	if p == "" {
		return "using " + req.Tool
	}
	if verb == "using "+req.Tool {
		return verb + " on " + p
	}
	return verb + " " + p
}

// Payload is the permission/decision event payload recording d for req.
func (d Decision) Payload(req Request) event.PermissionDecision {
	verdict := "deny"
	switch {
	case d.Cancelled:
		verdict = "cancelled"
	case d.Allow:
		verdict = "allow"
	}
	return event.PermissionDecision{CallID: req.CallID, Tool: req.Tool, Decision: verdict, By: d.By, Rule: d.Rule, Detail: d.Reason}
}
