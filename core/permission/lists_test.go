package permission

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/tool"
)

func TestParseToolList(t *testing.T) {
	rs, err := ParseToolList(`Bash(git log:*), read  "x"`+"\t"+`mcp__memory__create_entities,bash(npm run test *) edit(src/**, docs/**)`, true)
	if err == nil {
		t.Fatalf("a quoted name must be refused: %v", rs)
	}
	rs, err = ParseToolList("Bash(git log:*), read  mcp__memory__create_entities,bash(npm run test *)\nedit(src/**)", true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{{"bash", "git log", true}, {"read", "*", true}, {"mcp__memory__create_entities", "*", true},
		{"bash", "npm run test", true}, {"edit", "src/**", true}}
	if !slices.Equal(rs, want) {
		t.Fatalf("got %v\nwant %v", rs, want)
	}
	for _, bad := range []string{"bash(", "bash()", "bash(x) y)", "(x)"} {
		if _, err := ParseToolList(bad, false); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestListsWarnOfEntriesThatMatchNoTool(t *testing.T) {
	allow, _ := ParseToolList("Bash(git log) WebFetch multiEdit mcp__mem__create mcp__late__x nosuch", true)
	deny, _ := ParseToolList("mcp__gone__y", false)
	if got := []string{allow[0].Tool, allow[1].Tool, allow[2].Tool}; !slices.Equal(got, []string{"bash", "web_fetch", "multi_edit"}) {
		t.Fatalf("built-ins written another way: %v", got)
	}
	names := []string{"bash", "multi_edit", "read", "web_fetch", "mcp__mem__create"}
	warns := Lists{Allow: allow, Deny: deny}.Warnings(names, func(s string) bool { return s == "late" })
	if len(warns) != 2 || !strings.Contains(warns[0], `allowed-tools entry "nosuch" matches no tool`) || !strings.Contains(warns[1], `disallowed-tools entry "mcp__gone__y"`) {
		t.Fatalf("warnings: %q", warns)
	}
}

// The lists work in every mode: a disallowed call is refused even in full
// mode; an allowed one runs without anyone to ask, even read-only; a
// remembered deny still wins over the allow list.
func TestListsDecideInEveryMode(t *testing.T) {
	allow, _ := ParseToolList("mcp__memory__create_entities bash(git log)", true)
	deny, _ := ParseToolList("bash(rm) web_fetch", false)
	lists := Lists{Allow: allow, Deny: deny}
	write := Request{Tool: "mcp__memory__create_entities", Kind: string(tool.KindMCP), Workspace: "/w"}
	gitLog := Request{Tool: "bash", Kind: string(tool.KindExecute), Command: "git log -3", Paths: []string{"/w"}, Workspace: "/w"}
	rm := Request{Tool: "bash", Kind: string(tool.KindExecute), Command: "cd x && rm -rf y", Paths: []string{"/w"}, Workspace: "/w"}
	fetch := Request{Tool: "web_fetch", Kind: string(tool.KindRead), Workspace: "/w"}
	for _, mode := range []Mode{ModeReadOnly, ModeAsk, ModeAuto, ModeFull} {
		g := Gate{Mode: mode, Lists: lists}
		for _, c := range []struct {
			req   Request
			allow bool
		}{{write, true}, {gitLog, true}, {rm, false}, {fetch, false}} {
			d := g.Decide(context.Background(), c.req)
			if d.Allow != c.allow {
				t.Errorf("%s: %s %q: allow %v, want %v (%s)", mode, c.req.Tool, c.req.Command, d.Allow, c.allow, d.Reason)
			}
		}
	}
	d := (&Gate{Mode: ModeAuto, Lists: lists}).Decide(context.Background(), rm)
	if !strings.Contains(d.Reason, "disallowed-tools") {
		t.Errorf("the refusal must name the list: %q", d.Reason)
	}
	rules, err := LoadRules(t.TempDir() + "/permissions.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.Add(Rule{Tool: "mcp__memory__create_entities", Pattern: "*"}); err != nil {
		t.Fatal(err)
	}
	if d := (&Gate{Mode: ModeAuto, Rules: rules, Lists: lists}).Decide(context.Background(), write); d.Allow {
		t.Errorf("a remembered deny must beat the allow list: %+v", d)
	}
	noList := Gate{Mode: ModeAuto}
	if d := noList.Decide(context.Background(), write); d.Allow {
		t.Errorf("without the list an unmarked MCP tool needs an answer: %+v", d)
	}
}

// Withholds: only an entry naming the tool whole withholds it; a pattern
// entry refuses some calls, at call time, and leaves the tool offered.
func TestListsWithholds(t *testing.T) {
	deny, err := ParseToolList("Bash, write(secret/**), mcp__s__t", false)
	if err != nil {
		t.Fatal(err)
	}
	l := Lists{Deny: deny}
	for name, want := range map[string]bool{"bash": true, "mcp__s__t": true, "write": false, "read": false} {
		if got := l.Withholds(name); got != want {
			t.Errorf("Withholds(%q) = %v, want %v", name, got, want)
		}
	}
	if (Lists{Allow: deny}).Withholds("bash") {
		t.Error("an allow entry withholds nothing")
	}
}
