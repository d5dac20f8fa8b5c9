package ext

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fixture copies testdata (a project and a home laid out as Claude Code
// users keep them) to a temporary folder and makes the project a git
// repository; it returns the roots with the cwd in a sub-folder.
func fixture(t *testing.T) Roots {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dst, "project")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(proj, "src", "app")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	return Roots{Cwd: cwd, UserConfig: filepath.Join(dst, "config", "dsh"), Home: filepath.Join(dst, "home")}
}

func byName(cs []Command) map[string]Command {
	m := map[string]Command{}
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

func diagFor(ds []Diagnostic, file string) string {
	for _, d := range ds {
		if strings.HasSuffix(d.Path, file) {
			return d.Msg
		}
	}
	return ""
}

func TestLoadCommandsFromClaudeLayout(t *testing.T) {
	r := fixture(t)
	cs, diags := LoadCommands(r)
	m := byName(cs)
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	want := []string{"deploy", "explain", "fix-issue", "frontend:component", "review", "standup", "status"}
	if !slices.Equal(names, want) {
		t.Fatalf("commands %v, want %v (diags %v)", names, want, diags)
	}
	fix := m["fix-issue"]
	if fix.Description != "Fix a GitHub issue by number" || fix.ArgumentHint != "[issue-number] [priority]" || fix.Model != "deepseek-pro" {
		t.Errorf("fix-issue frontmatter: %+v", fix)
	}
	if !slices.Equal(fix.AllowedTools, []string{"Bash(gh issue view:*)", "Bash(git status:*)", "Read"}) {
		t.Errorf("allowed-tools %q", fix.AllowedTools)
	}
	if !fix.ZeroBased || m["deploy"].ZeroBased || m["standup"].ZeroBased || !m["explain"].ZeroBased {
		t.Errorf("numbering: .claude files count from $0, .dsh and the dsh config from $1")
	}
	if m["frontend:component"].Description != "Create a React component" {
		t.Errorf("description from the first line: %q", m["frontend:component"].Description)
	}
	if got := m["review"]; got.Scope != ScopeProject || got.Body != "Review the staged changes.\n" {
		t.Errorf("project wins over user: %+v", got)
	}
	if msg := diagFor(diags, "home/.claude/commands/review.md"); !strings.Contains(msg, "already defined") {
		t.Errorf("hidden user command not reported: %v", diags)
	}
	if msg := diagFor(diags, "broken.md"); !strings.Contains(msg, "frontmatter is not valid YAML") {
		t.Errorf("broken frontmatter diagnostic: %q", msg)
	}
}

func TestExpandArguments(t *testing.T) {
	r := fixture(t)
	cs, _ := LoadCommands(r)
	m := byName(cs)
	got, err := m["fix-issue"].Expand(`123 "high prio" $(rm -rf /)`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "Fix issue #123 with priority high prio. Context: 123 \"high prio\" $(rm -rf /)\n\nLeave $5 alone and print $0 literally.\n"
	if got != want {
		t.Errorf("claude numbering:\n got %q\nwant %q", got, want)
	}
	got, _ = m["deploy"].Expand("staging now", nil)
	if got != "Deploy to staging (all: staging now).\n" {
		t.Errorf("dsh numbering: %q", got)
	}
	got, _ = m["review"].Expand("only src/", nil)
	if got != "Review the staged changes.\n\nARGUMENTS: only src/" {
		t.Errorf("no placeholder appends the arguments: %q", got)
	}
	got, _ = m["review"].Expand("", nil)
	if got != "Review the staged changes.\n" {
		t.Errorf("no arguments: %q", got)
	}
	// An argument holding a placeholder is not filled again.
	got, _ = m["deploy"].Expand("$ARGUMENTS $2", nil)
	if got != "Deploy to $ARGUMENTS (all: $ARGUMENTS $2).\n" {
		t.Errorf("arguments re-expanded: %q", got)
	}
}

func TestExpandShellLines(t *testing.T) {
	r := fixture(t)
	cs, _ := LoadCommands(r)
	st := byName(cs)["status"]
	if got := ShellLines(st.Body); !slices.Equal(got, []string{"git status --short"}) {
		t.Fatalf("shell lines %q", got)
	}
	var ran []string
	got, err := st.Expand("x", func(cmd string) (string, error) { ran = append(ran, cmd); return " M a.go\n", nil })
	if err != nil || got != "Current status:\n M a.go\nSummarise it.\n\nARGUMENTS: x" || len(ran) != 1 {
		t.Errorf("got %q %v %q", got, err, ran)
	}
	// Arguments never reach a shell line.
	c := Command{Body: "!`echo $1`\n$1"}
	got, _ = c.Expand("evil", func(cmd string) (string, error) { return "ran: " + cmd, nil })
	if got != "ran: echo $1\nevil" {
		t.Errorf("got %q", got)
	}
}

func TestShellWords(t *testing.T) {
	got := shellWords(`a "b c" 'd "e"' f\ g "h\"i"`)
	want := []string{"a", "b c", `d "e"`, "f g", `h"i`}
	if !slices.Equal(got, want) {
		t.Errorf("%q", got)
	}
}

func TestLoadSkills(t *testing.T) {
	r := fixture(t)
	sks, diags := LoadSkills(r)
	var names []string
	for _, s := range sks {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"pdf-forms", "release-notes", "commit-style"}) {
		t.Fatalf("skills %v (diags %v)", names, diags)
	}
	if sks[0].Description != "Fill in PDF forms. Use when the user asks to fill, read or flatten a PDF form." {
		t.Errorf("folded description %q", sks[0].Description)
	}
	body, files, err := sks[0].Body()
	if err != nil || !strings.HasPrefix(body, "# PDF forms") || !slices.Equal(files, []string{"REFERENCE.md", "scripts/fill.py"}) {
		t.Errorf("body %q files %v err %v", body, files, err)
	}
	cat := Catalog(sks)
	if cat != Catalog([]Skill{sks[2], sks[1], sks[0]}) {
		t.Error("catalog depends on load order")
	}
	if !strings.HasPrefix(cat, "- commit-style: How this user") {
		t.Errorf("catalog %q", cat)
	}
}

func TestCatalogBounded(t *testing.T) {
	var sks []Skill
	for i := range 100 {
		sks = append(sks, Skill{Name: "s" + strings.Repeat("x", 3) + string(rune('a'+i%26)) + string(rune('a'+i/26)), Description: strings.Repeat("d", 1000)})
	}
	cat := Catalog(sks)
	if len(cat) > MaxCatalogBytes+200 || !strings.Contains(cat, "more skills not listed") {
		t.Errorf("catalog of %d bytes", len(cat))
	}
}

func TestLoadAgents(t *testing.T) {
	r := fixture(t)
	known := func(n string) bool {
		return slices.Contains([]string{"read", "grep", "glob", "bash", "write", "edit"}, n)
	}
	as, diags := LoadAgents(r, known)
	if len(as) != 2 || as[0].Name != "code-reviewer" || as[1].Name != "test-runner" {
		t.Fatalf("agents %+v diags %v", as, diags)
	}
	cr := as[0]
	if !slices.Equal(cr.Tools, []string{"read", "grep", "glob", "bash"}) || cr.Model != "" || !strings.HasPrefix(cr.Prompt, "You are a senior") {
		t.Errorf("code-reviewer %+v", cr)
	}
	if !strings.Contains(cr.Description, "Examples: <example>") {
		t.Errorf("unquoted colons in a description: %q", cr.Description)
	}
	if as[1].Tools != nil {
		t.Errorf("no tools key means all tools: %v", as[1].Tools)
	}
	if msg := diagFor(diags, "code-reviewer.md"); !strings.Contains(msg, `"FancyTool"`) {
		t.Errorf("unknown tool diagnostic: %v", diags)
	}
	if msg := diagFor(diags, "nameless.md"); !strings.Contains(msg, "no name") {
		t.Errorf("nameless: %v", diags)
	}
}

func TestBadFiles(t *testing.T) {
	r := fixture(t)
	dir := filepath.Join(filepath.Dir(filepath.Dir(r.Cwd)), ".dsh", "commands")
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", MaxFileBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop-b.md", filepath.Join(dir, "loop-a.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop-a.md", filepath.Join(dir, "loop-b.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(dir, "again")); err != nil { // a folder loop
		t.Fatal(err)
	}
	cs, diags := LoadCommands(r)
	if _, ok := byName(cs)["deploy"]; !ok {
		t.Fatal("the good files must still load")
	}
	if msg := diagFor(diags, "big.md"); !strings.Contains(msg, "too large") {
		t.Errorf("big: %v", diags)
	}
	if msg := diagFor(diags, "loop-a.md"); msg != "symlink loop" {
		t.Errorf("loop: %v", diags)
	}
	if msg := diagFor(diags, "again"); !strings.Contains(msg, "symlink loop") {
		t.Errorf("folder loop: %v", diags)
	}
}

func TestHooksFromClaudeSettings(t *testing.T) {
	r := fixture(t)
	hs, diags := LoadProjectHooks(r)
	if len(hs) != 5 {
		t.Fatalf("%d hooks: %+v diags %v", len(hs), hs, diags)
	}
	var pre []Hook
	for _, h := range hs {
		if h.Event == PreToolUse {
			pre = append(pre, h)
		}
	}
	if pre[0].Timeout != 30*time.Second || pre[1].Timeout != DefaultHookTimeout {
		t.Errorf("timeouts %v %v", pre[0].Timeout, pre[1].Timeout)
	}
	cases := []struct {
		h    Hook
		tool string
		want bool
	}{{pre[0], "bash", true}, {pre[0], "read", false}, {pre[1], "edit", true}, {pre[1], "write", true},
		{pre[1], "multi_edit", false}, {pre[2], "mcp__memory__store", true}, {pre[2], "mcp__other__x", false}}
	for _, c := range cases {
		if got := c.h.Matches(c.tool); got != c.want {
			t.Errorf("matcher %q on %s: %v", c.h.Matcher, c.tool, got)
		}
	}
	all := strings.Join(func() []string {
		var s []string
		for _, d := range diags {
			s = append(s, d.Msg)
		}
		return s
	}(), "\n")
	if !strings.Contains(all, `"Notification" is not run`) || !strings.Contains(all, `type "prompt" is not supported`) {
		t.Errorf("diags %s", all)
	}
}

func TestInterpret(t *testing.T) {
	cases := []struct {
		ev, out, errOut string
		exit            int
		want            HookOutcome
	}{
		{PreToolUse, "", "rm is not allowed\n", 2, HookOutcome{Block: true, Reason: "rm is not allowed"}},
		{UserPromptSubmit, "extra context\n", "", 0, HookOutcome{Context: "extra context"}},
		{PreToolUse, "ignored\n", "", 0, HookOutcome{}},
		{PreToolUse, "", "boom", 1, HookOutcome{Failed: true, Message: "hook exited with code 1: boom"}},
		{PreToolUse, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`, "", 0, HookOutcome{Block: true, Reason: "no"}},
		{UserPromptSubmit, `{"decision":"block","reason":"secret in prompt"}`, "", 0, HookOutcome{Block: true, Reason: "secret in prompt"}},
		{SessionStart, `{"hookSpecificOutput":{"additionalContext":"ctx"}}`, "", 0, HookOutcome{Context: "ctx"}},
		{PostToolUse, `{"decision":"block","reason":"lint failed"}`, "", 0, HookOutcome{Context: "lint failed", Reason: "lint failed"}},
		{Stop, "", "keep going: tests fail", 2, HookOutcome{Block: true, Reason: "keep going: tests fail"}},
		// PreToolUse answers for the permission gate, and input rewrites.
		{PreToolUse, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe"}}`, "", 0,
			HookOutcome{Decision: DecisionAllow, DecisionReason: "safe"}},
		{PreToolUse, `{"hookSpecificOutput":{"permissionDecision":"ask","updatedInput":{"command":"ls -la"}}}`, "", 0,
			HookOutcome{Decision: DecisionAsk, UpdatedInput: json.RawMessage(`{"command":"ls -la"}`)}},
		{PreToolUse, `{"decision":"approve","reason":"old style"}`, "", 0, HookOutcome{Decision: DecisionAllow, DecisionReason: "old style", Reason: "old style"}},
		{PreToolUse, `{"decision":"block","reason":"old block"}`, "", 0, HookOutcome{Block: true, Reason: "old block"}},
		{PreToolUse, `{"hookSpecificOutput":{"permissionDecision":"defer"}}`, "", 0, HookOutcome{}},
		{PreToolUse, `{"hookSpecificOutput":{"permissionDecision":"maybe","updatedInput":"rm -rf /"}}`, "", 0,
			HookOutcome{Message: "permissionDecision \"maybe\" is not allow, deny, ask or defer; ignored\nupdatedInput is not a JSON object; ignored"}},
		// Exit 2 wins over the JSON; other events take no permission answer.
		{PreToolUse, `{"hookSpecificOutput":{"permissionDecision":"allow"}}`, "no", 2, HookOutcome{Block: true, Reason: "no"}},
		{PostToolUse, `{"decision":"approve","hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{}}}`, "", 0, HookOutcome{}},
	}
	for i, c := range cases {
		if got := Interpret(c.ev, c.exit, c.out, c.errOut); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%d: got %+v want %+v", i, got, c.want)
		}
	}
}

func TestTrusted(t *testing.T) {
	d := t.TempDir()
	sub := filepath.Join(d, "a", "b")
	os.MkdirAll(sub, 0o755)
	if !Trusted(sub, []string{d}) || !Trusted(d, []string{d + "/"}) || Trusted(d+"x", []string{d}) || Trusted(d, nil) {
		t.Error("trust by folder")
	}
}

func TestProjectFilesStayInTheProject(t *testing.T) {
	r := fixture(t)
	ssh := filepath.Join(r.Home, ".ssh")
	os.MkdirAll(ssh, 0o700)
	os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte("PRIVATE KEY"), 0o600)
	outside := filepath.Join(t.TempDir(), "elsewhere.md")
	os.WriteFile(outside, []byte("outside\n"), 0o644)
	dir := filepath.Join(filepath.Dir(filepath.Dir(r.Cwd)), ".claude", "commands")
	os.Symlink(filepath.Join(ssh, "id_ed25519"), filepath.Join(dir, "key.md"))
	os.Symlink(outside, filepath.Join(dir, "outside.md"))
	// A user file may link anywhere but a secret place.
	userDir := filepath.Join(r.Home, ".claude", "commands")
	os.Symlink(outside, filepath.Join(userDir, "linked.md"))
	os.Symlink(filepath.Join(ssh, "id_ed25519"), filepath.Join(userDir, "userkey.md"))
	r.Secret = []string{ssh}
	cs, diags := LoadCommands(r)
	m := byName(cs)
	for _, n := range []string{"key", "outside", "userkey"} {
		if _, ok := m[n]; ok {
			t.Errorf("/%s loaded", n)
		}
	}
	if m["linked"].Body != "outside\n" {
		t.Errorf("a user's linked command: %+v", m["linked"])
	}
	if !strings.Contains(diagFor(diags, "key.md"), "secret") || !strings.Contains(diagFor(diags, "outside.md"), "outside") {
		t.Errorf("diags %v", diags)
	}
}

// TestWalksAreBounded: a project's command folder that links out of the
// project is not walked, and a folder of very many entries costs a
// bounded walk.
func TestWalksAreBounded(t *testing.T) {
	r := fixture(t)
	proj := filepath.Dir(filepath.Dir(r.Cwd))
	outside := t.TempDir()
	writeFileT(t, filepath.Join(outside, "deep", "leak.md"), "from elsewhere\n")
	if err := os.Symlink(outside, filepath.Join(proj, ".claude", "commands", "elsewhere")); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { maxEntries = n }(maxEntries)
	maxEntries = 200
	many := filepath.Join(proj, ".dsh", "commands", "many")
	if err := os.MkdirAll(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxEntries + 10 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("f%05d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs, diags := LoadCommands(r)
	if _, ok := byName(cs)["elsewhere:deep:leak"]; ok {
		t.Error("a command from outside the project loaded")
	}
	if msg := diagFor(diags, "commands/elsewhere"); !strings.Contains(msg, "links out of the project") {
		t.Errorf("link out: %q", msg)
	}
	if msg := diagFor(diags, "commands/many"); !strings.Contains(msg, fmt.Sprintf("more than %d entries", maxEntries)) {
		t.Errorf("many entries: %q", msg)
	}
	if _, ok := byName(cs)["fix-issue"]; !ok {
		t.Error("the project's own commands must still load")
	}
}

// TestLinkedSkillFolderListsItsFiles: a skill kept elsewhere and linked
// into the user's skills folder lists its files.
func TestLinkedSkillFolderListsItsFiles(t *testing.T) {
	r := fixture(t)
	kept := filepath.Join(t.TempDir(), "lint-rules")
	writeFileT(t, filepath.Join(kept, "SKILL.md"), "---\nname: lint-rules\ndescription: Our lint rules.\n---\nSee rules.txt.\n")
	writeFileT(t, filepath.Join(kept, "rules.txt"), "no globals\n")
	if err := os.Symlink(kept, filepath.Join(r.Home, ".claude", "skills", "lint-rules")); err != nil {
		t.Fatal(err)
	}
	skills, _ := LoadSkills(r)
	for _, sk := range skills {
		if sk.Name != "lint-rules" {
			continue
		}
		body, files, err := sk.Body()
		if err != nil || !strings.Contains(body, "See rules.txt.") || !slices.Equal(files, []string{"rules.txt"}) {
			t.Fatalf("body %q files %v err %v", body, files, err)
		}
		return
	}
	t.Fatal("the linked skill did not load")
}

func writeFileT(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHookTimeoutBounds: a huge timeout is the longest, not an overflow
// that leaves no time at all.
func TestHookTimeoutBounds(t *testing.T) {
	hs, diags := ParseHooks(json.RawMessage(`{"Stop": [{"hooks": [
		{"type": "command", "command": "a", "timeout": 1e12},
		{"type": "command", "command": "b", "timeout": 86400},
		{"type": "command", "command": "c", "timeout": 0.25}]}]}`), "s.json", ScopeUser)
	if len(diags) > 0 || len(hs) != 3 {
		t.Fatalf("%v %v", hs, diags)
	}
	for i, want := range []time.Duration{MaxHookTimeout, MaxHookTimeout, 250 * time.Millisecond} {
		if hs[i].Timeout != want {
			t.Errorf("hook %d: timeout %v, want %v", i, hs[i].Timeout, want)
		}
	}
}
