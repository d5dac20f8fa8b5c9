package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// TestHeadlessWaitsForASlowMCPServer: a server that takes longer than
// opening a session waits (a first npx -y) is waited for before the first
// model call, with a line on stderr, so its tools are there; its command
// comes from ${VAR} in the config; --allowed-tools lets one tool that
// writes run in auto mode with no one to ask, and an entry that matches
// no tool is a warning.
func TestHeadlessWaitsForASlowMCPServer(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "H26B_MCP_BIN="+mcptestServer(t))...)
	cfg := filepath.Join(w.Home, "config.json")
	writeFile(t, cfg, mustJSON(t, map[string]any{"mcpServers": map[string]any{
		"t": map[string]any{"command": "bash", "args": []string{"-c", "sleep 2.5; exec \"$0\"", "${H26B_MCP_BIN}"}},
	}}))
	call := modeltest.Call{ID: "c1", Name: "mcp__t__resource", Args: `{}`}
	srv.Enqueue(modeltest.ToolCallsReply("", call), modeltest.TextReply("done"))
	r := w.run(nil, "run", "--config", cfg, "--permission-mode", "auto",
		"--allowed-tools", "mcp__t__resource, nosuch_tool", "use the tool")
	wantExit(t, r, 0)
	if !strings.Contains(r.Stderr, "waiting for MCP server t to start") {
		t.Errorf("no line on stderr while waiting:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, `allowed-tools entry "nosuch_tool" matches no tool`) {
		t.Errorf("an allow-list entry that matches no tool must be a warning:\n%s", r.Stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests\nstderr:\n%s", len(reqs), r.Stderr)
	}
	if !strings.Contains(string(reqs[0].Raw), "mcp__t__echo") {
		t.Errorf("the first model call was made without the slow server's tools")
	}
	seen, _ := toolMessage(reqs[1], call.ID)
	if !strings.Contains(seen, "test://notes") || strings.Contains(seen, "permission denied") {
		t.Errorf("the allowed MCP tool did not run: %q\nstderr:\n%s", seen, r.Stderr)
	}
}

// An unset ${VAR} without a default fails the server, naming the
// variable, and the run goes on without it.
func TestMCPServerWithAnUnsetVariable(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	cfg := filepath.Join(w.Home, "config.json")
	writeFile(t, cfg, mustJSON(t, map[string]any{"mcpServers": map[string]any{
		"gh": map[string]any{"command": mcptestServer(t), "env": map[string]string{"TOKEN": "${H26B_GH_TOKEN_NEVER_SET}"}},
	}}))
	srv.Enqueue(modeltest.TextReply("done"))
	r := w.run(nil, "run", "--config", cfg, "hello")
	wantExit(t, r, 0)
	if !strings.Contains(r.Stderr, "H26B_GH_TOKEN_NEVER_SET is not set") || !strings.Contains(r.Stderr, "gh") {
		t.Errorf("the unset variable must be named on stderr:\n%s", r.Stderr)
	}
}
