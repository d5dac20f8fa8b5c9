package permission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{
		{"read-only", ModeReadOnly, false}, {"ask", ModeAsk, false}, {"auto", ModeAuto, false},
		{"full", ModeFull, false}, {" AUTO ", ModeAuto, false}, {"yolo", "", true}, {"", "", true},
		{"workspace-write", ModeAuto, false}, {"danger-full-access", ModeFull, false},
	} {
		got, err := ParseMode(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseMode(%q) = %q, %v", tc.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "want read-only, ask, auto or full") {
			t.Errorf("unclear error: %v", err)
		}
	}
}

func TestCommandPrefix(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"git status -s", "git status"},
		{"  git   status  ", "git status"},
		{"ls -la", "ls"},
		{"go test ./...", "go test"},
		{"npm run build", "npm run"},
		{"python3 x.py", "python3"},
		{"rm -rf /", "rm"},
		{"'git' \"log\" --oneline", "git log"},
		{"make 2>&1", "make"},
		{"git log >/dev/null", "git log"},
		{"git status && rm -rf x", ""},
		{"git status; ls", ""},
		{"ls | wc -l", ""},
		{"echo $(whoami)", ""},
		{"echo `whoami`", ""},
		{"git log > out.txt", ""},
		{"FOO=1 make", ""},
		{"(cd x && make)", ""},
		{"", ""},
	} {
		if got := CommandPrefix(tc.cmd); got != tc.want {
			t.Errorf("CommandPrefix(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd    string
		parts  string
		opaque bool
	}{
		{"a b && c 'd e' || f; g | h & i", "a b|c d e|f|g|h|i", false},
		{"echo \"x; y\" 'a|b'", "echo x; y a|b", false},
		{"echo $(rm -rf x) ok", "rm -rf x|echo $(rm -rf x) ok", true},
		{"echo \"$(rm a)\"", "rm a|echo $(rm a)", true},
		{"cat <(curl x)", "curl x|cat", true},
		{"x 2>err.txt", "x", true},
		{"x &> /dev/null", "x", false},
		{"x >&2", "x", false},
		{"a \\\n b", "a b", false},
		{"ls # rm -rf /", "ls", false},
		{"echo $(unclosed", "unclosed|echo $(unclosed", true},
		{"echo `", "echo `", true},
		{"{ a; }", "a", true},
	} {
		sp := splitCommand(tc.cmd)
		var parts []string
		for _, p := range sp.parts {
			parts = append(parts, strings.Join(p, " "))
		}
		if got := strings.Join(parts, "|"); got != tc.parts || sp.opaque != tc.opaque {
			t.Errorf("splitCommand(%q) = %q opaque=%v, want %q opaque=%v", tc.cmd, got, sp.opaque, tc.parts, tc.opaque)
		}
	}
}

func TestRulesPersistAndMatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "proj", "permissions.json")
	rs, err := LoadRules(path)
	if err != nil || len(rs.List()) != 0 {
		t.Fatalf("missing file: %v %v", rs, err)
	}
	for _, r := range []Rule{
		{Tool: "bash", Pattern: "git", Allow: true},
		{Tool: "bash", Pattern: "git push", Allow: false},
		{Tool: "bash", Pattern: "go test", Allow: true},
		{Tool: "write", Pattern: "**", Allow: true},
		{Tool: "write", Pattern: "secrets/**", Allow: false},
		{Tool: "read", Pattern: "/etc/**", Allow: true},
		{Tool: "subagent", Pattern: "*", Allow: true},
	} {
		if err := rs.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	// A restart: a fresh load sees the same rules.
	rs2, err := LoadRules(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rs2.List(), rs.List()) || len(rs2.List()) != 7 {
		t.Fatalf("reloaded %v\nwant %v", rs2.List(), rs.List())
	}
	ws := "/w"
	bash := func(cmd string) Request {
		return Request{Tool: "bash", Kind: "execute", Command: cmd, Paths: []string{ws}, Workspace: ws}
	}
	file := func(tl string, p string) Request {
		return Request{Tool: tl, Kind: "mutate", Write: true, Paths: []string{p}, Workspace: ws}
	}
	tests := []struct {
		name    string
		req     Request
		matched bool
		allow   bool
		rule    string
	}{
		{"allow prefix", bash("git status -s"), true, true, "allow bash(git)"},
		{"deny beats allow", bash("git push origin main"), true, false, "deny bash(git push)"},
		{"deny inside compound", bash("git status && git push"), true, false, "deny bash(git push)"},
		{"deny inside substitution", bash("echo $(git push)"), true, false, "deny bash(git push)"},
		{"deny through assignment", bash("GIT_X=1 git push"), true, false, "deny bash(git push)"},
		{"compound all allowed", bash("git diff && go test ./..."), true, true, "allow bash(git)"},
		{"compound partly allowed", bash("git diff && rm -rf x"), false, false, ""},
		{"opaque not allowed by prefix", bash("git log > ~/.bashrc"), false, false, ""},
		{"assignment not allowed by prefix", bash("LD_PRELOAD=x git status"), false, false, ""},
		{"word boundary", bash("gitk"), false, false, ""},
		{"no rule", bash("make"), false, false, ""},
		{"file allow", file("write", "/w/src/a.go"), true, true, "allow write(**)"},
		{"file deny beats allow", file("write", "/w/secrets/k"), true, false, "deny write(secrets/**)"},
		{"relative rule not outside", file("write", "/etc/x"), false, false, ""},
		{"absolute rule", Request{Tool: "read", Kind: "read", Paths: []string{"/etc/hosts"}, Workspace: ws}, true, true, "allow read(/etc/**)"},
		{"other tool", file("edit", "/w/src/a.go"), false, false, ""},
		{"tool-wide", Request{Tool: "subagent", Kind: "execute", Workspace: ws}, true, true, "allow subagent(*)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := rs2.Match(tc.req)
			if ok != tc.matched || (ok && (r.Allow != tc.allow || r.String() != tc.rule)) {
				t.Fatalf("Match = %v %v, want matched=%v allow=%v %s", r, ok, tc.matched, tc.allow, tc.rule)
			}
		})
	}
	// The latest answer for a pattern replaces the older one.
	if err := rs2.Add(Rule{Tool: "bash", Pattern: "git push", Allow: true}); err != nil {
		t.Fatal(err)
	}
	if r, _ := rs2.Match(bash("git push")); !r.Allow {
		t.Fatal("replaced rule still denies")
	}
	if n := len(rs2.List()); n != 7 {
		t.Fatalf("%d rules after a replacement", n)
	}
	// No temp or stray files besides the rules and the lock.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		t.Fatalf("files: %v", entries)
	}
}

func TestRulesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage.json":    "{not json",
		"unknown.json":    `{"version":1,"rules":[{"tool":"bash","pattern":"x","allow":true,"extra":1}]}`,
		"empty-rule.json": `{"version":1,"rules":[{"tool":"","pattern":"x","allow":true}]}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadRules(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := LoadRules(""); err == nil {
		t.Error("empty path accepted")
	}
	empty := filepath.Join(dir, "empty.json")
	_ = os.WriteFile(empty, nil, 0o644)
	if rs, err := LoadRules(empty); err != nil || len(rs.List()) != 0 {
		t.Errorf("empty file: %v", err)
	}
	rs, _ := LoadRules(filepath.Join(dir, "ok.json"))
	if err := rs.Add(Rule{Tool: "bash", Pattern: " "}); err == nil {
		t.Error("blank pattern accepted")
	}
}

// Two handles on one file (two sessions, or two processes) never lose each
// other's rules.
func TestRulesConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "permissions.json")
	a, _ := LoadRules(path)
	b, _ := LoadRules(path)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			if err := a.Add(Rule{Tool: "bash", Pattern: fmt.Sprintf("a%d", i), Allow: true}); err != nil {
				t.Error(err)
			}
		}(i)
		go func(i int) {
			defer wg.Done()
			if err := b.Add(Rule{Tool: "bash", Pattern: fmt.Sprintf("b%d", i), Allow: true}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	c, err := LoadRules(path)
	if err != nil || len(c.List()) != 20 {
		t.Fatalf("%d rules, %v", len(c.List()), err)
	}
}

func TestRulesFor(t *testing.T) {
	ws := t.TempDir()
	_ = os.Mkdir(filepath.Join(ws, "src"), 0o755)
	for _, tc := range []struct {
		req   Request
		allow bool
		want  []string
	}{
		{Request{Tool: "bash", Command: "git status -s"}, true, []string{"allow bash(git status)"}},
		{Request{Tool: "bash", Command: "go build && go test ./..."}, true, []string{"allow bash(go build)", "allow bash(go test)"}},
		{Request{Tool: "bash", Command: "go build && go test ./..."}, false, []string{"deny bash(go build && go test ./...)"}},
		{Request{Tool: "bash", Command: "rm -rf build"}, false, []string{"deny bash(rm)"}},
		{Request{Tool: "bash", Command: "echo $(id)"}, true, []string{"allow bash(echo $(id))"}},
		{Request{Tool: "write", Paths: []string{filepath.Join(ws, "src/a.go"), filepath.Join(ws, "src/b.go")}, Workspace: ws}, true, []string{"allow write(src/**)"}},
		{Request{Tool: "write", Paths: []string{filepath.Join(ws, "a.go")}, Workspace: ws}, true, []string{"allow write(**)"}},
		{Request{Tool: "glob", Paths: []string{filepath.Join(ws, "src")}, Workspace: ws}, true, []string{"allow glob(src/**)"}},
		{Request{Tool: "read", Paths: []string{"/etc/passwd"}, Workspace: ws}, false, []string{"deny read(/etc/**)"}},
		{Request{Tool: "subagent"}, true, []string{"allow subagent(*)"}},
	} {
		var got []string
		for _, r := range RulesFor(tc.req, tc.allow) {
			got = append(got, r.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("RulesFor(%+v) = %v, want %v", tc.req, got, tc.want)
		}
	}
}

// testAsker answers from a script and records what it was asked.
type testAsker struct {
	mu     sync.Mutex
	answer Answer
	err    error
	asked  []Request
}

func (a *testAsker) Ask(ctx context.Context, req Request) (Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req)
	return a.answer, a.err
}

func TestGateModes(t *testing.T) {
	ws := t.TempDir()
	in := filepath.Join(ws, "a.go")
	out := "/etc/passwd"
	read := func(p string) Request { return Request{Tool: "read", Kind: "read", Paths: []string{p}, Workspace: ws} }
	write := func(p string) Request {
		return Request{Tool: "write", Kind: "mutate", Write: true, Paths: []string{p}, Workspace: ws}
	}
	bash := Request{Tool: "bash", Kind: "execute", Command: "make", Paths: []string{ws}, Workspace: ws}
	todo := Request{Tool: "todo_write", Kind: "exempt", Workspace: ws}
	sub := Request{Tool: "subagent", Kind: "execute", Workspace: ws}

	const (
		allow = "allow"
		ask   = "ask"
		deny  = "deny"
	)
	tests := []struct {
		mode Mode
		req  Request
		want string
	}{
		{ModeFull, write(out), allow},
		{ModeFull, bash, allow},
		{ModeReadOnly, read(in), allow},
		{ModeReadOnly, read(out), deny},
		{ModeReadOnly, write(in), deny},
		{ModeReadOnly, bash, deny},
		{ModeReadOnly, todo, allow},
		{ModeAsk, read(in), allow},
		{ModeAsk, read(out), ask},
		{ModeAsk, write(in), ask},
		{ModeAsk, bash, ask},
		{ModeAsk, todo, allow},
		{ModeAuto, read(in), allow},
		{ModeAuto, write(in), allow},
		{ModeAuto, bash, allow},
		{ModeAuto, sub, allow},
		{ModeAuto, read(out), ask},
		{ModeAuto, write(out), ask},
		{ModeAuto, todo, allow},
		{"", write(in), ask}, // an unset mode asks
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %s %v", tc.mode, tc.req.Tool, tc.req.Paths), func(t *testing.T) {
			// With someone to ask who allows.
			asker := &testAsker{answer: AllowOnce}
			d := (&Gate{Mode: tc.mode, Asker: asker}).Decide(context.Background(), tc.req)
			asked := len(asker.asked) == 1
			switch tc.want {
			case allow:
				if !d.Allow || asked || d.By != ByMode {
					t.Fatalf("want allowed by mode without asking: %+v asked=%v", d, asked)
				}
			case ask:
				if !d.Allow || !asked || d.By != ByUser {
					t.Fatalf("want asked and allowed: %+v asked=%v", d, asked)
				}
				// With no one to ask: refused, with a reason.
				for _, g := range []*Gate{{Mode: tc.mode}, {Mode: tc.mode, Asker: &testAsker{err: ErrNoAsker}}} {
					d := g.Decide(context.Background(), tc.req)
					if d.Allow || d.By != ByNoAsker || !strings.HasPrefix(d.Reason, "permission denied: ") || !strings.HasSuffix(d.Reason, "and no one could be asked") {
						t.Fatalf("no asker: %+v", d)
					}
				}
			case deny:
				if d.Allow || asked || d.By != ByMode || !strings.HasPrefix(d.Reason, "permission denied: ") {
					t.Fatalf("want refused by mode: %+v asked=%v", d, asked)
				}
			}
		})
	}
}

func TestGateReasons(t *testing.T) {
	g := &Gate{Mode: ModeAuto}
	d := g.Decide(context.Background(), Request{Tool: "write", Kind: "mutate", Write: true, Paths: []string{"/etc/passwd"}, Workspace: "/w"})
	if want := "permission denied: writing /etc/passwd is outside the workspace /w and no one could be asked"; d.Reason != want {
		t.Fatalf("reason %q\nwant   %q", d.Reason, want)
	}
	d = (&Gate{Mode: ModeAsk}).Decide(context.Background(), Request{Tool: "bash", Kind: "execute", Command: "rm -rf x", Paths: []string{"/w"}, Workspace: "/w"})
	if want := "permission denied: running `rm -rf x` needs approval in ask mode and no one could be asked"; d.Reason != want {
		t.Fatalf("reason %q", d.Reason)
	}
	d = (&Gate{Mode: ModeReadOnly}).Decide(context.Background(), Request{Tool: "edit", Kind: "mutate", Write: true, Paths: []string{"/w/a.go"}, Workspace: "/w"})
	if want := "permission denied: the session is read-only; writing /w/a.go is not allowed"; d.Reason != want {
		t.Fatalf("reason %q", d.Reason)
	}
	d = (&Gate{Mode: ModeAsk, Asker: &testAsker{answer: RejectOnce}}).Decide(context.Background(), Request{Tool: "edit", Kind: "mutate", Write: true, Paths: []string{"/w/a.go"}, Workspace: "/w"})
	if want := "permission denied: the user refused writing /w/a.go"; d.Reason != want || d.By != ByUser {
		t.Fatalf("reason %q", d.Reason)
	}
	d = (&Gate{Mode: ModeAsk, Asker: &testAsker{err: errors.New("editor went away")}}).Decide(context.Background(), Request{Tool: "bash", Kind: "execute", Command: "ls", Workspace: "/w"})
	if d.Allow || !strings.Contains(d.Reason, "asking for permission failed: editor went away") {
		t.Fatalf("asker failure: %+v", d)
	}
	d = (&Gate{Mode: ModeAsk, Asker: &testAsker{answer: "maybe"}}).Decide(context.Background(), Request{Tool: "bash", Kind: "execute", Command: "ls", Workspace: "/w"})
	if d.Allow || !strings.Contains(d.Reason, `unknown answer "maybe"`) {
		t.Fatalf("unknown answer: %+v", d)
	}
	if d := (&Gate{Mode: "bogus"}).Decide(context.Background(), Request{Tool: "bash", Kind: "execute", Command: "ls", Workspace: "/w"}); d.Allow {
		t.Fatal("unknown mode allowed")
	}
}

func TestGateCancel(t *testing.T) {
	req := Request{CallID: "c9", Tool: "bash", Kind: "execute", Command: "ls", Workspace: "/w"}
	d := (&Gate{Mode: ModeAsk, Asker: &testAsker{answer: Cancelled}}).Decide(context.Background(), req)
	if !d.Cancelled || d.Allow {
		t.Fatalf("cancelled answer: %+v", d)
	}
	if p := d.Payload(req); p.Decision != "cancelled" || p.CallID != "c9" || p.Tool != "bash" {
		t.Fatalf("payload %+v", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := (&Gate{Mode: ModeFull}).Decide(ctx, req); !d.Cancelled {
		t.Fatalf("cancelled ctx: %+v", d)
	}
	ctx, cancel = context.WithCancel(context.Background())
	asker := askerFunc(func(ctx context.Context, _ Request) (Answer, error) {
		cancel()
		return "", ctx.Err()
	})
	if d := (&Gate{Mode: ModeAsk, Asker: asker}).Decide(ctx, req); !d.Cancelled {
		t.Fatalf("cancelled while asking: %+v", d)
	}
}

type askerFunc func(context.Context, Request) (Answer, error)

func (f askerFunc) Ask(ctx context.Context, r Request) (Answer, error) { return f(ctx, r) }

// "Always" answers become rules that decide later calls, also after a
// restart, and an explicit deny beats an allow.
func TestGateAlwaysAnswers(t *testing.T) {
	ws := t.TempDir()
	path := filepath.Join(t.TempDir(), "proj", "permissions.json")
	rules, err := LoadRules(path)
	if err != nil {
		t.Fatal(err)
	}
	bash := func(cmd string) Request {
		return Request{Tool: "bash", Kind: "execute", Command: cmd, Paths: []string{ws}, Workspace: ws}
	}
	asker := &testAsker{answer: AllowAlways}
	g := &Gate{Mode: ModeAsk, Rules: rules, Asker: asker}
	d := g.Decide(context.Background(), bash("git status -s"))
	if !d.Allow || d.By != ByUser || d.Rule != "allow bash(git status)" {
		t.Fatalf("allow always: %+v", d)
	}
	asker.answer = RejectAlways
	d = g.Decide(context.Background(), bash("rm -rf build"))
	if d.Allow || d.Rule != "deny bash(rm)" || !strings.Contains(d.Reason, "will refuse it from now on") {
		t.Fatalf("reject always: %+v", d)
	}
	outside := Request{Tool: "write", Kind: "mutate", Write: true, Paths: []string{"/etc/motd"}, Workspace: ws}
	d = (&Gate{Mode: ModeAuto, Rules: rules, Asker: asker}).Decide(context.Background(), outside)
	if d.Allow || d.Rule != "deny write(/etc/**)" {
		t.Fatalf("reject always outside: %+v", d)
	}

	// Restart: new rules handle, nobody to ask.
	reloaded, err := LoadRules(path)
	if err != nil {
		t.Fatal(err)
	}
	g2 := &Gate{Mode: ModeAsk, Rules: reloaded}
	if d := g2.Decide(context.Background(), bash("git status --short")); !d.Allow || d.By != ByRule || d.Rule != "allow bash(git status)" {
		t.Fatalf("remembered allow: %+v", d)
	}
	if d := g2.Decide(context.Background(), bash("git push")); d.Allow || d.By != ByNoAsker {
		t.Fatalf("unrelated command: %+v", d)
	}
	// The deny rule refuses even in auto mode, where bash is otherwise free.
	g3 := &Gate{Mode: ModeAuto, Rules: reloaded}
	if d := g3.Decide(context.Background(), bash("rm x")); d.Allow || d.By != ByRule || !strings.Contains(d.Reason, "refused by the rule deny bash(rm)") {
		t.Fatalf("remembered deny: %+v", d)
	}
	if d := g3.Decide(context.Background(), bash("git status && rm x")); d.Allow || d.By != ByRule {
		t.Fatalf("deny in compound: %+v", d)
	}
	if d := g3.Decide(context.Background(), outside); d.Allow || d.By != ByRule {
		t.Fatalf("remembered outside deny: %+v", d)
	}
	// Deny beats allow for the same call.
	if err := reloaded.Add(Rule{Tool: "bash", Pattern: "rm -rf", Allow: true}); err != nil {
		t.Fatal(err)
	}
	if d := g2.Decide(context.Background(), bash("rm -rf x")); d.Allow {
		t.Fatalf("allow beat deny: %+v", d)
	}
	// Full mode has no checks at all.
	if d := (&Gate{Mode: ModeFull, Rules: reloaded}).Decide(context.Background(), bash("rm x")); !d.Allow {
		t.Fatalf("full mode: %+v", d)
	}
	// Read-only ignores allow rules for writes.
	if err := reloaded.Add(Rule{Tool: "write", Pattern: "**", Allow: true}); err != nil {
		t.Fatal(err)
	}
	w := Request{Tool: "write", Kind: "mutate", Write: true, Paths: []string{filepath.Join(ws, "a")}, Workspace: ws}
	if d := (&Gate{Mode: ModeReadOnly, Rules: reloaded}).Decide(context.Background(), w); d.Allow {
		t.Fatalf("read-only allowed a write by rule: %+v", d)
	}
	if d := (&Gate{Mode: ModeAsk, Rules: reloaded}).Decide(context.Background(), w); !d.Allow || d.By != ByRule {
		t.Fatalf("ask mode write by rule: %+v", d)
	}
	if p := d.Payload(w); p.Decision != "deny" {
		t.Fatalf("payload %+v", p)
	}
}

// A symlink inside the workspace pointing out is outside: the tool layer
// resolves paths, and the gate resolves the workspace itself.
func TestGateWorkspaceThroughSymlink(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	req := Request{Tool: "write", Kind: "mutate", Write: true, Paths: []string{filepath.Join(real, "a")}, Workspace: link}
	if d := (&Gate{Mode: ModeAuto}).Decide(context.Background(), req); !d.Allow {
		t.Fatalf("workspace named via a symlink: %+v", d)
	}
}
