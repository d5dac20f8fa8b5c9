package acp

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/permission"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden wire transcripts under testdata")

// TestWireTranscript pins the ACP door's wire, frame by frame, for the
// exchanges a client goes through: initialize, session/new, a prompt with
// a tool call and its permission request, session/load (the replay),
// a prompt cancelled with session/cancel, and session/fork. What varies
// from run to run (session ids, the workspace path, times, message ids)
// is replaced by placeholders; everything else must match
// testdata/transcript.golden. Regenerate with go test ./acp -run
// TestWireTranscript -update, and read the diff.
func TestWireTranscript(t *testing.T) {
	sc := map[string]any{"steps": []any{
		step("toolCalls", []any{map[string]any{"id": "call_w", "name": "write", "arguments": map[string]any{"file_path": "hello.txt", "content": "hi\n"}}},
			"usage", map[string]any{"inputTokens": 90, "outputTokens": 20}),
		step("text", "Wrote hello.txt.", "usage", map[string]any{"inputTokens": 100, "outputTokens": 10}),
		step("toolCalls", []any{map[string]any{"id": "call_t", "name": "todo_write", "arguments": map[string]any{"todos": []any{map[string]any{"content": "wait", "status": "in_progress"}}}}},
			"usage", map[string]any{"inputTokens": 130, "outputTokens": 15}),
		step("text", "never sent", "delayMs", 60000),
	}, "repeat": "last"}
	c := startRaw(t, hopts{mode: permission.ModeAsk, script: sc})
	cwd := t.TempDir()
	// initialize
	c.send(rawInit)
	c.response(`"init"`)
	// session/new: the commands follow the response.
	c.send(`{"jsonrpc":"2.0","id":"new","method":"session/new","params":{"cwd":` + jsonString(cwd) + `,"mcpServers":[]}}` + "\n")
	sid, _ := c.response(`"new"`)["result"].(map[string]any)["sessionId"].(string)
	c.await("commands", func(l string) bool { return strings.Contains(l, "available_commands_update") })
	// A prompt whose write the client is asked about.
	c.send(`{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"write hello"}]}}` + "\n")
	ask := c.await("permission request", func(l string) bool { return strings.Contains(l, `"session/request_permission"`) })
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal([]byte(ask), &req)
	c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}` + "\n")
	c.response(`"p1"`)
	// session/load replays the history before it answers.
	c.send(`{"jsonrpc":"2.0","id":"load","method":"session/load","params":{"sessionId":"` + sid + `","cwd":` + jsonString(cwd) + `,"mcpServers":[]}}` + "\n")
	c.response(`"load"`)
	// A prompt cancelled while the model is slow.
	c.send(`{"jsonrpc":"2.0","id":"p2","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"plan and wait"}]}}` + "\n")
	c.await("todo result", func(l string) bool { return strings.Contains(l, `"call_t"`) && strings.Contains(l, `"completed"`) })
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}` + "\n")
	if r := c.response(`"p2"`); stopReason(r) != "cancelled" {
		t.Fatalf("cancelled prompt answered %v", r)
	}
	// session/fork: a new session with the same history.
	c.send(`{"jsonrpc":"2.0","id":"fork","method":"session/fork","params":{"sessionId":"` + sid + `","cwd":` + jsonString(cwd) + `,"mcpServers":[]}}` + "\n")
	fid, _ := c.response(`"fork"`)["result"].(map[string]any)["sessionId"].(string)
	c.await("fork commands", func(l string) bool {
		return strings.Contains(l, "available_commands_update") && strings.Contains(l, fid)
	})
	got := normalise(c.all(), map[string]string{sid: "<SESSION>", fid: "<FORK>", cwd: "<CWD>"})
	path := filepath.Join("testdata", "transcript.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("the wire differs from %s (go test ./acp -run TestWireTranscript -update rewrites it):\n%s", path, firstDiff(string(want), got))
	}
}

var (
	rfc3339  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	uuidLike = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// normalise puts the transcript's lines in a stable form: placeholders for
// what varies, keys sorted (each line is re-encoded).
func normalise(lines []string, subst map[string]string) string {
	var b strings.Builder
	for _, l := range lines {
		for from, to := range subst {
			if from != "" {
				l = strings.ReplaceAll(l, from, to)
			}
		}
		l = rfc3339.ReplaceAllString(l, "<TIME>")
		l = uuidLike.ReplaceAllString(l, "<UUID>")
		var v any
		if json.Unmarshal([]byte(l), &v) == nil {
			if enc, err := json.Marshal(v); err == nil {
				l = string(enc)
			}
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(i+1) + ":\n want " + wl + "\n  got " + gl
		}
	}
	return ""
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
