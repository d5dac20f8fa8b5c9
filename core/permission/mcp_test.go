package permission

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dsh-dev/dsh/core/tool"
)

// MCP tools: read-only runs only readOnlyHint tools, auto runs those and
// asks for the rest, ask asks for all, full runs all; an always answer
// becomes a rule for that one mcp__server__tool.
func TestMCPToolsThroughTheGate(t *testing.T) {
	ro := Request{Tool: "mcp__gh__search", Kind: string(tool.KindMCPRead), Workspace: "/w"}
	rw := Request{Tool: "mcp__gh__create_issue", Kind: string(tool.KindMCP), Workspace: "/w"}
	asked := 0
	yes := askerFunc(func(context.Context, Request) (Answer, error) { asked++; return AllowOnce, nil })
	for _, c := range []struct {
		mode  Mode
		req   Request
		allow bool
		asks  bool
	}{
		{ModeReadOnly, ro, true, false}, {ModeReadOnly, rw, false, false},
		{ModeAuto, ro, true, false}, {ModeAuto, rw, true, true},
		{ModeAsk, ro, true, true}, {ModeAsk, rw, true, true},
		{ModeFull, ro, true, false}, {ModeFull, rw, true, false},
	} {
		asked = 0
		g := Gate{Mode: c.mode, Asker: yes}
		d := g.Decide(context.Background(), c.req)
		if d.Allow != c.allow || (asked > 0) != c.asks {
			t.Errorf("%s %s: allow %v asked %d, want allow %v asks %v (%s)", c.mode, c.req.Tool, d.Allow, asked, c.allow, c.asks, d.Reason)
		}
	}
	if d := (&Gate{Mode: ModeAuto}).Decide(context.Background(), rw); d.Allow || d.By != ByNoAsker {
		t.Errorf("with no one to ask, an unmarked MCP tool is refused: %+v", d)
	}

	rules, err := LoadRules(filepath.Join(t.TempDir(), "permissions.json"))
	if err != nil {
		t.Fatal(err)
	}
	always := askerFunc(func(context.Context, Request) (Answer, error) { asked++; return AllowAlways, nil })
	g := Gate{Mode: ModeAsk, Rules: rules, Asker: always}
	asked = 0
	g.Decide(context.Background(), rw)
	if d := g.Decide(context.Background(), rw); !d.Allow || d.By != ByRule || asked != 1 {
		t.Errorf("an always answer must hold for that tool: %+v asked %d", d, asked)
	}
	other := rw
	other.Tool = "mcp__gh__delete_repo"
	g.Decide(context.Background(), other)
	if asked != 2 {
		t.Errorf("the rule must not cover another tool of the server: asked %d", asked)
	}
	if err := rules.Add(Rule{Tool: "mcp__gh__search", Pattern: "*"}); err != nil {
		t.Fatal(err)
	}
	if d := (&Gate{Mode: ModeAuto, Rules: rules}).Decide(context.Background(), ro); d.Allow {
		t.Errorf("a deny rule beats readOnlyHint: %+v", d)
	}
}
