package permission

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// denyGate is an auto-mode gate (bash runs freely) whose rules hold the
// deny that reject_always on `rm victim.txt` creates, a deny of `git push`
// and an allow of `git status`.
func denyGate(t *testing.T, asker Asker) *Gate {
	t.Helper()
	rules, err := LoadRules(filepath.Join(t.TempDir(), "permissions.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(RulesFor(Request{Tool: "bash", Command: "rm victim.txt"}, false),
		Rule{Tool: "bash", Pattern: "git push"},
		Rule{Tool: "bash", Pattern: "git status", Allow: true}) {
		if err := rules.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if got := rules.List()[0].String(); got != "deny bash(rm)" {
		t.Fatalf("reject_always on rm victim.txt made %s", got)
	}
	return &Gate{Mode: ModeAuto, Rules: rules, Asker: asker}
}

// TestDenyHoldsThroughEverySpelling: a deny rule on a command refuses it
// however the line spells it (ARCHITECTURE.md §6).
func TestDenyHoldsThroughEverySpelling(t *testing.T) {
	g := denyGate(t, nil)
	ws := t.TempDir()
	for _, cmd := range []string{
		`rm victim.txt`,
		`\rm victim.txt`,
		`r''m victim.txt`,
		`"rm" victim.txt`,
		`/bin/rm victim.txt`,
		`/usr/bin/rm -f victim.txt`,
		`../../bin/rm victim.txt`,
		`command rm victim.txt`,
		`command -p rm victim.txt`,
		`builtin rm victim.txt`,
		`exec rm victim.txt`,
		`exec -a name rm victim.txt`,
		`env rm victim.txt`,
		`env -i PATH=/bin rm victim.txt`,
		`env -u HOME -C /tmp rm victim.txt`,
		`/usr/bin/env -S 'rm victim.txt'`,
		`env --split-string='rm victim.txt'`,
		`FOO=1 BAR=2 rm victim.txt`,
		`sudo rm victim.txt`,
		`sudo -u root -E rm victim.txt`,
		`sudo -- rm victim.txt`,
		`doas -u root rm victim.txt`,
		`nice rm victim.txt`,
		`nice -n 10 rm victim.txt`,
		`nice -5 rm victim.txt`,
		`nohup rm victim.txt`,
		`setsid rm victim.txt`,
		`time rm victim.txt`,
		`stdbuf -o0 rm victim.txt`,
		`timeout 5 rm victim.txt`,
		`timeout -s KILL -k 1 5s rm victim.txt`,
		`timeout --signal=TERM 5 rm victim.txt`,
		`echo victim.txt | xargs rm`,
		`ls | xargs -0 -n 1 -I{} rm {}`,
		`ls | xargs -P 4 rm -f`,
		`bash -c 'rm victim.txt'`,
		`sh -c "rm victim.txt"`,
		`bash -lc 'cd /tmp && rm victim.txt'`,
		`bash -o pipefail -c 'rm victim.txt'`,
		`/bin/sh -c 'sudo /bin/rm victim.txt'`,
		`sh -c "bash -c 'env rm victim.txt'"`,
		`eval rm victim.txt`,
		`eval "rm victim.txt"`,
		`find . -name victim.txt -exec rm {} \;`,
		`find . -execdir /bin/rm {} +`,
		`busybox rm victim.txt`,
		`true; rm victim.txt`,
		`true && rm victim.txt`,
		`false || rm victim.txt`,
		`echo x | rm victim.txt`,
		`echo $(rm victim.txt)`,
		"echo `rm victim.txt`",
		`echo "$(rm victim.txt)"`,
		`(rm victim.txt)`,
		`{ rm victim.txt; }`,
		`f() { rm "$@"; }; f victim.txt`,
		"true\nrm victim.txt",
		`git status && git push`,
		`sudo git push origin main`,
		`bash -c 'git push'`,
		`/usr/bin/git push`,
		`git -C /repo push origin main`,
		`git --no-pager -c core.x=y push`,
		`sh -c 'rm victim.txt`, // unbalanced, yet plainly rm
	} {
		d := g.Decide(context.Background(), Request{Tool: "bash", Kind: "execute", Command: cmd, Paths: []string{ws}, Workspace: ws})
		if d.Allow || d.By != ByRule {
			t.Errorf("%q: %+v, want refused by the deny rule", cmd, d)
		}
	}
}

// TestUnsureLineMentioningADeniedCommandAsks: a line whose commands cannot
// all be seen, and that names a denied command, is asked about even in
// auto mode, and refused when no one can be asked; an "allow always"
// answer allows it once and remembers nothing.
func TestUnsureLineMentioningADeniedCommandAsks(t *testing.T) {
	ws := t.TempDir()
	req := func(cmd string) Request {
		return Request{Tool: "bash", Kind: "execute", Command: cmd, Paths: []string{ws}, Workspace: ws}
	}
	unsure := []string{
		`X=rm; $X victim.txt`,
		`$(echo rm) victim.txt`,
		`echo rm victim.txt | sh`,
		`echo 'rm victim.txt' > s.sh; bash s.sh`,
		`echo rm victim.txt | bash -s`,
		`source ./helpers.sh rm victim.txt`,
		`/bin/r? victim.txt; echo rm`,
		`echo "rm victim.txt`, // unbalanced: the shell would not run what we read
		`X=git; $X push`,
	}
	noAsker := denyGate(t, nil)
	for _, cmd := range unsure {
		d := noAsker.Decide(context.Background(), req(cmd))
		if d.Allow || d.By != ByNoAsker || !strings.Contains(d.Reason, "cannot be analysed with confidence") {
			t.Errorf("%q with no one to ask: %+v", cmd, d)
		}
	}
	asker := &testAsker{answer: AllowAlways}
	g := denyGate(t, asker)
	before := len(g.Rules.List())
	for _, cmd := range unsure {
		if d := g.Decide(context.Background(), req(cmd)); !d.Allow || d.By != ByUser || d.Rule != "" {
			t.Errorf("%q allowed by the user: %+v", cmd, d)
		}
	}
	if len(asker.asked) != len(unsure) || len(g.Rules.List()) != before {
		t.Fatalf("asked %d times (want %d); %d rules (want %d)", len(asker.asked), len(unsure), len(g.Rules.List()), before)
	}

	// Lines that can be analysed, or do not name a denied command, are the
	// mode's to decide (auto: allowed).
	for _, cmd := range []string{
		`echo rm`, `rmdir build`, `make format`, `ls -l | grep rm`, `git status`, `git log --grep push`, `git -C push log`,
		`X=ls; $X -l`, `bash build.sh`, `echo "$HOME"`, `sh -c 'ls'`,
	} {
		if d := noAsker.Decide(context.Background(), req(cmd)); !d.Allow {
			t.Errorf("%q: %+v, want allowed by auto mode", cmd, d)
		}
	}
}

// TestAllowRulesStayNarrow: an allow rule covers the command it names as
// written, not the same command behind a wrapper, a shell or a path.
func TestAllowRulesStayNarrow(t *testing.T) {
	g := denyGate(t, nil)
	g.Mode = ModeAsk
	ws := t.TempDir()
	req := func(cmd string) Request {
		return Request{Tool: "bash", Kind: "execute", Command: cmd, Paths: []string{ws}, Workspace: ws}
	}
	if d := g.Decide(context.Background(), req("git status -s")); !d.Allow || d.By != ByRule {
		t.Fatalf("git status -s: %+v", d)
	}
	for _, cmd := range []string{
		`sudo git status`, `env git status`, `bash -c 'git status'`, `/usr/bin/git status`,
		`git status; ls`, `GIT_DIR=/x git status`, `git status > out.txt`, `xargs git status`,
	} {
		if d := g.Decide(context.Background(), req(cmd)); d.Allow {
			t.Errorf("%q allowed by %s: the allow rule bash(git status) grew", cmd, d.Rule)
		}
	}
}

// FuzzAnalyse: any line is analysed without panicking or looping, and a
// line that runs rm directly is always found to.
func FuzzAnalyse(f *testing.F) {
	for _, s := range []string{`sudo -u x env -S 'bash -c "rm x"'`, `find . -exec rm {} +`, "eval `x`", `sh -c 'a`, `$(`, `xargs -I`, `timeout`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := analyse(s)
		_ = mentions(s, "rm")
		if strings.ContainsAny(s, "'\"\\`$(){}|;&<>#\n=") {
			return
		}
		// Words as the shell splits them: on blanks only (a form feed or
		// another Unicode space is part of a word, so "rm\f" is not rm).
		blank := func(r rune) bool { return r == ' ' || r == '\t' }
		if w := strings.FieldsFunc(s, blank); len(w) > 0 && w[0] == "rm" && !a.denies("rm") {
			t.Fatalf("%q runs rm but the analysis found %v", s, a.cmds)
		}
	})
}
