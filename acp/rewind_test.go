package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestRewindCommandAndLoad: /rewind lists the turns, /rewind 2 restores
// the files and takes turn 2 out of the conversation, and a session/load
// on a new connection replays the rewound conversation; /rewind undo puts
// it back.
func TestRewindCommandAndLoad(t *testing.T) {
	sc := script(
		step("toolCalls", calls(call("write", map[string]any{"file_path": "a.txt", "content": "one\n"}))),
		step("text", "wrote a"),
		step("toolCalls", calls(call("bash", map[string]any{"command": "echo two > b.txt", "description": "make b"}))),
		step("text", "made b"),
	)
	root, cwd := t.TempDir(), t.TempDir()
	h := start(t, hopts{root: root, cwd: cwd, script: sc})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	h.promptText(ns.SessionId, "write a")
	h.promptText(ns.SessionId, "make b")
	if _, err := os.Stat(filepath.Join(cwd, "b.txt")); err != nil {
		t.Fatal(err)
	}
	reply := func(text string) string {
		h.cl.reset(ns.SessionId)
		t.Logf("sending %s", text)
		if resp := h.promptText(ns.SessionId, text); resp.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("%s: stop reason %q", text, resp.StopReason)
		}
		var b strings.Builder
		for _, u := range h.cl.got(ns.SessionId) {
			b.WriteString(chunkText(u))
		}
		return b.String()
	}
	if got := reply("/rewind"); !strings.Contains(got, "1  write a") || !strings.Contains(got, "2  make b") {
		t.Fatalf("/rewind listed %q", got)
	}
	if got := reply("/rewind 9"); !strings.Contains(got, "no turn 9") {
		t.Fatalf("/rewind 9: %q", got)
	}
	if got := reply("/rewind 2"); !strings.Contains(got, "Rewound to before turn 2") || !strings.Contains(got, "b.txt") {
		t.Fatalf("/rewind 2: %q", got)
	}
	if _, err := os.Stat(filepath.Join(cwd, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt is still there: %v", err)
	}

	// A new connection loads the rewound conversation: turn 2 is not shown.
	h2 := start(t, hopts{root: root, cwd: cwd, script: sc})
	h2.initialize(sdk.ClientCapabilities{})
	if err := h.rt.Get(string(ns.SessionId)).Close(h.ctx()); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.conn.LoadSession(h2.ctx(), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var shown strings.Builder
	for _, u := range h2.cl.got(ns.SessionId) {
		shown.WriteString(chunkText(u) + "|")
	}
	if s := shown.String(); !strings.Contains(s, "write a") || strings.Contains(s, "make b") || !strings.Contains(s, "Rewound to before turn 2") {
		t.Fatalf("load replayed %q", s)
	}
	h2.cl.reset(ns.SessionId)
	if resp := h2.promptText(ns.SessionId, "/rewind undo"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("/rewind undo: %q", resp.StopReason)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "b.txt")); err != nil || string(b) != "two\n" {
		t.Fatalf("after undo b.txt = %q, %v", b, err)
	}
}
