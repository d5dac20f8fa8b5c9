package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/permission"
)

// A model that writes a tool's name in another case ("Bash", "Read") has
// its call run by the tool it meant; the editor is shown that tool's kind
// and title (the facts core recorded with the call), not "other" and the
// raw name.
func TestRepairedToolNamesShowTheToolThatRan(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeAuto, script: script(
		step("toolCalls", calls(call("Read", map[string]any{"file_path": "notes.txt"}))),
		step("toolCalls", calls(call("Bash", map[string]any{"command": "echo hi"}))),
		step("text", "done"),
	)})
	if err := os.WriteFile(filepath.Join(h.cwd, "notes.txt"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	if resp := h.promptText(ns.SessionId, "look"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop %q", resp.StopReason)
	}
	var starts []*sdk.SessionUpdateToolCall
	for _, u := range h.cl.got(ns.SessionId) {
		if u.ToolCall != nil {
			starts = append(starts, u.ToolCall)
		}
	}
	if len(starts) != 2 {
		t.Fatalf("tool calls: %v", kinds(h.cl.got(ns.SessionId)))
	}
	r, b := starts[0], starts[1]
	if r.Kind != sdk.ToolKindRead || r.Title != "Read notes.txt" || len(r.Locations) != 1 || r.Locations[0].Path != filepath.Join(h.cwd, "notes.txt") {
		t.Errorf("Read shown as %+v, want kind read, title \"Read notes.txt\" and its location", r)
	}
	if b.Kind != sdk.ToolKindExecute || !strings.Contains(b.Title, "echo hi") {
		t.Errorf("Bash shown as kind %q title %q, want execute and the command", b.Kind, b.Title)
	}
	// The log holds the facts the editor was shown.
	var recorded int
	for _, ev := range h.sessionEvents(ns.SessionId) {
		if ev.Type == "tool/call" && bytes.Contains(ev.Data, []byte(`"facts":{`)) {
			recorded++
		}
	}
	if recorded != 2 {
		t.Errorf("%d tool/call events carry facts, want 2", recorded)
	}
}

// A permission request for write, edit or multi_edit carries the change as
// ACP diff content, so the editor shows it before the user approves.
func TestPermissionRequestCarriesTheDiff(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeAsk, script: script(
		step("toolCalls", calls(call("read", map[string]any{"file_path": "a.txt"}))),
		step("toolCalls", calls(call("write", map[string]any{"file_path": "new.txt", "content": "fresh\n"}))),
		step("toolCalls", calls(call("edit", map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "uno"}))),
		step("toolCalls", calls(call("multi_edit", map[string]any{"file_path": "a.txt", "edits": []any{
			map[string]any{"old_string": "uno", "new_string": "eins"}, map[string]any{"old_string": "two", "new_string": "zwei"}}}))),
		step("text", "done"),
	)})
	if err := os.WriteFile(filepath.Join(h.cwd, "a.txt"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.cl.mu.Lock()
	h.cl.answer = func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected("allow_once")
	}
	h.cl.mu.Unlock()
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	if resp := h.promptText(ns.SessionId, "change things"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop %q", resp.StopReason)
	}
	h.cl.mu.Lock()
	asked := h.cl.asked
	h.cl.mu.Unlock()
	if len(asked) != 3 {
		t.Fatalf("asked %d times, want 3 (write, edit, multi_edit)", len(asked))
	}
	a := filepath.Join(h.cwd, "a.txt")
	for i, want := range []struct {
		path, old, new string
		created        bool
	}{
		{path: filepath.Join(h.cwd, "new.txt"), new: "fresh\n", created: true},
		{path: a, old: "one\ntwo\n", new: "uno\ntwo\n"},
		{path: a, old: "uno\ntwo\n", new: "eins\nzwei\n"},
	} {
		tc := asked[i].ToolCall
		if len(tc.Content) != 1 || tc.Content[0].Diff == nil {
			t.Errorf("request %d carries %+v, want one diff", i, tc.Content)
			continue
		}
		d := tc.Content[0].Diff
		if d.Path != want.path || d.NewText != want.new || (d.OldText == nil) != want.created || (d.OldText != nil && *d.OldText != want.old) {
			t.Errorf("request %d diff = {%s %v %q}, want %+v", i, d.Path, d.OldText, d.NewText, want)
		}
		if tc.Kind == nil || *tc.Kind != sdk.ToolKindEdit {
			t.Errorf("request %d kind %v, want edit", i, tc.Kind)
		}
	}
	if data, _ := os.ReadFile(a); string(data) != "eins\nzwei\n" {
		t.Errorf("a.txt = %q", data)
	}
}

// A model that writes a 12 MiB file must not make a frame over acp-go-sdk's
// 10 MiB line cap (the client would disconnect): the tool_call's and the
// permission request's rawInput and diff are summarised, naming the file.
// The harness's client is acp-go-sdk's own, with that cap.
func TestHugeWriteStaysUnderTheLineCap(t *testing.T) {
	content := strings.Repeat("0123456789abcde\n", hugeWrite/16)
	sc := script(
		step("toolCalls", calls(call("write", map[string]any{"file_path": "big.txt", "content": content}))),
		step("text", "done"),
	)
	sc["contextWindow"] = 8_000_000 // the call's arguments go back to the model
	h := start(t, hopts{mode: permission.ModeAsk, script: sc})
	h.cl.mu.Lock()
	h.cl.answer = func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected("allow_once")
	}
	h.cl.mu.Unlock()
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	// 12 MiB of JSON is slow work under the race detector: more time.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp, err := h.conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("write it")}})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("session/prompt: %v, %v", resp.StopReason, err)
	}
	if fi, err := os.Stat(filepath.Join(h.cwd, "big.txt")); err != nil || fi.Size() != int64(len(content)) {
		t.Fatalf("big.txt: %v, %v", fi, err)
	}
	longest := 0
	for _, l := range h.out.lines() {
		longest = max(longest, len(l))
	}
	if longest >= 10<<20 || (hugeWrite > maxDiffBytes && longest > 1<<20) {
		t.Errorf("longest frame %d bytes, want under acp-go-sdk's 10 MiB (and 1 MiB when the diff is elided)", longest)
	}
	path := filepath.Join(h.cwd, "big.txt")
	var start *sdk.SessionUpdateToolCall
	for _, u := range h.cl.got(ns.SessionId) {
		if u.ToolCall != nil {
			start = u.ToolCall
		}
	}
	if start == nil {
		t.Fatal("no tool_call")
	}
	if raw, _ := json.Marshal(start.RawInput); !strings.Contains(string(raw), "bytes not shown; the file is "+path) || !strings.Contains(string(raw), `"file_path":"big.txt"`) {
		t.Errorf("tool_call rawInput = %.300s", raw)
	}
	h.cl.mu.Lock()
	asked := h.cl.asked
	h.cl.mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	tc := asked[0].ToolCall
	if hugeWrite <= maxDiffBytes {
		if len(tc.Content) != 1 || tc.Content[0].Diff == nil || len(tc.Content[0].Diff.NewText) != hugeWrite {
			t.Errorf("permission content = %+v, want the whole diff", tc.Content)
		}
		return
	}
	if len(tc.Content) != 1 || tc.Content[0].Content == nil || tc.Content[0].Content.Content.Text == nil ||
		!strings.Contains(tc.Content[0].Content.Content.Text.Text, "too large to show here") {
		t.Errorf("permission content = %+v, want a note that the change is too large", tc.Content)
	}
}
