package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/sandbox"
)

const testNotice = "sandbox: this machine cannot fully contain commands (no namespaces here): dsh's process stays visible to commands; commands run anyway"

// notices counts the sandbox notices among a session's updates.
func notices(us []sdk.SessionUpdate) int {
	n := 0
	for _, u := range us {
		if u.AgentMessageChunk != nil && strings.Contains(chunkText(u), testNotice) {
			n++
		}
	}
	return n
}

// TestSandboxNoticeOncePerSession: where the machine cannot contain
// commands, each session this connection opens (new, load, resume) says
// so once, as an agent message after its slash commands — not again with
// each turn.
func TestSandboxNoticeOncePerSession(t *testing.T) {
	h := start(t, hopts{sandboxNotice: func() string { return testNotice }})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	id := ns.SessionId
	h.cl.waitFor(t, "the sandbox notice", func() bool { return notices(h.cl.updates[id]) > 0 })
	h.promptText(id, "hi")
	h.promptText(id, "again")
	us := h.cl.got(id)
	if n := notices(us); n != 1 {
		t.Fatalf("%d notices in a new session with two turns, want 1: %v", n, kinds(us))
	}
	if !strings.HasPrefix(chunkText(us[1]), "⚠ ") || us[0].AvailableCommandsUpdate == nil {
		t.Errorf("want the commands, then the notice: %v %q", kinds(us), chunkText(us[1]))
	}
	if _, err := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	h.cl.reset(id)
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	h.cl.waitFor(t, "the notice after the replay", func() bool { return notices(h.cl.updates[id]) > 0 })
	if n := notices(h.cl.got(id)); n != 1 {
		t.Errorf("%d notices after session/load, want 1", n)
	}
	if _, err := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	h.cl.reset(id)
	if _, err := h.conn.ResumeSession(h.ctx(), sdk.ResumeSessionRequest{SessionId: id, Cwd: h.cwd}); err != nil {
		t.Fatal(err)
	}
	h.cl.waitFor(t, "the notice after session/resume", func() bool { return notices(h.cl.updates[id]) > 0 })
	if n := notices(h.cl.got(id)); n != 1 {
		t.Errorf("%d notices after session/resume, want 1", n)
	}
}

// TestNoSandboxNoticeWhenContained: a machine that contains everything
// (an empty notice) adds no message.
func TestNoSandboxNoticeWhenContained(t *testing.T) {
	h := start(t, hopts{sandboxNotice: func() string { return "" }})
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession().SessionId
	h.promptText(id, "hi")
	for _, u := range h.cl.got(id) {
		if u.AgentMessageChunk != nil && chunkText(u) != "ok" {
			t.Fatalf("a message besides the answer: %q", chunkText(u))
		}
	}
}

// TestBashInEditorTerminalIsContained: where the sandbox applies, the
// command an editor's terminal runs is the reaper over bash, so it is
// contained as a local one is: a write outside the workspace fails and
// dsh's processes are out of sight. Unconfined, the same write works.
func TestBashInEditorTerminalIsContained(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New(sandbox.Config{Setting: sandbox.Required, Network: true, Reaper: self})
	if sb.Level() < sandbox.Full {
		t.Skipf("this machine cannot contain fully: %s", sb.Notice())
	}
	contain := func(sc sandbox.Scope, argv []string) ([]string, []string, error) {
		return sb.Standalone(self, sc, argv)
	}
	for _, tc := range []struct {
		name    string
		contain func(sandbox.Scope, []string) ([]string, []string, error)
	}{{"unconfined", nil}, {"contained", contain}} {
		t.Run(tc.name, func(t *testing.T) {
			// Outside /tmp: a contained command's /tmp is a private tmpfs.
			base, err := os.MkdirTemp("/var/tmp", "dsh-acp-terminal-")
			if err != nil {
				t.Skip(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			ws := filepath.Join(base, "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := `echo in > inside; echo out > ../escaped; ls /proc | grep -c '^[0-9]' > procs; true`
			h := start(t, hopts{cwd: ws, containTerminal: tc.contain, script: script(
				step("toolCalls", calls(call("bash", map[string]any{"command": cmd, "description": "try"}))),
				step("text", "done"),
			)})
			h.initialize(sdk.ClientCapabilities{Terminal: true})
			id := h.newSession().SessionId
			h.promptText(id, "run")
			if !terminalUsed(h.cl.got(id)) {
				t.Fatal("the command did not run in the editor's terminal")
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "inside")); string(b) != "in\n" {
				t.Fatalf("the command did not run: %q", b)
			}
			_, err = os.Stat(filepath.Join(base, "escaped"))
			if escaped := err == nil; escaped != (tc.contain == nil) {
				t.Errorf("wrote outside the workspace: %v", escaped)
			}
			b, _ := os.ReadFile(filepath.Join(ws, "procs"))
			if few := len(strings.TrimSpace(string(b))) == 1; few != (tc.contain != nil) {
				t.Errorf("processes seen: %q", b)
			}
		})
	}
}

// terminalUsed: a tool call update embeds a terminal.
func terminalUsed(us []sdk.SessionUpdate) bool {
	for _, u := range us {
		if u.ToolCallUpdate == nil {
			continue
		}
		for _, c := range u.ToolCallUpdate.Content {
			if c.Terminal != nil {
				return true
			}
		}
	}
	return false
}
