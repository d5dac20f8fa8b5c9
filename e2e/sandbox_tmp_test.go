package e2e

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

func toolCall(t *testing.T, id, name string, args map[string]any) modeltest.Call {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.Call{ID: id, Name: name, Args: string(b)}
}

// TestSandboxTmpIsTheSessions: a file one command writes to /tmp is there
// for the session's next command and its background jobs, is not in the
// host's /tmp, and is gone once the session closes (issue 26: each
// command used to get its own /tmp).
func TestSandboxTmpIsTheSessions(t *testing.T) { forEachSandboxUser(t, testSandboxTmpIsTheSessions) }

func testSandboxTmpIsTheSessions(t *testing.T, u sandboxUser) {
	sw := newSandboxWorld(t, u)
	marker := "dsh-e2e-" + filepath.Base(sw.base)
	sw.srv.Enqueue(
		modeltest.ToolCallsReply("write", bashCall(t, "call_w", "echo shared > /tmp/"+marker)),
		modeltest.ToolCallsReply("read", bashCall(t, "call_r", "cat /tmp/"+marker+" > seen")),
		modeltest.ToolCallsReply("job", toolCall(t, "call_j", "bash", map[string]any{"command": "cat /tmp/" + marker + " > seen-by-job && cat seen-by-job",
			"description": "read in a job", "run_in_background": true})),
		modeltest.ToolCallsReply("wait", toolCall(t, "call_o", "job_output", map[string]any{"job_id": "job-1", "wait_ms": 20000})),
		modeltest.TextReply("done"))
	sw.Env = append(sw.Env, "DSH_SANDBOX=required")
	r := sw.run(nil, "run", "share /tmp")
	if r.Code != 0 {
		t.Fatalf("run: %d\n%s", r.Code, r.Stderr)
	}
	if got := sw.read("seen"); got != "shared\n" {
		t.Errorf("the next command saw %q in /tmp, want the first one's file", got)
	}
	if got := sw.read("seen-by-job"); got != "shared\n" {
		t.Errorf("a background job saw %q in /tmp, want the session's file", got)
	}
	if exists(filepath.Join("/tmp", marker)) {
		t.Errorf("the command's /tmp file landed in the host's /tmp")
	}
	_ = filepath.WalkDir(sw.Root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "tmp" && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "session-") {
			t.Errorf("the session's /tmp %s outlived the session", p)
		}
		return nil
	})
}

// TestCommandEnvIsAnAllowList: database URLs, passwords, tokens and the
// ssh agent socket of dsh's environment do not reach the commands the
// model runs; the base set does, and commandEnv passes more by name or
// prefix.
func TestCommandEnvIsAnAllowList(t *testing.T) {
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	w.Env = append(w.Env, "PGPASSWORD=pg-MARKER", "DATABASE_URL=postgres://u:db-MARKER@h/db", "GITHUB_PAT=pat-MARKER",
		"SSH_AUTH_SOCK=/run/sock-MARKER", "PGHOST=db.example", "MYAPP_MODE=dev", "LC_ALL=C", "GOPATH=/go-path")
	dump := bashCall(t, "call_env", "env > env.txt")
	srv.Enqueue(modeltest.ToolCallsReply("env", dump), modeltest.TextReply("done"))
	if r := w.run(nil, "run", "dump the environment"); r.Code != 0 {
		t.Fatalf("run: %d\n%s", r.Code, r.Stderr)
	}
	env := readFile(t, filepath.Join(w.Cwd, "env.txt"))
	if strings.Contains(env, "MARKER") || strings.Contains(env, "PGHOST") || strings.Contains(env, "MYAPP") {
		t.Errorf("a variable outside the base set reached the command:\n%s", env)
	}
	for _, want := range []string{"PATH=", "HOME=", "LC_ALL=C", "GOPATH=/go-path"} {
		if !strings.Contains(env, want) {
			t.Errorf("the base set's %s did not reach the command:\n%s", want, env)
		}
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"commandEnv": ["PGHOST"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Env = append(w.Env, "DSH_CONFIG="+cfg, "DSH_COMMAND_ENV=MYAPP_*")
	srv.Enqueue(modeltest.ToolCallsReply("env", dump), modeltest.TextReply("done"))
	if r := w.run(nil, "run", "dump the environment again"); r.Code != 0 {
		t.Fatalf("run: %d\n%s", r.Code, r.Stderr)
	}
	env = readFile(t, filepath.Join(w.Cwd, "env.txt"))
	if !strings.Contains(env, "PGHOST=db.example") || !strings.Contains(env, "MYAPP_MODE=dev") || strings.Contains(env, "MARKER") {
		t.Errorf("commandEnv PGHOST and DSH_COMMAND_ENV MYAPP_* must pass exactly those:\n%s", env)
	}
}
