package acp

import (
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
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
