package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// runHeadlessMCP runs `dsh run` in auto mode with servers as the config
// file's mcpServers, the model calling one readOnlyHint tool, and returns
// what the model saw as its result (and dsh's stderr).
func runHeadlessMCP(t *testing.T, servers map[string]any, call modeltest.Call) (seen, stderr string) {
	t.Helper()
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	cfg := filepath.Join(w.Home, "config.json")
	writeFile(t, cfg, mustJSON(t, map[string]any{"mcpServers": servers}))
	srv.Enqueue(modeltest.ToolCallsReply("", call), modeltest.TextReply("done"))
	r := w.run(nil, "run", "--config", cfg, "--permission-mode", "auto", "use the tool")
	wantExit(t, r, 0)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests\nstderr:\n%s", len(reqs), r.Stderr)
	}
	seen, _ = toolMessage(reqs[1], call.ID)
	return seen, r.Stderr
}

// dsh run with the config file's mcpServers: the built binary starts the
// Go SDK test server (a real process on stdio), offers its tools and runs
// the model's call through the gate (auto runs a readOnlyHint tool); a
// server that cannot start is reported on stderr and the run goes on.
func TestHeadlessMCPFromTheConfigFile(t *testing.T) {
	t.Parallel()
	seen, stderr := runHeadlessMCP(t, map[string]any{
		"t":    map[string]any{"command": mcptestServer(t)},
		"gone": map[string]any{"command": "dsh-no-such-server"},
	}, modeltest.Call{ID: "c1", Name: "mcp__t__echo", Args: `{"text":"hi"}`})
	if seen != "echo: hi" {
		t.Errorf("tool result seen by the model: %q\nstderr:\n%s", seen, stderr)
	}
	if !strings.Contains(stderr, "gone") || !strings.Contains(stderr, "not found on PATH") {
		t.Errorf("a server that cannot start must be reported on stderr:\n%s", stderr)
	}
}
