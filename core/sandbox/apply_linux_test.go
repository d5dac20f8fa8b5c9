package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/core/proc"
)

func TestMain(m *testing.M) {
	// This binary is the reaper of the commands the tests run, as dsh is.
	if len(os.Args) > 1 && os.Args[1] == proc.ReaperArg {
		syscall.Exit(proc.ReaperMain(os.Args[2:], os.Stderr, Setup))
	}
	os.Exit(m.Run())
}

// reap runs script under this binary's reaper with policy p ("" for
// none) and returns its combined output and whether it succeeded.
func reap(t *testing.T, p *Policy, script string) (string, bool) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pol := ""
	if p != nil {
		pol = p.encode()
	}
	out, err := exec.Command(self, proc.ReaperArgv(self, 0, pol, "/bin/bash", "-c", script)[1:]...).CombinedOutput()
	return string(out), err == nil
}

// TestLandlockHidesWithoutNamespaces: with Landlock alone (no mount
// namespace to cover them), a hidden folder and file cannot be read,
// directly or through a symlink, while what is beside them and above
// them still can; without the policy all of it can.
func TestLandlockHidesWithoutNamespaces(t *testing.T) {
	if landlockABI() == 0 {
		t.Skip("no Landlock on this kernel")
	}
	home := outsideTmp(t)
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".ssh/id", "KEY")
	write(".netrc", "NETRC")
	write(".config/dsh/config.json", "CONF")
	write(".config/other/x", "OTHER")
	write("proj/a.txt", "A")
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "proj", "keys")); err != nil {
		t.Fatal(err)
	}
	p := &Policy{Network: true, Writable: []string{filepath.Join(home, "proj")},
		Hidden: clean([]string{filepath.Join(home, ".ssh"), filepath.Join(home, ".netrc"), filepath.Join(home, ".config", "dsh")})}
	for _, tc := range []struct {
		script string
		hidden bool
	}{
		{"cat .ssh/id", true},
		{"cat .netrc", true},
		{"cat .config/dsh/config.json", true},
		{"cat proj/keys/id", true},
		{"cat .config/other/x", false},
		{"cat proj/a.txt", false},
		{"ls . >/dev/null && ls .config >/dev/null", false},
		{"cat /etc/hostname >/dev/null", false},
	} {
		if out, ok := reap(t, nil, "cd "+home+" && "+tc.script); !ok {
			t.Fatalf("%s: fails unconfined too, so the check cannot tell: %s", tc.script, out)
		}
		out, ok := reap(t, p, "cd "+home+" && "+tc.script)
		if ok == tc.hidden {
			t.Errorf("%s: ran=%v under Landlock alone, want hidden=%v: %s", tc.script, ok, tc.hidden, out)
		}
		if tc.hidden && !strings.Contains(out, "Permission denied") {
			t.Errorf("%s: want a readable denial, got %q", tc.script, out)
		}
	}
}

// outsideTmp is a temp folder outside /tmp, which Landlock alone leaves
// writable (and so readable) to every command.
func outsideTmp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "dsh-sandbox-test-")
	if err != nil {
		t.Skipf("no temp folder outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestReadAllowSkipsWaysAndHidden(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".ssh", ".config/dsh", ".config/gh", "proj"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Links beside the way: to a way (it would allow all of ~) and to a
	// hidden place.
	for name, to := range map[string]string{"up": home, "keys": filepath.Join(home, ".ssh")} {
		if err := os.Symlink(to, filepath.Join(home, name)); err != nil {
			t.Fatal(err)
		}
	}
	hidden := clean([]string{filepath.Join(home, ".ssh"), filepath.Join(home, ".config", "dsh"), filepath.Join(home, "missing", "x")})
	home = clean([]string{home})[0]
	dirs, _, ways := readAllow(hidden)
	for _, want := range []string{"/", home, filepath.Join(home, ".config")} {
		if !slices.Contains(ways, want) {
			t.Errorf("ways %v lack %s", ways, want)
		}
	}
	for _, bad := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".config", "dsh"), home} {
		if slices.Contains(dirs, bad) {
			t.Errorf("allowed %s", bad)
		}
	}
	for _, want := range []string{filepath.Join(home, "proj"), filepath.Join(home, ".config", "gh"), "/usr"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("dirs lack %s", want)
		}
	}
}

// BenchmarkReadAllow is what Landlock alone adds to each command to keep
// the secret places of a home unreadable (the reaper builds the rules).
func BenchmarkReadAllow(b *testing.B) {
	home, err := os.UserHomeDir()
	if err != nil {
		b.Skip(err)
	}
	hidden := clean([]string{filepath.Join(home, ".ssh"), filepath.Join(home, ".aws"), filepath.Join(home, ".gnupg"),
		filepath.Join(home, ".config", "dsh"), filepath.Join(home, ".config", "gh"), filepath.Join(home, ".local", "state", "dsh")})
	for b.Loop() {
		readRules(Policy{Hidden: hidden})
	}
}

// TestStandaloneContainsWithoutDsh: the argv Standalone gives, started
// by anyone (an editor's terminal), runs the command in its own PID
// namespace with writes only in the workspace — as dsh's own start would.
func TestStandaloneContainsWithoutDsh(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb := New(Config{Setting: Auto, Network: true, Reaper: self})
	if sb.Level() < Full {
		t.Skipf("this machine cannot contain fully: %s", sb.Notice())
	}
	ws := outsideTmp(t)
	script := `echo in > inside; echo out > ../dsh-standalone-escape; ls /proc | grep -c '^[0-9]'`
	argv, env, err := sb.Standalone(self, Scope{Workspace: ws}, []string{"/bin/bash", "-c", script})
	if err != nil || argv[0] != self || !slices.Contains(env, "TMPDIR=/tmp") {
		t.Fatalf("%v %v %v", argv, env, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = ws, append(os.Environ(), env...)
	out, _ := cmd.CombinedOutput()
	escaped := filepath.Join(filepath.Dir(ws), "dsh-standalone-escape")
	if _, err := os.Stat(escaped); err == nil {
		os.Remove(escaped)
		t.Errorf("wrote outside the workspace: %s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "inside")); string(b) != "in\n" {
		t.Errorf("did not write inside: %s", out)
	}
	// The reapers' processes, bash, ls and grep: a handful, not the host's.
	if n := strings.Fields(string(out)); len(n) == 0 || len(n[len(n)-1]) > 1 {
		t.Errorf("sees the host's processes: %s", out)
	}
	plain, _, _ := New(Config{Setting: Off}).Standalone(self, Scope{Workspace: ws}, []string{"/bin/true"})
	if !slices.Equal(plain, []string{"/bin/true"}) {
		t.Errorf("sandbox off: %v", plain)
	}
}

// TestCoverSkipsWhatCannotBeSeen: a hidden place that is missing, or that
// this user cannot look at, needs no cover and does not fail the setup.
func TestCoverSkipsWhatCannotBeSeen(t *testing.T) {
	if err := cover(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Fatalf("missing: %v", err)
	}
	if isRoot() {
		t.Skip("root can look everywhere")
	}
	locked := t.TempDir()
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	if err := cover(filepath.Join(locked, "x")); err != nil {
		t.Fatalf("unreadable: %v", err)
	}
}

// TestProbeGetsNoEnvironment: the probe's reapers are dumpable, so they
// must not carry dsh's environment (the API key): theirs is empty, not
// inherited, and they enter the namespaces with the machine's policy.
func TestProbeGetsNoEnvironment(t *testing.T) {
	c := probeCommand(Config{Reaper: "/bin/dsh", Hidden: []string{"/h"}, Network: false}, io.Discard)
	if c.Env == nil || len(c.Env) != 0 {
		t.Fatalf("env %v: nil inherits dsh's", c.Env)
	}
	pol := c.Argv[slices.Index(c.Argv, "--policy")+1]
	if p, err := ParsePolicy(pol); err != nil || !p.Enter || p.Network || !slices.Equal(p.Hidden, []string{"/h"}) {
		t.Fatalf("policy %s %v", pol, err)
	}
}
