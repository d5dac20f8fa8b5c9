package subagent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/tool"
)

// sessionSubagent is the subagent tool as the session's model sees it.
func sessionSubagent(t *testing.T, s *core.Session) tool.Tool {
	t.Helper()
	for _, x := range s.Tools() {
		if x.Name() == ToolName {
			return x
		}
	}
	t.Fatal("no subagent tool")
	return nil
}

func TestTypedAgentFromClaudeFile(t *testing.T) {
	h := newHarness(t, hopts{})
	dir := filepath.Join(h.cwd, ".claude", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := "---\nname: code-reviewer\ndescription: Reviews code after a change\ntools: Read, Grep, Glob\nmodel: inherit\n---\nYou are a senior code reviewer. Never edit files.\n"
	if err := os.WriteFile(filepath.Join(dir, "code-reviewer.md"), []byte(agent), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.parent(0)
	st := sessionSubagent(t, p)
	var schema struct {
		Properties struct {
			Agent struct {
				Enum []string `json:"enum"`
			} `json:"agent"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(st.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(schema.Properties.Agent.Enum, ","); got != "dsh-acp,dsh-sdk,inproc,code-reviewer" {
		t.Fatalf("agent enum %s", got)
	}
	if !strings.Contains(st.Description(), "- code-reviewer: Reviews code after a change") {
		t.Fatalf("description:\n%s", st.Description())
	}
	raw := json.RawMessage(`{"description":"review","prompt":"CHILD-OK review the diff","agent":"code-reviewer"}`)
	env := toolEnv(p)
	if acc, err := st.Inspect(raw, env); err != nil || acc.Title != "Subagent (code-reviewer): review" {
		t.Fatalf("inspect %+v %v", acc, err)
	}
	r := st.Run(context.Background(), raw, env)
	if r.IsError || resultText(r) != "child result: 42" {
		t.Fatalf("result %q", resultText(r))
	}
	var child string
	for _, e := range p.Events() {
		if e.Type == event.TypeSubagentStart {
			d, _ := event.Decode[event.SubagentStart](e)
			child = d.ChildSessionID
		}
	}
	_, evs, err := h.rt.Store().Read(child)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type != event.TypeRequestHeader {
			continue
		}
		d, _ := event.Decode[event.RequestHeader](e)
		var tools []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(d.Header.Tools, &tools); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, x := range tools {
			names = append(names, x.Name)
		}
		if strings.Join(names, ",") != "glob,grep,read" {
			t.Errorf("child tools %v", names)
		}
		if !strings.HasSuffix(d.Header.System, "# Your role: code-reviewer\nYou are a senior code reviewer. Never edit files.") {
			t.Errorf("child system prompt lacks the type's body")
		}
		return
	}
	t.Fatal("the child recorded no request header")
}
