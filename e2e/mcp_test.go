package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// dsh run with the config file's mcpServers: the built binary starts the
// Go SDK test server (a real process on stdio), offers its tools and runs
// the model's call through the gate (auto runs a readOnlyHint tool).
func TestHeadlessMCPFromTheConfigFile(t *testing.T) {
	t.Parallel()
	bin := mcptestServer(t)
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	cfg := filepath.Join(w.Home, "config.json")
	writeFile(t, cfg, `{"mcpServers": {"t": {"command": "`+bin+`"}, "gone": {"command": "dsh-no-such-server"}}}`)
	srv.Enqueue(modeltest.ToolCallsReply("", modeltest.Call{ID: "c1", Name: "mcp__t__echo", Args: `{"text":"hi"}`}),
		modeltest.TextReply("done"))
	r := w.run(nil, "run", "--config", cfg, "--permission-mode", "auto", "echo hi")
	wantExit(t, r, 0)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests\nstderr:\n%s", len(reqs), r.Stderr)
	}
	if msg, ok := toolMessage(reqs[1], "c1"); !ok || msg != "echo: hi" {
		t.Errorf("tool result seen by the model: %q %v\nstderr:\n%s", msg, ok, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "gone") || !strings.Contains(r.Stderr, "not found on PATH") {
		t.Errorf("a server that cannot start must be reported on stderr:\n%s", r.Stderr)
	}
}
