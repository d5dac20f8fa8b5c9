package core

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/model"
)

// writeTree writes files (path relative to root: content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// extHarness is a harness whose project (h.cwd) is trusted or not.
func extHarness(t *testing.T, trusted bool, files map[string]string, steps ...stepFunc) *harness {
	h := &harness{t: t, prov: &testProvider{steps: steps}, root: t.TempDir(), cwd: t.TempDir()}
	writeTree(t, h.cwd, files)
	h.rt = h.runtimeWith(func(c *Config) {
		if trusted {
			c.Extensions.TrustedProjects = []string{h.cwd}
		}
	})
	return h
}

func hookRuns(s *Session) []event.HookRun {
	var out []event.HookRun
	for _, e := range s.Events() {
		if e.Type == event.TypeHookRun {
			r, _ := event.Decode[event.HookRun](e)
			out = append(out, r)
		}
	}
	return out
}

func resultOf(t *testing.T, s *Session, callID string) event.ToolResult {
	t.Helper()
	for _, e := range s.Events() {
		if e.Type == event.TypeToolResult {
			r, _ := event.Decode[event.ToolResult](e)
			if r.Message.Content[0].ToolCallID == callID {
				return r
			}
		}
	}
	t.Fatalf("no result for %s", callID)
	return event.ToolResult{}
}

const pdfSkill = "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\n# PDF forms\nRun scripts/fill.py.\n"

func TestSkillsInSystemPromptAndTool(t *testing.T) {
	h := extHarness(t, false, map[string]string{
		".claude/skills/pdf-forms/SKILL.md":        pdfSkill,
		".claude/skills/pdf-forms/scripts/fill.py": "print(1)\n",
	}, calls(model.ToolCall{ID: "k", Name: "skill", Arguments: `{"name":"pdf-forms"}`}), text("done"))
	s := h.session()
	if res := run(t, s, "fill the form"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	reqs := h.prov.requests()
	sys := reqs[0].Messages[0].Content
	if !strings.Contains(sys, "# Skills\n") || !strings.HasSuffix(sys, "- pdf-forms: Fill in PDF forms.") {
		t.Errorf("system prompt lacks the catalog:\n%s", sys[max(0, len(sys)-400):])
	}
	if reqs[1].Messages[0].Content != sys {
		t.Error("the system prompt moved between steps")
	}
	if !slices.ContainsFunc(reqs[0].Tools, func(ts model.ToolSpec) bool { return ts.Name == "skill" }) {
		t.Error("no skill tool")
	}
	r := resultOf(t, s, "k")
	got := event.ResultText(r.Message.Content[0])
	if r.Error != nil || !strings.Contains(got, "# PDF forms\nRun scripts/fill.py.") || !strings.Contains(got, "scripts/fill.py") {
		t.Errorf("skill result %s %+v", got, r.Error)
	}
}

func TestNoSkillsNoSkillTool(t *testing.T) {
	h := extHarness(t, false, nil, text("done"))
	run(t, h.session(), "hi")
	req := h.prov.requests()[0]
	if slices.ContainsFunc(req.Tools, func(ts model.ToolSpec) bool { return ts.Name == "skill" }) || strings.Contains(req.Messages[0].Content, "# Skills") {
		t.Error("skill tool or section without skills")
	}
}

// guardHooks refuses any bash command mentioning rm, as Claude Code users
// write such a guard (tool_name "Bash", the command in tool_input).
const guardHooks = `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}`
const guardScript = "#!/bin/sh\nin=$(cat)\ncase \"$in\" in *'\"tool_name\":\"Bash\"'*) ;; *) exit 0;; esac\ncase \"$in\" in *'rm -rf'*) echo 'rm -rf is not allowed here' >&2; exit 2;; esac\nexit 0\n"

func TestPreToolUseHookBlocksInTrustedProject(t *testing.T) {
	files := map[string]string{".claude/settings.json": guardHooks, "guard.sh": guardScript}
	steps := []stepFunc{calls(model.ToolCall{ID: "b", Name: "bash", Arguments: `{"command":"rm -rf x; echo ran"}`}),
		calls(model.ToolCall{ID: "ok", Name: "bash", Arguments: `{"command":"echo fine"}`}), text("done")}
	h := extHarness(t, true, files, steps...)
	s := h.session()
	run(t, s, "clean up")
	r := resultOf(t, s, "b")
	if r.Error == nil || r.Error.Code != event.ToolPermissionDenied || !strings.Contains(event.ResultText(r.Message.Content[0]), "rm -rf is not allowed here") {
		t.Fatalf("not refused: %+v %s", r.Error, event.ResultText(r.Message.Content[0]))
	}
	if ok := resultOf(t, s, "ok"); ok.Error != nil {
		t.Fatalf("allowed call refused: %+v", ok.Error)
	}
	runs := hookRuns(s)
	if len(runs) != 2 || runs[0].Outcome != event.HookBlocked || runs[1].Outcome != event.HookOK {
		t.Fatalf("hook runs %+v", runs)
	}

	// The same repository, not trusted: its hooks do not run.
	h2 := extHarness(t, false, files, steps...)
	s2 := h2.session()
	run(t, s2, "clean up")
	if r := resultOf(t, s2, "b"); r.Error != nil {
		t.Fatalf("an untrusted project's hook ran: %+v", r.Error)
	}
	if len(hookRuns(s2)) != 0 {
		t.Fatal("hook runs recorded in an untrusted project")
	}
}

func TestUserHooksRunWithoutTrust(t *testing.T) {
	h := &harness{t: t, prov: &testProvider{steps: []stepFunc{text("done")}}, root: t.TempDir(), cwd: t.TempDir()}
	hs, diags := ext.ParseHooks(json.RawMessage(`{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "grep -q secret && { echo 'prompt holds a secret' >&2; exit 2; }; echo 'Team rule: answer in haiku'"}]}]}`), "config.json", ext.ScopeUser)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	h.rt = h.runtimeWith(func(c *Config) { c.Extensions.UserHooks = hs })
	s := h.session()
	_, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("my secret is 42")})
	if !errors.Is(err, ErrHookBlocked) || !strings.Contains(err.Error(), "prompt holds a secret") {
		t.Fatalf("prompt not refused: %v", err)
	}
	run(t, s, "write a poem")
	msgs := h.prov.requests()[0].Messages
	last := msgs[len(msgs)-1].Content
	if !strings.HasPrefix(last, "write a poem") || !strings.Contains(last, "<hook-context>\nTeam rule: answer in haiku\n</hook-context>") {
		t.Fatalf("context not added: %q", last)
	}
}

func TestStopHookKeepsTheTurnGoing(t *testing.T) {
	files := map[string]string{".dsh/settings.json": `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "test -f done.flag && exit 0; touch done.flag; echo 'the tests were not run' >&2; exit 2"}]}]}}`}
	h := extHarness(t, true, files, text("finished"), text("ran the tests, finished"))
	s := h.session()
	res := run(t, s, "do it")
	if res.Reason.Kind != event.ReasonCompleted || res.Text != "ran the tests, finished" {
		t.Fatalf("turn %+v %q", res.Reason, res.Text)
	}
	msgs := h.prov.requests()[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != "user" || !strings.Contains(last.Content, "the tests were not run") {
		t.Fatalf("second step did not get the hook's reason: %+v", last)
	}
}

func TestFaultyHooksAreReportedNotFatal(t *testing.T) {
	files := map[string]string{".claude/settings.json": `{"hooks": {"PreToolUse": [
		{"matcher": "*", "hooks": [{"type": "command", "command": "echo broken >&2; exit 1"}]},
		{"matcher": "bash", "hooks": [{"type": "command", "command": "sleep 30", "timeout": 0.5}]},
		{"matcher": "Bash", "hooks": [{"type": "command", "command": "head -c 100000000 /dev/zero"}]}
	]}}`}
	h := extHarness(t, true, files, calls(model.ToolCall{ID: "b", Name: "bash", Arguments: `{"command":"echo ran"}`}), text("done"))
	s := h.session()
	if res := run(t, s, "go"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	if r := resultOf(t, s, "b"); r.Error != nil || !strings.Contains(event.ResultText(r.Message.Content[0]), "ran") {
		t.Fatalf("the call did not run: %+v", r)
	}
	runs := hookRuns(s)
	if len(runs) != 3 {
		t.Fatalf("runs %+v", runs)
	}
	if runs[0].Outcome != event.HookFailed || !strings.Contains(runs[0].Message, "code 1: broken") {
		t.Errorf("exit 1: %+v", runs[0])
	}
	if runs[1].Outcome != event.HookFailed || !strings.Contains(runs[1].Message, "did not finish") || runs[1].DurationMs > 5000 {
		t.Errorf("hang: %+v", runs[1])
	}
	if runs[2].Outcome != event.HookOK || !strings.Contains(runs[2].Message, "dropped") {
		t.Errorf("flood: %+v", runs[2])
	}
}

func TestTypedAgentSession(t *testing.T) {
	files := map[string]string{".claude/agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Bogus\n---\nYou review code and never edit it.\n"}
	h := extHarness(t, false, files, text("looks fine"))
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, AgentType: "reviewer", Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "review")
	req := h.prov.requests()[0]
	var names []string
	for _, ts := range req.Tools {
		names = append(names, ts.Name)
	}
	if !slices.Equal(names, []string{"grep", "read"}) {
		t.Errorf("tools %v", names)
	}
	if !strings.HasSuffix(req.Messages[0].Content, "# Your role: reviewer\nYou review code and never edit it.") {
		t.Errorf("system prompt lacks the role")
	}
	if _, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, AgentType: "nobody"}); !errors.Is(err, ErrBadInput) {
		t.Errorf("unknown type: %v", err)
	}
	if got := h.session().AgentTypes(); len(got) != 1 || got[0].Name != "reviewer" {
		t.Errorf("agent types %+v", got)
	}
}

func TestCommandFiles(t *testing.T) {
	files := map[string]string{
		".claude/commands/fix.md":    "---\ndescription: Fix an issue\nargument-hint: N\n---\nFix issue $0.\n",
		".claude/commands/status.md": "Status:\n!`echo clean tree`\nSummarise.\n",
		".dsh/commands/compact.md":   "shadowed by the built-in\n",
	}
	for _, trusted := range []bool{false, true} {
		h := extHarness(t, trusted, files)
		s := h.session()
		var names []string
		for _, c := range s.Commands() {
			names = append(names, c.Name)
			if c.Name == "fix" && (c.Hint != "N" || c.Description != "Fix an issue (project)") {
				t.Errorf("fix: %+v", c)
			}
		}
		if !slices.Equal(names, []string{"init", "mcp", "permissions", "compact", "rewind", "fix", "status"}) {
			t.Fatalf("commands %v", names)
		}
		res, err := s.RunCommand(context.Background(), "fix", "42")
		if err != nil || res.Prompt != "Fix issue 42.\n" {
			t.Errorf("fix: %+v %v", res, err)
		}
		res, err = s.RunCommand(context.Background(), "status", "")
		if !trusted {
			if !errors.Is(err, ErrUntrusted) {
				t.Errorf("untrusted !-line: %+v %v", res, err)
			}
			continue
		}
		if err != nil || res.Prompt != "Status:\nclean tree\nSummarise.\n" {
			t.Errorf("trusted !-line: %q %v", res.Prompt, err)
		}
	}
}

func TestTypedAgentSessionResumes(t *testing.T) {
	files := map[string]string{".claude/agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\n---\nYou review code and never edit it.\n"}
	h := extHarness(t, false, files, text("looks fine"), text("still fine"), text("fine again"))
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, AgentType: "reviewer", Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "review")
	if rec := s.header.Agent; rec == nil || rec.Name != "reviewer" || !slices.Equal(rec.Tools, []string{"read", "grep"}) ||
		!strings.HasSuffix(rec.Path, "reviewer.md") {
		t.Fatalf("header agent %+v", rec)
	}
	// Resumed as a door resumes any session (no agent type given): the
	// header's type holds.
	s2 := reopen(t, s, h.rt)
	run(t, s2, "and the tests")
	reqs := h.prov.requests()
	if got := toolNames(reqs[1].Tools); got != "grep read" {
		t.Errorf("resumed tools %v", got)
	}
	if !strings.HasSuffix(reqs[1].Messages[0].Content, "# Your role: reviewer\nYou review code and never edit it.") {
		t.Error("the resumed system prompt lost the role")
	}
	// The file is gone: the recorded limits and instructions stay, and a
	// model change (which rebuilds the system prompt) keeps the role.
	if err := os.Remove(filepath.Join(h.cwd, ".claude/agents/reviewer.md")); err != nil {
		t.Fatal(err)
	}
	s3 := reopen(t, s2, h.rt)
	cfg := s3.Config()
	cfg.Model = "m2"
	if err := s3.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	run(t, s3, "once more")
	last := h.prov.requests()[2]
	if got := toolNames(last.Tools); got != "grep read" {
		t.Errorf("tools after the file went %v", got)
	}
	if !strings.HasSuffix(last.Messages[0].Content, "# Your role: reviewer\nYou review code and never edit it.") {
		t.Error("the role was lost with the file")
	}
}

// TestHookTreeIsKilled: what a hook leaves running — after its timeout,
// or after it exits — is killed with it (a zombie waiting for init to
// reap it counts as gone).
func TestHookTreeIsKilled(t *testing.T) {
	files := map[string]string{".claude/settings.json": `{"hooks": {"PreToolUse": [
		{"matcher": "bash", "hooks": [{"type": "command", "command": "sleep 300 >/dev/null 2>&1 & echo $! > hung.pid; sleep 300", "timeout": 0.5}]},
		{"matcher": "bash", "hooks": [{"type": "command", "command": "sleep 300 >/dev/null 2>&1 & echo $! > left.pid; exit 0"}]}
	]}}`}
	h := extHarness(t, true, files, calls(model.ToolCall{ID: "b", Name: "bash", Arguments: `{"command":"echo ran"}`}), text("done"))
	s := h.session()
	run(t, s, "go")
	if r := resultOf(t, s, "b"); r.Error != nil {
		t.Fatalf("the call did not run: %+v", r.Error)
	}
	for _, f := range []string{"hung.pid", "left.pid"} {
		b, err := os.ReadFile(filepath.Join(h.cwd, f))
		if err != nil {
			t.Fatal(err)
		}
		pid := strings.TrimSpace(string(b))
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
			if fields := strings.Fields(string(st)); len(fields) > 2 && fields[2] != "Z" {
				t.Errorf("%s: process %s outlived its hook: %s", f, pid, st)
			}
		}
	}
}
