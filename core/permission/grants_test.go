package permission

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestTurnGrantsAndHookVerdicts: a turn's grants and a hook's allow stand
// for an answer only where the mode would ask, inside the workspace; a
// hook's ask asks in every mode; deny rules and lists refuse before all.
func TestTurnGrantsAndHookVerdicts(t *testing.T) {
	ws := t.TempDir()
	rules, err := LoadRules(filepath.Join(t.TempDir(), "rules.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.Add(Rule{Tool: "bash", Pattern: "git push"}); err != nil {
		t.Fatal(err)
	}
	grants := Grants{Rules: []Rule{{Tool: "bash", Pattern: "git", Allow: true}, {Tool: "write", Pattern: "*", Allow: true}}, Source: "allowed-tools of /ship"}
	bash := func(cmd string) Request {
		return Request{Tool: "bash", Kind: "execute", Command: cmd, Paths: []string{ws}, Workspace: ws}
	}
	write := func(p string) Request {
		return Request{Tool: "write", Kind: "mutate", Write: true, Paths: []string{p}, Workspace: ws}
	}
	for _, tc := range []struct {
		name   string
		mode   Mode
		turn   Grants
		hook   string
		req    Request
		allow  bool
		asked  bool
		by     string
		inRule string
	}{
		{"granted command", ModeAsk, grants, "", bash("git add -A"), true, false, ByRule, "allowed-tools of /ship"},
		{"ungranted command asks", ModeAsk, grants, "", bash("make"), true, true, ByUser, ""},
		{"grant never passes a deny rule", ModeAsk, grants, "", bash("git push"), false, false, ByRule, "deny bash(git push)"},
		{"grant inside only", ModeAsk, grants, "", write("/etc/dsh-never"), true, true, ByUser, ""},
		{"granted write inside", ModeAsk, grants, "", write(filepath.Join(ws, "a.go")), true, false, ByRule, "allowed-tools"},
		{"read-only stays read-only", ModeReadOnly, grants, HookAllow, write(filepath.Join(ws, "a.go")), false, false, ByMode, ""},
		{"hook allow", ModeAsk, Grants{}, HookAllow, bash("make"), true, false, ByHook, ""},
		{"hook allow never passes a deny rule", ModeAsk, Grants{}, HookAllow, bash("git push"), false, false, ByRule, "deny"},
		{"hook allow does not reach outside", ModeAsk, Grants{}, HookAllow, write("/etc/dsh-never"), true, true, ByUser, ""},
		{"hook ask in full mode", ModeFull, Grants{}, HookAsk, bash("ls"), true, true, ByUser, ""},
		{"hook ask beats a grant", ModeAsk, grants, HookAsk, bash("git add x"), true, true, ByUser, ""},
		{"deny rule before hook ask", ModeAuto, Grants{}, HookAsk, bash("git push"), false, false, ByRule, "deny"},
		{"hook ask cannot open a read-only session to a write", ModeReadOnly, Grants{}, HookAsk, write(filepath.Join(ws, "a.go")), false, false, ByMode, ""},
		{"hook ask cannot open a read-only session to a command", ModeReadOnly, Grants{}, HookAsk, bash("make"), false, false, ByMode, ""},
		{"hook ask cannot open a read-only session to a read outside", ModeReadOnly, Grants{}, HookAsk, Request{Tool: "read", Kind: "read", Paths: []string{"/etc/dsh-never"}, Workspace: ws}, false, false, ByMode, ""},
		{"hook ask on a read in a read-only session asks", ModeReadOnly, Grants{}, HookAsk, Request{Tool: "read", Kind: "read", Paths: []string{filepath.Join(ws, "a.go")}, Workspace: ws}, true, true, ByUser, ""},
	} {
		a := &testAsker{answer: AllowOnce}
		g := Gate{Mode: tc.mode, Rules: rules, Asker: a, Turn: tc.turn, Hook: HookVerdict{Decision: tc.hook}}
		d := g.Decide(context.Background(), tc.req)
		if d.Allow != tc.allow || (len(a.asked) > 0) != tc.asked || d.By != tc.by || !strings.Contains(d.Rule, tc.inRule) {
			t.Errorf("%s: %+v (asked %d)", tc.name, d, len(a.asked))
		}
	}
}
