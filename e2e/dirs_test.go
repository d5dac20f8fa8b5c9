package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// TestACPRootsKeptForRun: the additionalDirectories an editor gave a
// session stay with it: `dsh sessions show` lists them, and `dsh run
// --session-id` in another process runs a command that writes there
// without asking (mode auto) and inside the sandbox's writable folders.
func TestACPRootsKeptForRun(t *testing.T) {
	srv, w := newACPWorld(t)
	extra := t.TempDir()
	if r, err := filepath.EvalSymlinks(extra); err == nil {
		extra = r
	}
	p := startACP(t, w)
	p.initialize()
	f := p.call("session/new", map[string]any{"cwd": w.Cwd, "mcpServers": []any{}, "additionalDirectories": []string{extra}})
	p.wantResult(f)
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(f.Result, &ns); err != nil || ns.SessionID == "" {
		t.Fatalf("session/new: %s", f.Raw)
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("dsh acp exit %d", code)
	}

	if r := w.run(nil, "sessions", "show", ns.SessionID); r.Code != 0 || !strings.Contains(r.Stdout, extra) {
		t.Fatalf("sessions show (exit %d) does not list %s:\n%s%s", r.Code, extra, r.Stdout, r.Stderr)
	}
	target := filepath.Join(extra, "out.txt")
	srv.Enqueue(modeltest.ToolCallsReply("write", bashCall(t, "call_w", "echo kept > "+target)), modeltest.TextReply("written"))
	r := w.run(nil, "run", "--permission-mode", "auto", "--session-id", ns.SessionID, "write there")
	if b, err := os.ReadFile(target); r.Code != 0 || err != nil || string(b) != "kept\n" {
		reqs := srv.Requests()
		t.Fatalf("run (exit %d): file %q %v\nstderr:\n%s\nlast request: %s", r.Code, b, err, r.Stderr, reqs[len(reqs)-1].Raw)
	}
}
