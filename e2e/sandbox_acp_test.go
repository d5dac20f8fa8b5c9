package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// TestSandboxEditorTerminal: over ACP with a client that offers
// terminals, the command the editor is asked to run is dsh's reaper over
// bash, and run as the editor would run it (as the same user, in its own
// process tree), it is contained: the write outside the workspace fails.
// With sandbox off the editor gets bash itself and the write works.
func TestSandboxEditorTerminal(t *testing.T) { forEachSandboxUser(t, testSandboxEditorTerminal) }

func testSandboxEditorTerminal(t *testing.T, u sandboxUser) {
	sw := newSandboxWorld(t, u)
	escaped := filepath.Join(sw.base, "escaped-term")
	for _, tc := range []struct {
		setting   string
		contained bool
	}{{"off", false}, {"required", true}} {
		os.Remove(escaped)
		os.Remove(filepath.Join(sw.Cwd, "inside"))
		sw.srv.Enqueue(modeltest.ToolCallsReply("try", bashCall(t, "call_term", `echo in > inside; echo out > ../escaped-term`)),
			modeltest.TextReply("done"))
		saved := sw.Env
		sw.Env = append(append([]string(nil), sw.Env...), "DSH_SANDBOX="+tc.setting, "DSH_PERMISSION_MODE=auto")
		p := startACP(t, sw.world)
		sw.Env = saved
		p.wantResult(p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"terminal": true}}))
		sid := p.newSession()
		prompt := p.request("session/prompt", textPrompt(sid, "run it in the terminal, sandbox "+tc.setting))
		argv := serveTerminal(t, p, sw)
		if stop := p.response(prompt).stopReason(); stop != "end_turn" {
			t.Fatalf("sandbox %s: stop %q", tc.setting, stop)
		}
		if viaReaper := len(argv) > 1 && argv[0] == dshBin && argv[1] == "__reap"; viaReaper != tc.contained {
			t.Errorf("sandbox %s: the editor was asked to run %q", tc.setting, argv)
		}
		if b, _ := os.ReadFile(filepath.Join(sw.Cwd, "inside")); string(b) != "in\n" {
			t.Fatalf("sandbox %s: the command did not run: %q", tc.setting, b)
		}
		if got := exists(escaped); got == tc.contained {
			t.Errorf("sandbox %s: wrote outside the workspace: %v", tc.setting, got)
		}
	}
}

// serveTerminal plays the editor's side of one terminal: it runs what
// terminal/create asks (as dsh's user, in the workspace, with the given
// environment added), then answers wait_for_exit, output and release. It
// returns the argv it ran.
func serveTerminal(t *testing.T, p *acpPipe, sw *sandboxWorld) []string {
	t.Helper()
	req := p.waitFor("terminal/create", func(f acpFrame) bool { return f.Method == "terminal/create" })
	var c struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
		Cwd     string   `json:"cwd"`
		Env     []struct{ Name, Value string }
	}
	must(t, json.Unmarshal(req.Params, &c))
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Dir, cmd.Env = c.Cwd, append([]string(nil), sw.Env...)
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	if sw.As != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: sw.As}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	answer := func(f acpFrame, result any) {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": f.ID, "result": result})
		must(t, err)
		p.send(string(b))
	}
	answer(req, map[string]any{"terminalId": "term-1"})
	for _, m := range []string{"terminal/wait_for_exit", "terminal/output", "terminal/release"} {
		f := p.waitFor(m, func(f acpFrame) bool { return f.Method == m })
		switch m {
		case "terminal/wait_for_exit":
			answer(f, map[string]any{"exitCode": code})
		case "terminal/output":
			answer(f, map[string]any{"output": out.String(), "truncated": false, "exitStatus": map[string]any{"exitCode": code}})
		default:
			answer(f, map[string]any{})
		}
	}
	return append([]string{c.Command}, c.Args...)
}
