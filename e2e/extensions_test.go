package e2e

// End-to-end tests of the extension files users keep for Claude Code
// (issue 28): the binary reads a project and a home laid out as Claude
// Code users keep them (core/ext/testdata) and uses their commands,
// skills and hooks through `dsh run` and ACP.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// claudeWorld is a world whose workspace is the fixture project (a git
// repository) and whose home holds the fixture's ~/.claude and
// ~/.config/dsh.
func claudeWorld(t *testing.T, modelEnv ...string) *world {
	t.Helper()
	w := newWorld(t, modelEnv...)
	fixture := filepath.Join("..", "core", "ext", "testdata")
	if err := os.CopyFS(w.Cwd, os.DirFS(filepath.Join(fixture, "project"))); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w.Cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(w.Home, os.DirFS(filepath.Join(fixture, "home"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(w.Home, ".config"), os.DirFS(filepath.Join(fixture, "config"))); err != nil {
		t.Fatal(err)
	}
	return w
}

// lastUser is the text of the last user message of a model request.
func lastUser(r *modeltest.Request) string {
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		if m := r.Body.Messages[i]; m.Role == "user" {
			return m.Text()
		}
	}
	return ""
}

// toolResult is the text of the tool message answering callID.
func toolResult(r *modeltest.Request, callID string) string {
	for _, m := range r.Body.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.Text()
		}
	}
	return ""
}

func TestRunCustomCommandsAndSkills(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := claudeWorld(t, srv.Env()...)

	srv.Enqueue(modeltest.TextReply("fixed"))
	r := w.run(nil, "run", "-q", `/fix-issue 123 "high prio"`)
	wantExit(t, r, 0)
	req := srv.Last()
	if got := lastUser(req); !strings.HasPrefix(got, "Fix issue #123 with priority high prio. Context: 123 \"high prio\"\n") {
		t.Errorf("the command was not expanded: %q", got)
	}
	sys := req.Body.Messages[0].Text()
	for _, want := range []string{"# Skills\n", "- commit-style: How this user writes commit messages.",
		"- pdf-forms: Fill in PDF forms. Use when the user asks to fill, read or flatten a PDF form.",
		"- release-notes: Write release notes"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if !slices.ContainsFunc(req.Body.Tools, func(tl modeltest.Tool) bool { return tl.Function.Name == "skill" }) {
		t.Error("no skill tool offered")
	}

	// A sub-folder command, a user command (~/.claude) and a dsh one.
	for task, want := range map[string]string{
		"/frontend:component Button": "Create the component Button following our conventions.",
		"/explain":                   "Explain this code simply.",
		"/standup alice":             "Summarise yesterday's commits for alice.",
	} {
		srv.Enqueue(modeltest.TextReply("ok"))
		wantExit(t, w.run(nil, "run", "-q", task), 0)
		if got := lastUser(srv.Last()); !strings.Contains(got, want) {
			t.Errorf("%s: %q", task, got)
		}
	}

	// An unknown command is text for the model.
	srv.Enqueue(modeltest.TextReply("ok"))
	wantExit(t, w.run(nil, "run", "-q", "/no-such-thing please"), 0)
	if got := lastUser(srv.Last()); !strings.HasPrefix(got, "/no-such-thing please") {
		t.Errorf("unknown command: %q", got)
	}

	// A command with a shell line refuses to run in an untrusted project.
	n := srv.Count()
	r = w.run(nil, "run", "-q", "/status")
	if r.Code != 1 || !strings.Contains(r.Stderr, "dsh trust") || srv.Count() != n {
		t.Errorf("untrusted !-line: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

func TestRunProjectHooksNeedTrust(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := claudeWorld(t, srv.Env()...)
	rm := modeltest.Call{ID: "c1", Name: "bash", Args: `{"command":"rm -rf build && echo removed"}`}

	// Untrusted: the repository's hooks do not run.
	srv.Enqueue(modeltest.ToolCallsReply("", rm), modeltest.TextReply("done"))
	r := w.run(nil, "run", "-q", "--permission-mode", "full", "clean the build")
	wantExit(t, r, 0)
	if got := toolResult(srv.Last(), "c1"); !strings.Contains(got, "removed") {
		t.Fatalf("untrusted project: the call did not run: %q", got)
	}
	if !strings.Contains(r.Stderr, "not trusted") {
		t.Errorf("stderr does not say why the hooks did not run: %q", r.Stderr)
	}

	tr := w.run(nil, "trust")
	wantExit(t, tr, 0)
	data, err := os.ReadFile(filepath.Join(w.Home, ".config", "dsh", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		TrustedProjects []string `json:"trustedProjects"`
	}
	if json.Unmarshal(data, &cfg) != nil || !slices.Equal(cfg.TrustedProjects, []string{w.Cwd}) {
		t.Fatalf("config after dsh trust: %s", data)
	}

	// Trusted: the guard refuses the call, the model is told why, and the
	// UserPromptSubmit hook's output joins the prompt.
	srv.Enqueue(modeltest.ToolCallsReply("", rm), modeltest.TextReply("done"))
	r = w.run(nil, "run", "-q", "--permission-mode", "full", "clean the build")
	wantExit(t, r, 0)
	last := srv.Last()
	if got := toolResult(last, "c1"); !strings.Contains(got, "Blocked by policy: rm -rf is not allowed in this repository") {
		t.Errorf("trusted project: not refused by the hook: %q", got)
	}
	if got := last.Body.Messages[len(last.Body.Messages)-3].Text(); !strings.Contains(got, "<hook-context>\ncontext\n</hook-context>") {
		t.Errorf("UserPromptSubmit context missing: %q", got)
	}
}

// commandLists are the available_commands_update lists seen so far: for
// each, the command names and their input hints.
func commandLists(p *acpPipe) []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]string
	for _, f := range p.frames {
		u := f.update()
		if u == nil || u["sessionUpdate"] != "available_commands_update" {
			continue
		}
		m := map[string]string{}
		cmds, _ := u["availableCommands"].([]any)
		for _, c := range cmds {
			c, _ := c.(map[string]any)
			name, _ := c["name"].(string)
			hint := ""
			if in, ok := c["input"].(map[string]any); ok {
				hint, _ = in["hint"].(string)
			}
			m[name] = hint
		}
		out = append(out, m)
	}
	return out
}

func TestACPCustomCommands(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := claudeWorld(t, srv.Env()...)
	p := startACP(t, w)
	p.initialize()
	sid := p.newSession()
	p.waitFor("the command list", func(f acpFrame) bool {
		u := f.update()
		return u != nil && u["sessionUpdate"] == "available_commands_update"
	})
	first := commandLists(p)[0]
	for name, hint := range map[string]string{"init": "what to focus on (optional)", "fix-issue": "[issue-number] [priority]",
		"deploy": "ENV", "frontend:component": "", "review": "", "explain": "", "standup": "", "status": ""} {
		if got, ok := first[name]; !ok || got != hint {
			t.Errorf("/%s: offered %v with hint %q, want %q (list %v)", name, ok, got, hint, first)
		}
	}
	if _, ok := first["broken"]; ok {
		t.Error("a file with malformed frontmatter was offered")
	}

	srv.Enqueue(modeltest.TextReply("on it"))
	if stop := p.promptText(sid, "/deploy staging"); stop != "end_turn" {
		t.Fatalf("stop %q", stop)
	}
	if got := lastUser(srv.Last()); !strings.Contains(got, "Deploy to staging (all: staging).") {
		t.Errorf("expanded prompt %q", got)
	}

	// A command file added while the session is open is offered at the
	// next turn.
	writeFile(t, filepath.Join(w.Cwd, ".claude", "commands", "ship.md"), "---\ndescription: Ship it\nargument-hint: VERSION\n---\nShip $0.\n")
	srv.Enqueue(modeltest.TextReply("shipped"))
	if stop := p.promptText(sid, "/ship v1.2"); stop != "end_turn" {
		t.Fatalf("stop %q", stop)
	}
	lists := commandLists(p)
	if got := lists[len(lists)-1]; got["ship"] != "VERSION" {
		t.Errorf("the new command was not announced: %v", got)
	}
	if got := lastUser(srv.Last()); !strings.Contains(got, "Ship v1.2.") {
		t.Errorf("expanded prompt %q", got)
	}

	// A !-line in an untrusted project is refused, and the user told why.
	n := srv.Count()
	f := p.call("session/prompt", textPrompt(sid, "/status"))
	p.wantResult(f)
	if f.stopReason() != "refusal" || srv.Count() != n {
		t.Errorf("untrusted !-line: stop %q, %d model calls", f.stopReason(), srv.Count()-n)
	}
}

func TestSDKCustomCommand(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.TextReply("deploying"))
	w := claudeWorld(t, srv.Env()...)
	c := startSDK(t, w, sdkConfig(w))
	res, err := c.Session("sdk-cmd").Run(sdkCtx(t), "/deploy prod")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sdkCheckRun(t, res, "deploying")
	if got := lastUser(srv.Last()); !strings.Contains(got, "Deploy to prod (all: prod).") {
		t.Errorf("model saw %q", got)
	}
}

// TestACPMCPPromptsAndResources: server-everything's prompts are slash
// commands (with their argument hints) and its resources are listed and
// read by the model through the two resource tools.
func TestACPMCPPromptsAndResources(t *testing.T) {
	js := needEverything(t)
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	p := startACP(t, w, "--permission-mode", "auto")
	p.initialize()
	ns := p.call("session/new", map[string]any{"cwd": w.Cwd, "mcpServers": []any{
		map[string]any{"name": "everything", "command": "node", "args": []any{js}, "env": []any{}}}})
	p.wantResult(ns)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(ns.Result, &r)
	sid := r.SessionID
	p.waitFor("the command list", func(f acpFrame) bool {
		u := f.update()
		return u != nil && u["sessionUpdate"] == "available_commands_update"
	})
	cmds := commandLists(p)[0]
	if hint, ok := cmds["mcp__everything__args-prompt"]; !ok || hint != "<city> [state]" {
		t.Fatalf("args-prompt: %v %q (commands %v)", ok, hint, cmds)
	}
	if _, ok := cmds["mcp__everything__simple-prompt"]; !ok {
		t.Errorf("simple-prompt not offered: %v", cmds)
	}

	srv.Enqueue(modeltest.TextReply("sunny"))
	if stop := p.promptText(sid, "/mcp__everything__args-prompt Paris Ile de France"); stop != "end_turn" {
		t.Fatalf("stop %q", stop)
	}
	if got := lastUser(srv.Last()); !strings.Contains(got, "What's weather in Paris, Ile de France?") {
		t.Errorf("prompt text %q", got)
	}

	srv.Enqueue(modeltest.ToolCallsReply("", modeltest.Call{ID: "l1", Name: "list_mcp_resources", Args: `{}`}),
		modeltest.ToolCallsReply("", modeltest.Call{ID: "r1", Name: "read_mcp_resource", Args: `{"uri":"demo://resource/static/document/architecture.md"}`}),
		modeltest.TextReply("read it"))
	if stop := p.promptText(sid, "what resources are there?"); stop != "end_turn" {
		t.Fatalf("stop %q", stop)
	}
	last := srv.Last()
	if !slices.ContainsFunc(last.Body.Tools, func(tl modeltest.Tool) bool { return tl.Function.Name == "read_mcp_resource" }) {
		t.Error("read_mcp_resource not offered")
	}
	if got := toolResult(last, "l1"); !strings.Contains(got, "server=everything uri=demo://resource/static/document/") {
		t.Errorf("list result %q", acpShort(got, 600))
	}
	if got := toolResult(last, "r1"); !strings.Contains(got, "[resource server=everything uri=demo://resource/static/document/architecture.md]") || len(got) < 200 {
		t.Errorf("read result %q", acpShort(got, 600))
	}
}

// TestACPResourceLinkToMCPResource: a resource link in a prompt that names
// an MCP server's resource reaches the model as the resource's text.
func TestACPResourceLinkToMCPResource(t *testing.T) {
	js := needEverything(t)
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	p := startACP(t, w)
	p.initialize()
	ns := p.call("session/new", map[string]any{"cwd": w.Cwd, "mcpServers": []any{
		map[string]any{"name": "everything", "command": "node", "args": []any{js}, "env": []any{}}}})
	p.wantResult(ns)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(ns.Result, &r)
	srv.Enqueue(modeltest.TextReply("summarised"))
	f := p.call("session/prompt", map[string]any{"sessionId": r.SessionID, "prompt": []any{
		map[string]any{"type": "text", "text": "summarise this: "},
		map[string]any{"type": "resource_link", "name": "architecture.md", "uri": "demo://resource/static/document/architecture.md"},
	}})
	p.wantResult(f)
	got := lastUser(srv.Last())
	if !strings.Contains(got, `[resource uri="demo://resource/static/document/architecture.md" server="everything"]`) || len(got) < 300 {
		t.Errorf("the model saw %q", acpShort(got, 600))
	}
}

// TestRunCommandModelAndAllowedTools: /fix-issue (the fixture's) names
// a model and allowed-tools. Its turn runs on that model; once the
// project is trusted, a listed command runs in ask mode without anyone
// to ask, and an unlisted one is still refused; the next turn is back
// on the session's model with nothing granted.
func TestRunCommandModelAndAllowedTools(t *testing.T) {
	t.Parallel()
	// The system prompt names the model, so a turn on another model is
	// another conversation to the server's prefix checks.
	srv := modeltest.New(t, modeltest.WithoutChecks(modeltest.CheckPrefix, modeltest.CheckStable))
	w := claudeWorld(t, srv.Env()...)
	wantExit(t, w.run(nil, "trust"), 0)
	listed := modeltest.Call{ID: "c1", Name: "bash", Args: `{"command":"git status --short"}`}
	unlisted := modeltest.Call{ID: "c2", Name: "bash", Args: `{"command":"echo unlisted"}`}
	srv.Enqueue(modeltest.ToolCallsReply("", listed, unlisted), modeltest.TextReply("done"))
	wantExit(t, w.run(nil, "run", "-q", "--permission-mode", "ask", "/fix-issue 7 high"), 0)
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Body.Model != "deepseek-pro" || reqs[1].Body.Model != "deepseek-pro" {
		t.Fatalf("the command's turn: %d requests, model %q", len(reqs), reqs[0].Body.Model)
	}
	if got := toolResult(reqs[1], "c1"); strings.Contains(got, "permission denied") {
		t.Errorf("the listed command was refused: %q", got)
	}
	if got := toolResult(reqs[1], "c2"); !strings.Contains(got, "permission denied") {
		t.Errorf("the unlisted command was not refused: %q", got)
	}

	again := modeltest.Call{ID: "c3", Name: "bash", Args: listed.Args}
	srv.Enqueue(modeltest.ToolCallsReply("", again), modeltest.TextReply("done"))
	wantExit(t, w.run(nil, "run", "-q", "-c", "--permission-mode", "ask", "check the status"), 0)
	last := srv.Last()
	if last.Body.Model != "deepseek-flash" {
		t.Errorf("the next turn ran on %q", last.Body.Model)
	}
	if got := toolResult(last, "c3"); !strings.Contains(got, "permission denied") {
		t.Errorf("the grant outlived its turn: %q", got)
	}

	// A command naming a model DeepSeek does not serve is refused before
	// anything is sent.
	writeFile(t, filepath.Join(w.Cwd, ".claude", "commands", "gpt.md"), "---\nmodel: gpt-4o\n---\nHello.\n")
	n := srv.Count()
	r := w.run(nil, "run", "-q", "/gpt")
	if r.Code == 0 || !strings.Contains(r.Stderr, `"gpt-4o"`) || srv.Count() != n {
		t.Errorf("unknown model: exit %d, stderr %q, %d requests", r.Code, r.Stderr, srv.Count()-n)
	}
}

// TestACPCommandAllowedToolsAsk: over ACP in ask mode, the trusted
// fixture's /fix-issue lets `git status` run without a permission
// request, while the unlisted command of the same turn is asked about.
func TestACPCommandAllowedToolsAsk(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := claudeWorld(t, srv.Env()...)
	wantExit(t, w.run(nil, "trust"), 0)
	p := startACP(t, w, "--permission-mode", "ask")
	p.initialize()
	sid := p.newSession()
	listed := modeltest.Call{ID: "c1", Name: "bash", Args: `{"command":"git status --short"}`}
	unlisted := modeltest.Call{ID: "c2", Name: "bash", Args: `{"command":"echo unlisted"}`}
	srv.Enqueue(modeltest.ToolCallsReply("", listed, unlisted), modeltest.TextReply("done"))
	id := p.request("session/prompt", textPrompt(sid, "/fix-issue 7 high"))
	ask := p.waitFor("the unlisted call's permission request", func(f acpFrame) bool { return f.Method == "session/request_permission" })
	var req struct {
		ToolCall struct {
			RawInput map[string]any `json:"rawInput"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(ask.Params, &req); err != nil {
		t.Fatal(err)
	}
	if cmd := req.ToolCall.RawInput["command"]; cmd != "echo unlisted" {
		t.Errorf("asked about %v, want only the unlisted command", cmd)
	}
	allow := ""
	for _, o := range req.Options {
		if o.Kind == "allow_once" {
			allow = o.OptionID
		}
	}
	p.send(mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": ask.ID, "result": map[string]any{
		"outcome": map[string]any{"outcome": "selected", "optionId": allow}}}))
	if f := p.response(id); f.stopReason() != "end_turn" {
		t.Fatalf("prompt answered %s", f.Raw)
	}
	n := 0
	for _, f := range p.all() {
		if f.Method == "session/request_permission" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d permission requests, want 1", n)
	}
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[1].Body.Model != "deepseek-pro" {
		t.Errorf("the command's turn: %d requests", len(reqs))
	} else if got := toolResult(reqs[1], "c2"); !strings.Contains(got, "unlisted") {
		t.Errorf("the unlisted call, allowed once, did not run: %q", got)
	}
}

// TestSDKCommandModel: a command file's model holds for its turn through
// the SDK door too.
func TestSDKCommandModel(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.TextReply("fixing"))
	w := claudeWorld(t, srv.Env()...)
	c := startSDK(t, w, sdkConfig(w))
	res, err := c.Session("sdk-model").Run(sdkCtx(t), "/fix-issue 9 low")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sdkCheckRun(t, res, "fixing")
	if m := srv.Last().Body.Model; m != "deepseek-pro" {
		t.Errorf("the command's turn ran on %q", m)
	}
}
