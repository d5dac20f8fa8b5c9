package e2e

import (
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// escape is one attempt to get out of the sandbox: a bash command, and
// how to tell from the host whether it got out. rootOnly attempts work
// unconfined only when dsh runs as root (a non-root dsh is non-dumpable:
// its environ is unreadable to its commands even unconfined).
type escape struct {
	name     string
	command  string
	escaped  func(t *testing.T) bool
	rootOnly bool
}

// sandboxUser is whom dsh runs as in a sandbox test: root, as CI and
// containers run it, or an unprivileged uid, as every editor user does,
// whose reaper makes the namespaces through a user namespace.
type sandboxUser struct {
	name string
	as   *syscall.Credential // nil: root, as the test runs
}

// forEachSandboxUser runs f as root and as nobody. The test itself must
// be root (CI is): it makes the worlds, a setuid binary and chowns them.
func forEachSandboxUser(t *testing.T, f func(t *testing.T, u sandboxUser)) {
	if os.Geteuid() != 0 {
		t.Skip("the escape suite runs as root (CI does): it runs dsh as root and as nobody, and makes a setuid binary")
	}
	for _, u := range []sandboxUser{{"root", nil}, {"nobody", &syscall.Credential{Uid: 65534, Gid: 65534}}} {
		t.Run(u.name, func(t *testing.T) { f(t, u) })
	}
}

// sandboxWorld is a workspace with things outside it to reach for: a
// folder beside it, a secret key in ~/.ssh, another session's log, a
// setuid binary, and dsh holding an API key in its environment.
type sandboxWorld struct {
	*world
	srv             *modeltest.Server
	base, outside   string
	key, otherLog   string
	extra           string // hidden by the config file
	apiKey, suidBin string
	// suidUID is the euid the setuid binary gives unconfined: nobody's
	// for a root dsh, root's for nobody's.
	suidUID string
}

func newSandboxWorld(t *testing.T, u sandboxUser) *sandboxWorld {
	t.Helper()
	if u.as != nil {
		needUserNamespaces(t, u)
	}
	// Outside /tmp, which a contained command sees as an empty tmpfs: so
	// each refusal here is the sandbox's rule, not that private /tmp.
	if fi, err := os.Stat("/var/tmp"); err == nil && fi.IsDir() {
		t.Setenv("TMPDIR", "/var/tmp")
	}
	srv := modeltest.New(t)
	sw := &sandboxWorld{srv: srv, apiKey: "sk-test-SANDBOX-MARKER"}
	sw.world = newWorld(t, "DSH_PROVIDER=deepseek-official", "DEEPSEEK_BASE_URL="+srv.URL, "DEEPSEEK_API_KEY="+sw.apiKey)
	sw.As = u.as
	sw.base = filepath.Dir(sw.Cwd)
	sw.outside = filepath.Join(sw.base, "outside")
	must(t, os.MkdirAll(sw.outside, 0o755))
	must(t, os.WriteFile(filepath.Join(sw.outside, "victim"), []byte("original\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(sw.Home, ".ssh"), 0o700))
	sw.key = filepath.Join(sw.Home, ".ssh", "id_ed25519")
	must(t, os.WriteFile(sw.key, []byte("PRIVATE-KEY-MARKER\n"), 0o600))
	sw.otherLog = filepath.Join(sw.Root, "other-project", "session-other", "session.jsonl")
	must(t, os.MkdirAll(filepath.Dir(sw.otherLog), 0o755))
	must(t, os.WriteFile(sw.otherLog, []byte(`{"secret":"OTHER-SESSION-MARKER"}`+"\n"), 0o644))
	// A secret place of the config's own (sandboxHidePaths).
	sw.extra = filepath.Join(sw.base, "extra-secret")
	must(t, os.MkdirAll(sw.extra, 0o755))
	must(t, os.WriteFile(filepath.Join(sw.extra, "token"), []byte("EXTRA-MARKER\n"), 0o644))
	cfg := filepath.Join(sw.base, "config.json")
	must(t, os.WriteFile(cfg, []byte(`{"sandboxHidePaths": ["`+sw.extra+`"]}`), 0o644))
	sw.Env = append(sw.Env, "DSH_CONFIG="+cfg)
	must(t, os.WriteFile(filepath.Join(sw.Cwd, "a.txt"), []byte("mine\n"), 0o644))
	must(t, os.Symlink(sw.outside, filepath.Join(sw.Cwd, "out")))
	if u.as != nil {
		giveTo(t, sw.base, u.as)
	}
	// A setuid copy of id owned by someone else: run unconfined, it
	// reports that owner's euid; under no_new_privs (and, in a user
	// namespace, for an owner not mapped there) the bit does nothing.
	owner := 65534
	if u.as != nil {
		owner = 0
	}
	sw.suidUID = strconv.Itoa(owner)
	sw.suidBin = filepath.Join(sw.base, "suid-id")
	idBin, err := exec.LookPath("id")
	must(t, err)
	b, err := os.ReadFile(idBin)
	must(t, err)
	must(t, os.WriteFile(sw.suidBin, b, 0o755))
	must(t, os.Chown(sw.suidBin, owner, owner))
	must(t, syscall.Chmod(sw.suidBin, 0o4755)) // os.Chmod would drop the raw setuid bit
	return sw
}

// giveTo makes base's tree the user's and its parents (test temp dirs,
// 0700) passable, and the binary's folder too.
func giveTo(t *testing.T, base string, as *syscall.Credential) {
	t.Helper()
	must(t, filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(as.Uid), int(as.Gid))
	}))
	for d := filepath.Dir(base); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		must(t, os.Chmod(d, 0o755))
	}
	must(t, os.Chmod(filepath.Dir(dshBin), 0o755))
}

// needUserNamespaces skips where the kernel refuses the unprivileged
// user namespaces a non-root dsh contains with: the reaper is run once as
// the user with a policy that enters them.
func needUserNamespaces(t *testing.T, u sandboxUser) {
	t.Helper()
	must(t, os.Chmod(filepath.Dir(dshBin), 0o755))
	cmd := exec.Command(dshBin, "__reap", "--policy", `{"enter":true,"network":true}`, "--", "/bin/true")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.as}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Skipf("%s cannot run the binary under test (%v): run the tests with TMPDIR in a folder others may pass", u.name, err)
	}
	if err != nil {
		t.Skipf("this kernel refuses user namespaces to an unprivileged user (sysctl, AppArmor or seccomp), so a non-root dsh gets Landlock alone here: %v %s", err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (sw *sandboxWorld) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(sw.Cwd, name))
	return string(b)
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

func (sw *sandboxWorld) escapes(t *testing.T) []escape {
	u, err := url.Parse(sw.srv.URL)
	must(t, err)
	port := u.Port()
	return []escape{
		{"write the workspace's parent", `echo x > ../escaped-parent`,
			func(*testing.T) bool { return exists(filepath.Join(sw.base, "escaped-parent")) }, false},
		{"write through a symlink out", `echo x > out/via-symlink`,
			func(*testing.T) bool { return exists(filepath.Join(sw.outside, "via-symlink")) }, false},
		{"write through /proc/self/root", `echo x > /proc/self/root` + sw.outside + `/via-proc-root`,
			func(*testing.T) bool { return exists(filepath.Join(sw.outside, "via-proc-root")) }, false},
		{"write through a hard link made inside", `ln ` + sw.outside + `/victim hardlink && echo pwned >> hardlink`,
			func(*testing.T) bool {
				b, _ := os.ReadFile(filepath.Join(sw.outside, "victim"))
				return strings.Contains(string(b), "pwned")
			}, false},
		{"mv a file out", `mv a.txt ` + sw.outside + `/moved.txt`,
			func(*testing.T) bool { return exists(filepath.Join(sw.outside, "moved.txt")) }, false},
		{"read ~/.ssh", `cat ~/.ssh/id_* > leak-ssh`,
			func(*testing.T) bool { return strings.Contains(sw.read("leak-ssh"), "PRIVATE-KEY-MARKER") }, false},
		{"read another session's log", `cat ` + sw.otherLog + ` > leak-log`,
			func(*testing.T) bool { return strings.Contains(sw.read("leak-log"), "OTHER-SESSION-MARKER") }, false},
		{"read a place the config hides", `cat ` + sw.extra + `/token > leak-extra`,
			func(*testing.T) bool { return strings.Contains(sw.read("leak-extra"), "EXTRA-MARKER") }, false},
		{"read dsh's environ", `cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c SANDBOX-MARKER > leak-env; true`,
			func(*testing.T) bool {
				return strings.TrimSpace(sw.read("leak-env")) != "0" && sw.read("leak-env") != ""
			}, true},
		// The [o] keeps the pattern from matching this command's own line.
		{"see dsh's process", `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done | grep -c 'permission-m[o]de' > see-dsh; true`,
			func(*testing.T) bool {
				return strings.TrimSpace(sw.read("see-dsh")) != "0" && sw.read("see-dsh") != ""
			}, false},
		{"connect with the network off", `bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + port + `' && echo connected > net`,
			func(*testing.T) bool { return strings.Contains(sw.read("net"), "connected") }, false},
		{"gain privileges through a setuid binary", sw.suidBin + ` -u > suid`,
			func(*testing.T) bool { return strings.TrimSpace(sw.read("suid")) == sw.suidUID }, false},
	}
}

// runEscapes runs every attempt as one bash call of one dsh run.
func (sw *sandboxWorld) runEscapes(t *testing.T, task string, es []escape, env ...string) result {
	t.Helper()
	// A control first: the sandboxed run must run commands (a refused
	// one would "fail" every escape).
	calls := []modeltest.Call{bashCall(t, "call_control", `echo ran > ran`)}
	for i, e := range es {
		calls = append(calls, bashCall(t, "call_"+string(rune('a'+i)), e.command))
	}
	sw.srv.Enqueue(modeltest.ToolCallsReply("try", calls...), modeltest.TextReply("done"))
	saved := sw.Env
	sw.Env = append(append([]string(nil), sw.Env...), env...)
	defer func() { sw.Env = saved }()
	return sw.run(nil, "run", "--permission-mode", "auto", task)
}

// TestSandboxEscapes: each escape attempt of issue #19 fails under the
// sandbox and works with sandbox off — so each check can tell — with dsh
// running as root and as an unprivileged user.
func TestSandboxEscapes(t *testing.T) { forEachSandboxUser(t, testSandboxEscapes) }

func testSandboxEscapes(t *testing.T, u sandboxUser) {
	sw := newSandboxWorld(t, u)
	es := sw.escapes(t)
	r := sw.runEscapes(t, "escape unconfined", es, "DSH_SANDBOX=off")
	if r.Code != 0 {
		t.Fatalf("unconfined run: %d\n%s", r.Code, r.Stderr)
	}
	for _, e := range es {
		if e.rootOnly && u.as != nil {
			if e.escaped(t) {
				t.Errorf("%s: worked unconfined for a non-root dsh, which is non-dumpable", e.name)
			}
			continue
		}
		if !e.escaped(t) {
			t.Errorf("%s: did not work unconfined either, so the sandboxed check cannot tell (suid=%q)", e.name, sw.read("suid"))
		}
	}
	// Undo what the unconfined run did.
	for _, p := range []string{filepath.Join(sw.base, "escaped-parent"), filepath.Join(sw.outside, "via-symlink"),
		filepath.Join(sw.outside, "via-proc-root"), filepath.Join(sw.Cwd, "hardlink")} {
		os.Remove(p)
	}
	must(t, os.WriteFile(filepath.Join(sw.outside, "victim"), []byte("original\n"), 0o644))
	must(t, os.Rename(filepath.Join(sw.outside, "moved.txt"), filepath.Join(sw.Cwd, "a.txt")))
	for _, f := range []string{"leak-ssh", "leak-log", "leak-extra", "leak-env", "see-dsh", "net", "suid"} {
		os.Remove(filepath.Join(sw.Cwd, f))
	}

	os.Remove(filepath.Join(sw.Cwd, "ran"))
	r = sw.runEscapes(t, "escape the sandbox", es, "DSH_SANDBOX=required", "DSH_SANDBOX_NETWORK=false")
	if r.Code != 0 || sw.read("ran") != "ran\n" {
		t.Fatalf("sandboxed run: %d, control command ran: %q\n%s", r.Code, sw.read("ran"), r.Stderr)
	}
	for _, e := range es {
		if e.escaped(t) {
			t.Errorf("%s: escaped the sandbox", e.name)
		}
	}
}

// TestSandboxCannotKillDsh: a command that finds dsh's pid (its reaper's
// parent) and SIGKILLs it ends dsh unconfined; sandboxed, dsh is not
// visible and the run completes.
func TestSandboxCannotKillDsh(t *testing.T) { forEachSandboxUser(t, testSandboxCannotKillDsh) }

func testSandboxCannotKillDsh(t *testing.T, u sandboxUser) {
	sw := newSandboxWorld(t, u)
	kill := `P=$(awk '{print $4}' /proc/$PPID/stat); [ "$P" -gt 1 ] && kill -9 "$P"; echo tried`
	for _, tc := range []struct {
		setting string
		killed  bool
	}{{"off", true}, {"required", false}} {
		sw.srv.Enqueue(modeltest.ToolCallsReply("kill", bashCall(t, "call_kill", kill)), modeltest.TextReply("still here"))
		saved := sw.Env
		sw.Env = append(append([]string(nil), sw.Env...), "DSH_SANDBOX="+tc.setting)
		r := sw.run(nil, "run", "kill the parent with sandbox "+tc.setting)
		sw.Env = saved
		if killed := r.Code == 128+int(syscall.SIGKILL) || r.Code == -1; killed != tc.killed {
			t.Errorf("sandbox %s: dsh killed=%v (exit %d), want %v\n%s", tc.setting, killed, r.Code, tc.killed, r.Stderr)
		}
	}
}

// TestSandboxKeepsBuildsWorking: git status and commit, go build, and a
// write to the workspace work under the sandbox.
func TestSandboxKeepsBuildsWorking(t *testing.T) {
	forEachSandboxUser(t, testSandboxKeepsBuildsWorking)
}

func testSandboxKeepsBuildsWorking(t *testing.T, u sandboxUser) {
	sw := newSandboxWorld(t, u)
	script := `set -e; git init -q . && git -c user.email=a@b -c user.name=t add a.txt && ` +
		`git -c user.email=a@b -c user.name=t commit -qm one && git status --short > git-status && ` +
		`printf 'module m\n\ngo 1.21\n' > go.mod && printf 'package main\nfunc main(){}\n' > main.go && ` +
		`GOFLAGS=-mod=mod go build -o bin/m . && echo built > built`
	// A home has its ~/.cache (a tool cache that does not exist cannot be
	// made from inside the sandbox: Landlock allows only what exists).
	must(t, os.MkdirAll(filepath.Join(sw.Home, ".cache"), 0o755))
	if u.as != nil {
		must(t, os.Chown(filepath.Join(sw.Home, ".cache"), int(u.as.Uid), int(u.as.Gid)))
	}
	sw.Env = append(sw.Env, "PATH="+os.Getenv("PATH"), "GOCACHE="+filepath.Join(sw.Home, ".cache", "go-build"), "GOPATH="+filepath.Join(sw.Home, "go"))
	sw.srv.Enqueue(modeltest.ToolCallsReply("build", bashCall(t, "call_build", script)), modeltest.TextReply("built"))
	// A cold go build can run past the 30 s after which a foreground call
	// goes on as a background job; this test wants the build's own end.
	sw.Env = append(sw.Env, "DSH_SANDBOX=required", "DSH_BASH_YIELD_SECONDS=0")
	r := sw.run(nil, "run", "build it")
	if r.Code != 0 {
		t.Fatalf("run: %d\n%s", r.Code, r.Stderr)
	}
	if sw.read("built") != "built\n" || !exists(filepath.Join(sw.Cwd, ".git", "HEAD")) || !exists(filepath.Join(sw.Cwd, "bin", "m")) {
		reqs := sw.srv.Requests()
		t.Fatalf("the build did not work under the sandbox; last request: %s", reqs[len(reqs)-1].Raw)
	}
}
