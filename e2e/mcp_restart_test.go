package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// A stdio MCP server killed between two calls, through the built binary
// (where it runs under dsh's reaper): the chat tells its death and its
// restart, and the second call is answered by the restarted server.
func TestMCPOverACPKilledServerIsRestarted(t *testing.T) {
	t.Parallel()
	bin := mcptestServer(t)
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	p := startACP(t, w, "--permission-mode", "auto")
	p.initialize()
	pidFile := filepath.Join(t.TempDir(), "pid")
	ns := p.call("session/new", map[string]any{"cwd": w.Cwd, "mcpServers": []any{map[string]any{"name": "t", "command": bin,
		"args": []any{}, "env": []any{map[string]any{"name": "MCPTEST_PID_FILE", "value": pidFile}}}}})
	p.wantResult(ns)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(ns.Result, &r)

	srv.Enqueue(modeltest.ToolCallsReply("", modeltest.Call{ID: "c1", Name: "mcp__t__echo", Args: `{"text":"one"}`}), modeltest.TextReply("done"),
		modeltest.ToolCallsReply("", modeltest.Call{ID: "c2", Name: "mcp__t__echo", Args: `{"text":"two"}`}), modeltest.TextReply("done"))
	if f := p.response(p.request("session/prompt", textPrompt(r.SessionID, "first"))); f.stopReason() != "end_turn" {
		t.Fatalf("first prompt: %s", f.Raw)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	chat := func(what, text string) {
		p.waitFor(what, func(f acpFrame) bool {
			u := f.update()
			b, _ := json.Marshal(u["content"])
			return u != nil && u["sessionUpdate"] == "agent_message_chunk" && strings.Contains(string(b), text)
		})
	}
	chat("the death told in the chat", `MCP server \"t\" stopped working: the process ended: signal: killed`)
	chat("the restart told in the chat", `MCP server \"t\" was restarted`)
	if f := p.response(p.request("session/prompt", textPrompt(r.SessionID, "second"))); f.stopReason() != "end_turn" {
		t.Fatalf("second prompt: %s", f.Raw)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if msg, ok := toolMessage(reqs[3], "c2"); !ok || msg != "echo: two" {
		t.Errorf("the model saw %q for the call after the restart", msg)
	}
}
