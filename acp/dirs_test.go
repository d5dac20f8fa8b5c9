package acp

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
)

// realTempDir is a fresh directory with its symlinks resolved (the gate
// compares resolved paths).
func realTempDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	return d
}

// recordedDirs returns the additional-directory sets the session's log
// records, in order.
func (h *harness) recordedDirs(id sdk.SessionId) [][]string {
	h.t.Helper()
	var out [][]string
	for _, ev := range h.sessionEvents(id) {
		if ev.Type == event.TypeSessionDirs {
			d, err := event.Decode[event.SessionDirs](ev)
			if err != nil {
				h.t.Fatal(err)
			}
			out = append(out, d.AdditionalDirectories)
		}
	}
	return out
}

// listedDirs is what session/list reports for the session (false: not
// listed).
func (h *harness) listedDirs(id sdk.SessionId) ([]string, bool) {
	h.t.Helper()
	resp, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(h.cwd)})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, si := range resp.Sessions {
		if si.SessionId == id {
			return si.AdditionalDirectories, true
		}
	}
	return nil, false
}

// badDirs are additionalDirectories entries every lifecycle request refuses.
func badDirs(t *testing.T) map[string]string {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"relative": "rel/dir", "missing": filepath.Join(t.TempDir(), "nope"), "file": file}
}

// The session's additionalDirectories are kept in its log: session/list
// reports them, and a bad entry is refused with nothing recorded.
func TestAdditionalDirectoriesListed(t *testing.T) {
	extra := realTempDir(t)
	h := start(t, hopts{})
	h.initialize(sdk.ClientCapabilities{})
	for name, bad := range badDirs(t) {
		_, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{},
			AdditionalDirectories: []string{extra, bad}})
		wantCode(t, err, -32602, "additionalDirectories[1]")
		if resp, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{}); err != nil || len(resp.Sessions) != 0 {
			t.Fatalf("%s: a refused session/new left %+v %v", name, resp.Sessions, err)
		}
	}
	ns, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{},
		AdditionalDirectories: []string{extra, extra + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := h.listedDirs(ns.SessionId); !ok || !slices.Equal(got, []string{extra}) {
		t.Fatalf("session/list: %q (listed %v), want [%s]", got, ok, extra)
	}
	if got := h.recordedDirs(ns.SessionId); len(got) != 1 {
		t.Fatalf("recorded %q, want one set", got)
	}
	// A fork's roots are its request's, not the source's.
	for _, send := range [][]string{nil, {h.cwd}} {
		fork, err := h.conn.UnstableForkSession(h.ctx(), sdk.UnstableForkSessionRequest{SessionId: ns.SessionId, Cwd: h.cwd,
			AdditionalDirectories: send})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := h.listedDirs(fork.SessionId); !slices.Equal(got, send) {
			t.Fatalf("fork with %q lists %q", send, got)
		}
	}
	plain := h.newSession()
	if got, ok := h.listedDirs(plain.SessionId); !ok || got != nil {
		t.Fatalf("a session without roots lists %q (listed %v)", got, ok)
	}
	if got := h.recordedDirs(plain.SessionId); got != nil {
		t.Fatalf("a session without roots recorded %q", got)
	}
}

// A load in another process that sends the same roots records nothing new
// and puts them in force (a write there needs no question in auto mode);
// a bad entry changes nothing; another set replaces them, and a request
// without the field leaves no additional roots, as ACP has it ("when
// omitted or empty, no additional roots are activated") — each change
// recorded once and listed.
func TestAdditionalDirectoriesOnLoadAndResume(t *testing.T) {
	extra, other := realTempDir(t), realTempDir(t)
	target := filepath.Join(extra, "x.txt")
	h := start(t, hopts{})
	h.initialize(sdk.ClientCapabilities{})
	ns, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{},
		AdditionalDirectories: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rt.Close(context.Background()); err != nil { // release the session's lease
		t.Fatal(err)
	}

	h2 := start(t, hopts{root: h.root, cwd: h.cwd, script: script(
		step("toolCalls", calls(call("write", map[string]any{"file_path": target, "content": "x\n"}))), step("text", "ok"))})
	h2.initialize(sdk.ClientCapabilities{})
	for name, bad := range badDirs(t) {
		_, err := h2.conn.LoadSession(h2.ctx(), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h2.cwd,
			McpServers: []sdk.McpServer{}, AdditionalDirectories: []string{other, bad}})
		wantCode(t, err, -32602, "additionalDirectories[1]")
		_, err = h2.conn.ResumeSession(h2.ctx(), sdk.ResumeSessionRequest{SessionId: ns.SessionId, Cwd: h2.cwd,
			AdditionalDirectories: []string{bad}})
		wantCode(t, err, -32602, "additionalDirectories[0]")
		if got := h2.recordedDirs(ns.SessionId); len(got) != 1 {
			t.Fatalf("%s: recorded %q after refused requests, want the first set only", name, got)
		}
	}
	if _, err := h2.conn.LoadSession(h2.ctx(), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h2.cwd,
		McpServers: []sdk.McpServer{}, AdditionalDirectories: []string{extra}}); err != nil {
		t.Fatal(err)
	}
	if got := h2.recordedDirs(ns.SessionId); len(got) != 1 {
		t.Fatalf("the same set again recorded %q", got)
	}
	h2.promptText(ns.SessionId, "write in the extra root")
	h2.cl.mu.Lock()
	asked := len(h2.cl.asked)
	h2.cl.mu.Unlock()
	if b, err := os.ReadFile(target); asked != 0 || err != nil || string(b) != "x\n" {
		t.Fatalf("after the load: %d questions, file %q %v", asked, b, err)
	}

	steps := []struct {
		send, want []string
	}{{[]string{other}, []string{other}}, {nil, nil}}
	for i, st := range steps {
		if _, err := h2.conn.ResumeSession(h2.ctx(), sdk.ResumeSessionRequest{SessionId: ns.SessionId, Cwd: h2.cwd,
			AdditionalDirectories: st.send}); err != nil {
			t.Fatal(err)
		}
		rec := h2.recordedDirs(ns.SessionId)
		if len(rec) != i+2 || !slices.Equal(rec[i+1], st.want) {
			t.Fatalf("resume with %q recorded %q", st.send, rec)
		}
		if got, _ := h2.listedDirs(ns.SessionId); !slices.Equal(got, st.want) {
			t.Fatalf("resume with %q: session/list reports %q", st.send, got)
		}
	}
}
