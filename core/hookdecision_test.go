package core

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
)

// policyHooks runs policy.sh before every bash call: the script answers
// as Claude Code hooks do, by what the command says.
const policyHooks = `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./policy.sh"}]}]}}`

const policyScript = `#!/bin/sh
in=$(cat)
case "$in" in
*'echo trusted'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"trusted by policy"}}' ;;
*'echo careful'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"double-check this"}}' ;;
*'echo forbidden'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy forbids it"}}' ;;
*'echo old-approve'*) echo '{"decision":"approve","reason":"legacy"}' ;;
*'rm -r'*) echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}' ;;
*'echo original'*) echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"echo rewritten"}}}' ;;
*'echo broken'*) echo '{"hookSpecificOutput":{"updatedInput":{"command":5}}}' ;;
esac
exit 0
`

// decisions are the session's permission/decision events by call.
func decisions(s *Session) map[string]event.PermissionDecision {
	out := map[string]event.PermissionDecision{}
	for _, e := range s.Events() {
		if e.Type == event.TypePermissionDecision {
			d, _ := event.Decode[event.PermissionDecision](e)
			out[d.CallID] = d
		}
	}
	return out
}

func shCall(id, cmd string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "bash", Arguments: `{"command":"` + cmd + `"}`}
}

func TestPreToolUseHookAnswersForTheGate(t *testing.T) {
	files := map[string]string{".claude/settings.json": policyHooks, "policy.sh": policyScript}
	steps := []stepFunc{calls(shCall("allow", "echo trusted"), shCall("plain", "echo plain"), shCall("deny", "echo forbidden"),
		shCall("old", "echo old-approve"), shCall("rm", "rm -r build")), text("done")}
	h := extHarness(t, true, files, steps...)
	if err := h.rt.rulesFor(h.cwd).Add(permission.Rule{Tool: "bash", Pattern: "rm"}); err != nil {
		t.Fatal(err)
	}
	asker := &askRecorder{}
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, PermissionMode: permission.ModeAsk, Asker: asker})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "go"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	// allow (and the old approve) skip the question; the plain call is
	// asked; deny refuses with the hook's reason to the model; allow
	// does not pass a deny rule.
	if got := asker.commands(); !slices.Equal(got, []string{"echo plain"}) {
		t.Errorf("asked about %q", got)
	}
	ds := decisions(s)
	for _, id := range []string{"allow", "old"} {
		if d := ds[id]; d.Decision != "allow" || d.By != permission.ByHook {
			t.Errorf("%s: %+v", id, d)
		}
		if r := resultOf(t, s, id); r.Error != nil {
			t.Errorf("%s did not run: %+v", id, r.Error)
		}
	}
	if d := ds["allow"]; d.Detail != "trusted by policy" {
		t.Errorf("the hook's reason is not recorded: %+v", d)
	}
	r := resultOf(t, s, "deny")
	if r.Error == nil || r.Error.Code != event.ToolPermissionDenied || !strings.Contains(event.ResultText(r.Message.Content[0]), "policy forbids it") {
		t.Errorf("deny: %+v %s", r.Error, event.ResultText(r.Message.Content[0]))
	}
	if d := ds["rm"]; d.Decision != "deny" || d.By != permission.ByRule {
		t.Errorf("a hook's allow passed a deny rule: %+v", d)
	}
}

func TestPreToolUseHookAskInFullMode(t *testing.T) {
	files := map[string]string{".claude/settings.json": policyHooks, "policy.sh": policyScript}
	h := extHarness(t, true, files, calls(shCall("ask", "echo careful"), shCall("free", "echo free")), text("done"))
	asker := &askRecorder{}
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, PermissionMode: permission.ModeFull, Asker: asker})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "go")
	if got := asker.commands(); !slices.Equal(got, []string{"echo careful"}) {
		t.Errorf("asked about %q, want only the call the hook wants asked", got)
	}
	if d := decisions(s)["ask"]; d.Decision != "allow" || d.By != permission.ByUser {
		t.Errorf("ask: %+v", d)
	}
}

func TestPreToolUseHookUpdatedInput(t *testing.T) {
	files := map[string]string{".claude/settings.json": policyHooks, "policy.sh": policyScript}
	h := extHarness(t, true, files, calls(shCall("up", "echo original"), shCall("bad", "echo broken")), text("done"))
	asker := &askRecorder{}
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, PermissionMode: permission.ModeAsk, Asker: asker})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "go")
	r := resultOf(t, s, "up")
	if out := event.ResultText(r.Message.Content[0]); r.Error != nil || !strings.Contains(out, "rewritten") || strings.Contains(out, "original") {
		t.Errorf("the hook's input did not run: %+v %q", r.Error, out)
	}
	ds := decisions(s)
	if d := ds["up"]; string(d.Input) != `{"command":"echo rewritten"}` || d.By != permission.ByHook {
		t.Errorf("the updated input is not recorded: %+v", d)
	}
	// The model's own arguments stay in its message and tool/call.
	for _, e := range s.Events() {
		if e.Type == event.TypeToolCall {
			if c, _ := event.Decode[event.ToolCall](e); c.CallID == "up" && !strings.Contains(c.Arguments, "echo original") {
				t.Errorf("tool/call rewritten: %s", c.Arguments)
			}
		}
	}
	bad := resultOf(t, s, "bad")
	if bad.Error == nil || bad.Error.Code != event.ToolInvalidArguments || !strings.Contains(event.ResultText(bad.Message.Content[0]), "PreToolUse hook") {
		t.Errorf("invalid updatedInput: %+v %s", bad.Error, event.ResultText(bad.Message.Content[0]))
	}
	if d := ds["bad"]; d.Decision != "deny" || len(d.Input) == 0 {
		t.Errorf("invalid updatedInput not recorded: %+v", d)
	}
	if len(asker.commands()) != 0 {
		t.Errorf("asked about %q", asker.commands())
	}
}
