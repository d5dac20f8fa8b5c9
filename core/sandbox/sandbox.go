// Package sandbox contains the commands the model runs (bash, background
// jobs): writes only inside the workspace, the session's scratch space,
// the tool caches and a temp dir; secret places unreadable; the dsh
// process and its environment invisible; the network off when asked.
//
// The mechanism is what holds on Linux without extra software:
//   - namespaces (a PID namespace and a mount namespace, plus a network
//     namespace when the network is off), where the reaper (core/proc)
//     mounts a fresh /proc that shows only the command's own processes, a
//     private tmpfs as /tmp, and empty mounts over the secret places. Root
//     (with CAP_SYS_ADMIN) starts the reaper in them. Other users cannot
//     from dsh (a user namespace's uid map cannot be written for a child
//     of the non-dumpable dsh), so their reaper, once exec'd, starts a
//     second reaper in new user, PID and mount namespaces that maps their
//     own uid (Policy.Enter) — where the kernel allows user namespaces,
//     which New probes once.
//   - Landlock (github.com/landlock-lsm/go-landlock), applied by the
//     reaper to itself before it starts the command: read and execute
//     everywhere, write only the allowed folders, no signals to processes
//     outside (dsh), no TCP when the network is off and there is no
//     network namespace. It also sets no_new_privs: setuid binaries do not
//     gain privileges. Without namespaces it also keeps the secret places
//     unreadable, by allowing every entry beside the way to them
//     (readAllow).
//
// Landlock alone does not stop root from reading /proc/<dsh>/environ,
// nor hide dsh's process, which is why the namespaces carry those parts;
// bubblewrap would add nothing the two do not, and is not installed on
// most machines.
package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-dev/dsh/core/proc"
)

// Setting is the sandbox setting: auto, required or off.
type Setting string

// The settings.
const (
	// Auto contains commands as far as the machine allows; where it cannot
	// contain, commands run and the user is told once.
	Auto Setting = "auto"
	// Required refuses to run a command the machine cannot contain fully.
	Required Setting = "required"
	// Off runs commands unconfined.
	Off Setting = "off"
)

// ParseSetting validates a setting ("" is auto).
func ParseSetting(s string) (Setting, error) {
	switch Setting(s) {
	case "", Auto:
		return Auto, nil
	case Required, Off:
		return Setting(s), nil
	}
	return "", fmt.Errorf("sandbox must be auto, required or off, got %q", s)
}

// Level is how much this machine can contain.
type Level int

// The levels.
const (
	// None: no Landlock and no namespaces.
	None Level = iota
	// Landlock only: writes contained (and TCP off when asked), but
	// secret places readable and the dsh process visible.
	LandlockOnly
	// Full: everything the policy promises.
	Full
)

// Config is the machine-wide part of the policy.
type Config struct {
	Setting Setting
	// Network false turns the network off for commands.
	Network bool
	// Hidden are made unreadable (missing ones are skipped): the secret
	// places and the session root.
	Hidden []string
	// Writable are writable for every command besides the session's own
	// folders: the tool caches (go, npm), so builds keep working. One
	// that does not exist yet stays unwritable: Landlock allows only
	// folders that exist, and dsh writes nothing outside the session
	// root and the workspace to make it.
	Writable []string
	// Reaper is the binary that dispatches proc.ReaperArg (the dsh binary
	// itself): with it, a user without CAP_SYS_ADMIN gets namespaces
	// through a user namespace, if the probe (one run of it) says the
	// kernel allows them.
	Reaper string
}

// probed is what the machine can contain.
type probed struct {
	level  Level
	abi    int      // Landlock ABI (0: none)
	userns bool     // Full through a user namespace (Policy.Enter)
	why    []string // what it cannot, for the notice
}

// ErrCannotContain is returned for a command that the setting requires
// to be contained on a machine that cannot contain it.
var ErrCannotContain = errors.New("the sandbox is required but cannot be set up on this machine")

// Sandbox decides how each command is contained. Safe for concurrent use.
type Sandbox struct {
	cfg   Config
	ready chan struct{} // closed once the probe is done
	mu    sync.Mutex
	pr    probed
}

// New returns the sandbox for cfg and probes the machine in the
// background: for a user without CAP_SYS_ADMIN the probe runs cfg.Reaper
// once (about 11 ms, which would otherwise be added to every start of a
// non-root dsh). Everything that needs the probe's answer waits for it;
// Wait waits for it alone.
func New(cfg Config) *Sandbox {
	if cfg.Setting == "" {
		cfg.Setting = Auto
	}
	s := &Sandbox{cfg: cfg, ready: make(chan struct{})}
	if cfg.Setting == Off {
		close(s.ready)
		return s
	}
	go func() {
		pr := probe(cfg)
		s.mu.Lock()
		s.pr = pr
		s.mu.Unlock()
		close(s.ready)
	}()
	return s
}

// Wait returns once the probe is done (a door that must not exit before
// its notice is told, a test that must not leak the probe).
func (s *Sandbox) Wait() {
	if s != nil {
		<-s.ready
	}
}

// probed waits for the probe and returns what it found.
func (s *Sandbox) probed() probed {
	<-s.ready
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pr
}

// Setting is the configured setting.
func (s *Sandbox) Setting() Setting { return s.cfg.Setting }

// Level is what this machine can contain (after any downgrade).
func (s *Sandbox) Level() Level { return s.probed().level }

// Notice says, for the user, what is not contained on this machine, or
// "" when everything is (or the sandbox is off). It is the one fact every
// door tells the user from (stderr at startup, a message in each ACP
// session).
func (s *Sandbox) Notice() string {
	if s == nil {
		return ""
	}
	pr := s.probed()
	if s.cfg.Setting == Off || pr.level == Full {
		return ""
	}
	lost := "commands run unconfined"
	if pr.level == LandlockOnly {
		lost = "writes and reads are contained, but " + strings.Join(s.landlockGaps(pr), ", ")
	}
	verb := "run anyway"
	if s.cfg.Setting == Required {
		verb = "are refused (sandbox: required)"
	}
	return fmt.Sprintf("sandbox: this machine cannot fully contain commands (%s): %s; commands %s", strings.Join(pr.why, "; "), lost, verb)
}

// landlockGaps are what Landlock alone leaves open, by this kernel's ABI
// and whether dsh runs as root.
func (s *Sandbox) landlockGaps(pr probed) []string {
	gaps := []string{"dsh's process stays visible to commands"}
	if isRoot() {
		gaps[0] += " and, as root, its environment (the API key) readable"
	}
	if pr.abi < 6 {
		gaps = append(gaps, "commands can signal dsh")
	}
	gaps = append(gaps, "/tmp is shared with the host", "the names (not contents) in secret folders can be listed")
	if !s.cfg.Network && !canFilterSockets() && pr.abi < 4 {
		gaps = append(gaps, "the network cannot be turned off")
	}
	return gaps
}

// downgrade records that namespaces failed at run time.
func (s *Sandbox) downgrade(err error) {
	<-s.ready
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pr.level == Full {
		s.pr.level = LandlockOnly
		if s.pr.abi == 0 {
			s.pr.level = None
		}
		s.pr.why = append(s.pr.why, "namespaces: "+err.Error())
	}
}

// Scope is one command's part of the policy.
type Scope struct {
	// Workspace and Writable (additionalDirectories, the session's spill
	// folder) are writable.
	Workspace string
	Writable  []string
	// ReadOnly allows no writes at all (permission mode read-only).
	ReadOnly bool
	// Unconfined runs the command without a sandbox (permission mode full).
	Unconfined bool
	// Tmp is the session's private temp folder, the command's /tmp where
	// the machine gives it a mount namespace (made on first use; the
	// session removes it when it closes). "" gives each command its own.
	Tmp string
}

// Command is how one command is started: the reaper flags, the
// namespaces to start the reaper in, and the environment changes.
type Command struct {
	// Contained is false when the command runs unconfined.
	Contained bool
	// Policy is the reaper's --policy (see Setup).
	Policy string
	// Cloneflags are the namespaces to start the reaper in (Linux, root).
	Cloneflags uintptr
	// Env are variables to set in the command's environment.
	Env []string
	// fallback is the Command to use if starting with Cloneflags fails.
	fallback *Command
}

// Plan returns how to start one command, or ErrCannotContain (wrapped,
// with the reason) when the setting requires what the machine lacks.
func (s *Sandbox) Plan(sc Scope) (Command, error) {
	p, how, err := s.plan(sc)
	if err != nil || p == nil {
		return Command{}, err
	}
	c := p.command(how)
	if how == nsByDsh && s.cfg.Setting == Auto {
		fb := p.command(nsNone)
		c.fallback = &fb
	}
	return c, nil
}

// Standalone is how to run argv contained when what starts it is not dsh
// but an ACP editor's terminal: the command becomes the reaper binary
// self over argv, and the reaper makes the namespaces itself
// (Policy.Enter) where dsh would have started it in them. env is what to
// add to the command's environment. A command that runs unconfined comes
// back as it is; a refused one is ErrCannotContain, as for Plan. There is
// no fallback: a namespace start refused at run time fails the command
// (its output says why).
func (s *Sandbox) Standalone(self string, sc Scope, argv []string) (out, env []string, err error) {
	p, how, err := s.plan(sc)
	if err != nil || p == nil {
		return argv, nil, err
	}
	if how == nsByDsh {
		how = nsByReaper
	}
	c := p.command(how)
	return proc.ReaperArgv(self, 0, c.Policy, argv...), c.Env, nil
}

// plan is the policy of one command and who makes its namespaces; a nil
// policy runs it unconfined.
func (s *Sandbox) plan(sc Scope) (*Policy, nsHow, error) {
	if s == nil || s.cfg.Setting == Off || sc.Unconfined {
		return nil, nsNone, nil
	}
	pr := s.probed()
	if pr.level < Full && s.cfg.Setting == Required {
		return nil, nsNone, fmt.Errorf("%w: %s", ErrCannotContain, strings.Join(pr.why, "; "))
	}
	p := s.policy(sc)
	switch {
	case pr.level == None:
		return nil, nsNone, nil
	case pr.level == LandlockOnly:
		return &p, nsNone, nil
	case pr.userns:
		return &p, nsByReaper, nil
	}
	return &p, nsByDsh, nil
}

// Fallback returns the Command to retry with after starting c failed with
// err (namespaces refused at run time), recording the downgrade; false
// when there is none (required, or c used no namespaces).
func (s *Sandbox) Fallback(c Command, err error) (Command, bool) {
	if c.Cloneflags == 0 {
		return Command{}, false
	}
	s.downgrade(err)
	if c.fallback == nil {
		return Command{}, false
	}
	return *c.fallback, true
}

func (s *Sandbox) policy(sc Scope) Policy {
	p := Policy{Network: s.cfg.Network, ReadOnly: sc.ReadOnly, Hidden: clean(s.cfg.Hidden)}
	if sc.Tmp != "" && filepath.IsAbs(sc.Tmp) {
		p.Tmp = filepath.Clean(sc.Tmp)
	}
	if !sc.ReadOnly {
		p.Writable = clean(append(append([]string{sc.Workspace}, sc.Writable...), s.cfg.Writable...))
	}
	return p
}

func clean(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Describe is what the bash tool tells the model about the sandbox.
func (s *Sandbox) Describe() string {
	if s == nil || s.cfg.Setting == Off {
		return ""
	}
	switch s.Level() {
	case None:
		if s.cfg.Setting == Required {
			return " Commands are refused: the sandbox is required but this machine cannot provide it."
		}
		return ""
	case LandlockOnly:
		return " Commands run in a sandbox: they may write only inside the workspace, its additional directories, the tool caches and /tmp; other writes fail with \"Permission denied\". Secret places (~/.ssh, ~/.aws, ~/.gnupg, dsh's config and session logs) cannot be read." + s.netText()
	}
	return " Commands run in a sandbox: they may write only inside the workspace, its additional directories and the toolchain homes (caches of go, cargo, npm, Maven, Gradle, ~/.local); /tmp is private to this session, shared by its commands and jobs; other writes fail with \"Permission denied\" or \"Read-only file system\". Secret places (~/.ssh, ~/.aws, ~/.gnupg, dsh's config and session logs) are empty, and dsh's own process is not visible." + s.netText()
}

func (s *Sandbox) netText() string {
	if s.cfg.Network {
		return ""
	}
	if !canFilterSockets() {
		return " The network is off: TCP connections fail."
	}
	return " The network is off: TCP, UDP and unix-socket connections fail (socketpair still works); web_fetch and HTTP MCP servers are off too."
}
