package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// secTools is the step that probes the environment of the bash tool:
// `env`, the credentials by name, and (counting only, so a leak cannot
// itself write the key anywhere) the parent's /proc environ.
func secTools() modeltest.Reply {
	return modeltest.ToolCallsReply("Look at the environment.",
		modeltest.Call{ID: "call_env", Name: "bash", Args: `{"command":"env","description":"print the environment"}`, Fragments: 2},
		modeltest.Call{ID: "call_echo", Name: "bash", Args: `{"command":"echo \"key=[$DEEPSEEK_API_KEY] token=[$GITHUB_TOKEN] openai=[$OPENAI_API_KEY]\"","description":"print the credentials"}`},
		modeltest.Call{ID: "call_proc", Name: "bash", Args: `{"command":"tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | grep -c SECRET; true","description":"count secrets in the parent environ"}`},
	)
}

// secReplies is one door's conversation: a tool turn and its answer, then
// a 401 whose body echoes the key, then a stream whose malformed chunk
// echoes it.
func secReplies(secret string) []modeltest.Reply {
	return []modeltest.Reply{
		secTools(),
		modeltest.TextReply("The environment is clean."),
		modeltest.ErrorReply(401, "Authentication Fails, your api key: "+secret+" is invalid"),
		modeltest.NewStream().Role().Raw("data: {\"echo\": " + secret + "}\n\n").Reply(),
	}
}

// TestSecretsNeverLeak runs turns through `dsh run` and `dsh sdk` with
// DEEPSEEK_API_KEY=sk-test-SECRET-<random> (and two more credentials)
// against the fake server: the server receives the key in the
// Authorization header; a failing auth whose body echoes the key, a stream
// that echoes it and a bash tool that prints its environment never put it
// into a session log, an event, a notification, stdout, stderr or an
// error; the bash tool's children inherit no credential; and nothing is
// written outside the session root and the workspace.
func TestSecretsNeverLeak(t *testing.T) {
	var rb [8]byte
	if _, err := rand.Read(rb[:]); err != nil {
		t.Fatal(err)
	}
	secret := "sk-test-SECRET-" + hex.EncodeToString(rb[:])
	token := "ghp_SECRET_TOKEN_" + hex.EncodeToString(rb[:])
	openai := "sk-openai-SECRET-" + hex.EncodeToString(rb[:])
	secrets := []string{secret, token, openai}

	srv := modeltest.New(t)
	srv.EnqueueFor("run door", secReplies(secret)...)
	srv.EnqueueFor("sdk door", secReplies(secret)...)
	w := newWorld(t, "DSH_PROVIDER=deepseek-official", "DEEPSEEK_BASE_URL="+srv.URL, "DEEPSEEK_API_KEY="+secret,
		"GITHUB_TOKEN="+token, "OPENAI_API_KEY="+openai)
	base := filepath.Dir(w.Root)
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, kv := range w.Env {
		if strings.HasPrefix(kv, "TMPDIR=") {
			w.Env[i] = "TMPDIR=" + tmp
		}
	}
	before := pxSnapshot(t, base, w.Root, w.Cwd)
	var seen []string // every byte a door gave us
	var logs []string

	// The headless door: a tool turn (--json), a failing auth (default
	// mode: the error goes to stderr), a malformed stream (--json).
	r1 := w.run(nil, "run", "--json", "run door: inspect the environment")
	seen = append(seen, r1.Stdout, r1.Stderr)
	if r1.Code != 0 {
		t.Fatalf("run 1: exit %d\n%s\n%s", r1.Code, r1.Stdout, r1.Stderr)
	}
	lines := pxLines(r1.Stdout)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if len(lines) == 0 || json.Unmarshal([]byte(lines[0]), &sess) != nil || sess.SessionID == "" {
		t.Fatalf("no session line: %s", r1.Stdout)
	}
	runID := sess.SessionID
	r2 := w.run(nil, "run", "--session-id", runID, "run door: again")
	seen = append(seen, r2.Stdout, r2.Stderr)
	if r2.Code != 1 || !strings.Contains(r2.Stderr, "AUTH") || !strings.Contains(r2.Stderr, "[redacted]") {
		t.Fatalf("run 2 (401): exit %d, stderr %q; want exit 1 and a redacted AUTH error", r2.Code, r2.Stderr)
	}
	r3 := w.run(nil, "run", "--json", "--session-id", runID, "run door: once more")
	seen = append(seen, r3.Stdout, r3.Stderr)
	if r3.Code != 1 || !strings.Contains(r3.Stdout, "MALFORMED_RESPONSE") {
		t.Fatalf("run 3 (malformed stream): exit %d\n%s\n%s", r3.Code, r3.Stdout, r3.Stderr)
	}

	// The SDK door: the same three turns through the Go client.
	c := pxStartSDK(t, w, "deepseek-official")
	all := c.Subscribe(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sdkID := newSessionID()
	want := []string{event.ReasonCompleted, event.ReasonError, event.ReasonError}
	for i, prompt := range []string{"sdk door: inspect the environment", "sdk door: again", "sdk door: once more"} {
		res, err := c.Session(sdkID).Run(ctx, prompt)
		if err != nil {
			t.Fatalf("sdk turn %d: %v", i+1, err)
		}
		if string(res.FinishReason) != want[i] {
			t.Fatalf("sdk turn %d ended %q, want %q", i+1, res.FinishReason, want[i])
		}
	}
	for {
		n, ok, _ := all.TryNext()
		if !ok {
			break
		}
		seen = append(seen, n.Method+" "+string(n.Params))
	}
	// A request that fails carries its error text through the client too.
	if err := c.Session("no-such-session").Cancel(ctx); err != nil {
		seen = append(seen, err.Error())
	}
	pxClose(t, c)
	seen = append(seen, strings.Join(c.StderrTail(), "\n"))

	// The server got the key where it belongs, on every request.
	reqs := srv.Requests()
	if len(reqs) != 8 {
		t.Errorf("the server saw %d requests, want 8", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer "+secret {
			t.Errorf("request %d: Authorization %q, want the key", r.Seq, got)
		}
	}

	// The bash tool's children inherit no credential.
	for _, id := range []string{runID, sdkID} {
		evs := pxRead(t, w, id)
		out := secToolOutputs(t, evs)
		if got := out["call_echo"]; !strings.HasPrefix(got, "key=[] token=[] openai=[]") {
			t.Errorf("session %s: the bash tool saw credentials: %q", id, got)
		}
		for _, name := range []string{"DEEPSEEK_API_KEY=", "GITHUB_TOKEN=", "OPENAI_API_KEY="} {
			if strings.Contains(out["call_env"], name) {
				t.Errorf("session %s: `env` in the bash tool lists %s", id, name)
			}
		}
		if n := strings.TrimSpace(strings.SplitN(out["call_proc"], "\n", 2)[0]); n != "0" {
			// Same-user processes can read a process's environment through
			// /proc/<pid>/environ unless it is non-dumpable (or they are
			// root). Reported (issue 9), not failed: the fix belongs in
			// cmd/dsh (prctl PR_SET_DUMPABLE 0 at start-up).
			t.Logf("secrets: FINDING: a bash tool command can read %s credential(s) from dsh's /proc/$PPID/environ (euid %d)", n, os.Geteuid())
		}
		logs = append(logs, strings.Join(secErrors(t, evs), "\n"))
	}
	if !strings.Contains(strings.Join(logs, "\n"), "[redacted]") {
		t.Errorf("no recorded error mentions [redacted]; the 401 body's key should have been replaced:\n%s", strings.Join(logs, "\n"))
	}

	// No byte anywhere holds a credential: doors' output, notifications,
	// errors, stderr tails, and every file the processes could write.
	for _, s := range seen {
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("a credential leaked into door output: %.300q", s)
			}
		}
	}
	files := 0
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, sec := range secrets {
			if strings.Contains(string(b), sec) {
				t.Errorf("a credential leaked into %s", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Nothing written outside the session root and the workspace.
	after := pxSnapshot(t, base, w.Root, w.Cwd)
	if changed := pxChanged(before, after); len(changed) > 0 {
		t.Errorf("written outside the session root and the workspace: %v", changed)
	}
	t.Logf("secrets: 8 model requests carried the key; %d door outputs and %d files scanned; no credential found", len(seen), files)
}

// secToolOutputs maps call ids to the text of their tool results.
func secToolOutputs(t *testing.T, evs []event.Event) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ev := range evs {
		if ev.Type != event.TypeToolResult {
			continue
		}
		d, err := event.Decode[event.ToolResult](ev)
		if err != nil {
			t.Fatal(err)
		}
		b := d.Result()
		out[b.ToolCallID] = event.JoinText(b.Content)
	}
	return out
}

// secErrors returns the error messages recorded by turn/end events.
func secErrors(t *testing.T, evs []event.Event) []string {
	t.Helper()
	var msgs []string
	for _, ev := range evs {
		if ev.Type != event.TypeTurnEnd {
			continue
		}
		d, err := event.Decode[event.TurnEnd](ev)
		if err != nil {
			t.Fatal(err)
		}
		if d.Reason.Error != nil {
			msgs = append(msgs, d.Reason.Error.Code+": "+d.Reason.Error.Message)
		}
	}
	return msgs
}
