package proc

import (
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// ReaperArg is the hidden subcommand of the dsh binary that runs the
// reaper: `dsh __reap [--grace D] -- ARGV...`. A binary that spawns
// commands through ReaperArgv must dispatch it to RunReaper first thing in
// main (tests: in TestMain), before anything else touches signals.
const ReaperArg = "__reap"

// DefaultReaperGrace is how long the reaper lets the command's tree handle
// SIGTERM before it SIGKILLs it.
const DefaultReaperGrace = time.Second

// ReaperOptions is one run of the reaper.
type ReaperOptions struct {
	// Argv is the command, e.g. {"/bin/bash", "-c", line}.
	Argv []string
	// Grace is the SIGTERM-to-SIGKILL wait (0: DefaultReaperGrace).
	Grace time.Duration
	// Setup runs in the reaper after it became a subreaper and before the
	// command starts; what it restricts (Landlock), the command inherits.
	// It returns how to start the command (the zero ReaperStart: Argv as it is).
	// Its error ends the reaper with exit code 126 and the error on stderr.
	Setup func(argv []string) (ReaperStart, error)
	// Policy is the --policy flag's value, for the binary's setup (the
	// sandbox policy); opaque to this package.
	Policy string
}

// ReaperStart is how the reaper starts its command, when its setup changes it:
// the sandbox of a user without CAP_SYS_ADMIN starts the binary again as
// a second reaper in new user, PID and mount namespaces (which this
// reaper, unlike dsh, may map: it is dumpable), keeping CAP_SYS_ADMIN
// there across the exec so the second reaper can mount.
type ReaperStart struct {
	// Argv replaces the command's argv when not empty.
	Argv []string
	// Cloneflags are namespaces (CLONE_NEW*) to start it in; MapUser maps
	// our uid and gid to themselves in a new user namespace.
	Cloneflags uintptr
	MapUser    bool
	// AmbientCaps are kept across the exec (Linux capabilities, in the
	// new user namespace).
	AmbientCaps []uintptr
}

// reaperBinary is the binary UseReaper named, or nil.
var reaperBinary atomic.Pointer[string]

// UseReaper names the binary whose ReaperArg runs the children started
// with Config.Reaped: the dsh binary, which dispatches ReaperArg first thing
// in main. It is process-wide, as that dispatch is; a program that does not
// call it (a Go host using sdkrpc/client) starts Reaped children directly.
func UseReaper(binary string) { reaperBinary.Store(&binary) }

// reaperGrace is the SIGTERM-to-SIGKILL wait of a Reaped child's reaper:
// shorter than the Term step of every ladder in use (the MCP servers' is
// 0.8 s), so the reaper has killed and reaped the tree before Stop would
// SIGKILL the reaper itself and orphan what is left.
const reaperGrace = 400 * time.Millisecond

// underReaper rewrites cfg to run its command under the reaper, if one is
// named. A bare command name is looked up here, as exec.Command would, so
// a missing command is still Start's error rather than the reaper's exit.
func underReaper(cfg Config) (Config, error) {
	self := reaperBinary.Load()
	if self == nil || *self == "" {
		return cfg, nil
	}
	argv := append([]string(nil), cfg.Argv...)
	if !strings.Contains(argv[0], "/") {
		path, err := exec.LookPath(argv[0])
		if err != nil {
			return cfg, fmt.Errorf("start %s: %w", argv[0], err)
		}
		argv[0] = path
	}
	cfg.Argv = ReaperArgv(*self, reaperGrace, "", argv...)
	if cfg.ParentDeathSignal == 0 {
		cfg.ParentDeathSignal = syscall.SIGTERM
	}
	return cfg, nil
}

// ReaperArgv is the argv that runs argv under the reaper of binary self
// (os.Executable of a binary that dispatches ReaperArg); a non-empty
// policy is passed as --policy for the binary's setup.
func ReaperArgv(self string, grace time.Duration, policy string, argv ...string) []string {
	out := []string{self, ReaperArg}
	if grace > 0 {
		out = append(out, "--grace", grace.String())
	}
	if policy != "" {
		out = append(out, "--policy", policy)
	}
	return append(append(out, "--"), argv...)
}

// ParseReaperArgs parses what follows ReaperArg.
func ParseReaperArgs(args []string) (ReaperOptions, error) {
	fs := flag.NewFlagSet(ReaperArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o ReaperOptions
	fs.DurationVar(&o.Grace, "grace", DefaultReaperGrace, "SIGTERM to SIGKILL wait")
	fs.StringVar(&o.Policy, "policy", "", "policy for the setup")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%s: %w", ReaperArg, err)
	}
	o.Argv = fs.Args()
	if len(o.Argv) == 0 {
		return o, fmt.Errorf("%s: %w", ReaperArg, ErrNoCommand)
	}
	return o, nil
}

// ReaperMain runs the reaper for the arguments after ReaperArg and
// returns the exit code: the command's, or 128+N after signal N (which the
// reaper re-raises on itself so its parent sees the same signal where it
// can), 126 when it could not start. setup applies a --policy (the
// sandbox), and says how to start the command; a policy without a setup
// is refused, never ignored.
func ReaperMain(args []string, stderr io.Writer, setup func(policy string, argv []string) (ReaperStart, error)) int {
	o, err := ParseReaperArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return 126
	}
	if o.Policy != "" {
		if setup == nil {
			fmt.Fprintf(stderr, "dsh: %s: this binary cannot apply a policy\n", ReaperArg)
			return 126
		}
		o.Setup = func(argv []string) (ReaperStart, error) { return setup(o.Policy, argv) }
	}
	return RunReaper(o, stderr)
}
