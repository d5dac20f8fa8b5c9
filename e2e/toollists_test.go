package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// offeredTools are the tool names a model request offered.
func offeredTools(req *modeltest.Request) []string {
	var out []string
	for _, tl := range req.Body.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// TestDisallowedToolsAreNotOffered: a tool the deny list names whole
// (--disallowed-tools bash, the config's disallowedTools) is not in the
// tools the model is sent; a call of it anyway is refused as the list
// refuses; a pattern entry (write(secret/**)) leaves the tool offered and
// refuses the calls it matches when they are made.
func TestDisallowedToolsAreNotOffered(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	cfg := filepath.Join(w.Home, "config.json")
	writeFile(t, cfg, mustJSON(t, map[string]any{"disallowedTools": []string{"web_fetch"}}))
	srv.Enqueue(
		modeltest.ToolCallsReply("",
			modeltest.Call{ID: "c-bash", Name: "bash", Args: `{"command":"echo ran > ran.txt","description":"try"}`},
			modeltest.Call{ID: "c-write", Name: "write", Args: `{"file_path":"secret/a.txt","content":"x"}`},
			modeltest.Call{ID: "c-ok", Name: "write", Args: `{"file_path":"open/a.txt","content":"x"}`}),
		modeltest.TextReply("done"))
	r := w.run(nil, "run", "--config", cfg, "--disallowed-tools", "Bash, write(secret/**)", "try the tools")
	wantExit(t, r, 0)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests\nstderr:\n%s", len(reqs), r.Stderr)
	}
	for i, req := range reqs {
		names := offeredTools(req)
		for _, gone := range []string{"bash", "web_fetch"} {
			if slices.Contains(names, gone) {
				t.Errorf("request %d offers %s, which the deny list names whole: %v", i, gone, names)
			}
		}
		for _, kept := range []string{"write", "read", "job_output"} {
			if !slices.Contains(names, kept) {
				t.Errorf("request %d lacks %s: %v", i, kept, names)
			}
		}
	}
	if strings.Contains(r.Stderr, "matches no tool") {
		t.Errorf("a withheld tool is still a tool: no warning wanted\n%s", r.Stderr)
	}
	for id, want := range map[string]string{
		"c-bash":  "bash is refused by the disallowed-tools list",
		"c-write": "refused by the disallowed-tools list",
	} {
		if got, _ := toolMessage(reqs[1], id); !strings.Contains(got, want) {
			t.Errorf("%s: the model was told %q, want %q", id, got, want)
		}
	}
	if got, _ := toolMessage(reqs[1], "c-ok"); strings.Contains(got, "refused") {
		t.Errorf("a write outside the pattern was refused: %q", got)
	}
	if fileExists(filepath.Join(w.Cwd, "ran.txt")) || fileExists(filepath.Join(w.Cwd, "secret", "a.txt")) {
		t.Error("a refused call ran")
	}
	if !fileExists(filepath.Join(w.Cwd, "open", "a.txt")) {
		t.Error("the allowed write did not run")
	}
}

// TestDisallowedToolsReachEverySubagent: a tool withheld from the parent
// is withheld from its children too — an in-process child (same runtime)
// and the dsh children of the dsh-sdk and dsh-acp providers, which get
// the parent's flags through their environment.
func TestDisallowedToolsReachEverySubagent(t *testing.T) {
	t.Parallel()
	plan := saPlan{Scenario: "deny", Agents: saBuiltins, Final: "PARENT-DONE", Children: map[string]saChild{}}
	for _, a := range saBuiltins {
		plan.Children[a] = saChild{Text: fmt.Sprintf("the %s child answers", a)}
	}
	sw := newSAWorld(t, plan, saOpts{sse: true, flags: []string{"--disallowed-tools", "bash", "--disallowed-tools", "web_fetch"}})
	o := sw.startTurn(t, saRun, plan).wait()
	o.wantStop(t, saRun, event.ReasonCompleted)
	matches := []string{plan.parentPrompt()}
	for _, a := range saBuiltins {
		matches = append(matches, plan.childMatch(a))
	}
	for m, req := range sw.waitModelCalls(t, matches...) {
		names := offeredTools(req)
		if slices.Contains(names, "bash") || slices.Contains(names, "web_fetch") || !slices.Contains(names, "read") {
			t.Errorf("%s: offered %v, want read and neither bash nor web_fetch", m, names)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
