// Package safegit runs the git commands dsh runs on its own (the
// environment facts of the context message, snapshots) as untrusted
// commands: the model can write anything inside the workspace, .git/config
// and .git/hooks included, so a repository's configuration must not make
// dsh execute a program outside the sandbox with dsh's environment (the
// API key).
//
// Git has no switch that ignores a repository's config, so every command
// runs with:
//   - configuration given on the command line, which beats every config
//     file, that turns off each setting that names a program to run
//     (Overrides), plus the per-driver settings (filter, diff, merge,
//     credential and gpg drivers) found in the repository's config just
//     before the command (git config --list executes nothing);
//   - an environment reduced to what git needs (PATH, HOME, the locale,
//     TMPDIR, XDG_CONFIG_HOME): no API keys, no GIT_* variable of dsh's
//     own environment (GIT_DIR, GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF…);
//   - no pager, no editor, no terminal prompt, no network protocol, no
//     automatic gc, no submodule recursion, a bare repository only when
//     named explicitly;
//   - a deadline (the caller's context) and a bound on its output.
//
// What stays open: a driver defined in the short time between the listing
// and the command (a command the model runs in the background at that
// moment) is not overridden; see the README's threat model.
package safegit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Bounds of one command.
const (
	// MaxOutput bounds what Output keeps of a command's stdout.
	MaxOutput = 64 << 20
	// DefaultTimeout bounds a command whose context has no deadline.
	DefaultTimeout = time.Minute
)

// Overrides are the settings, as `git -c` arguments, that turn off every
// program a repository's config can name, in git 2.39's documentation
// (git-config(1), githooks(5), gitattributes(5), gitremote-helpers(7)).
// An empty value disables a program setting (git skips an empty command);
// ":" is git's own "no editor".
var Overrides = []string{
	// A hook path or the builtin daemon; run by status, diff, add...
	"core.fsmonitor=false",
	"core.useBuiltinFSMonitor=false",
	// Every hook (pre-commit, post-index-change, reference-transaction...):
	// no file can exist below /dev/null.
	"core.hooksPath=/dev/null",
	"core.pager=cat",
	"core.editor=:",
	"sequence.editor=:",
	"diff.external=",
	"core.askPass=",
	"credential.helper=",
	"core.sshCommand=",
	"core.gitProxy=",
	"core.alternateRefsCommand=",
	"gpg.program=",
	"gpg.ssh.defaultKeyCommand=",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"push.gpgSign=false",
	"log.showSignature=false",
	// Transports run ssh, proxies, remote helpers and remote.*.uploadpack;
	// a protocol's own setting beats protocol.allow, so each is named (and
	// any other found in the config, see driverKeys).
	"protocol.allow=never",
	"protocol.ext.allow=never",
	"protocol.file.allow=never",
	"protocol.ssh.allow=never",
	"protocol.git.allow=never",
	"protocol.http.allow=never",
	"protocol.https.allow=never",
	// Automatic gc and maintenance run subprocesses (and the pre-auto-gc hook).
	"gc.auto=0",
	"gc.autoDetach=false",
	"maintenance.auto=false",
	// A submodule's own config is not listed here; do not enter submodules.
	"submodule.recurse=false",
	"status.submoduleSummary=false",
	"diff.ignoreSubmodules=all",
	// A bare repository planted in the workspace is not discovered.
	"safe.bareRepository=explicit",
}

// driverKeys are the per-name settings that name a program, as
// section.<name>.key: their names come from the repository's config.
var driverKeys = map[string][]string{
	"filter":     {"clean", "smudge", "process"},
	"diff":       {"textconv", "command"},
	"merge":      {"driver"},
	"credential": {"helper"},
	"gpg":        {"program"},
	"remote":     {"uploadpack", "receivepack", "vcs", "proxy"},
	"protocol":   {"allow"},
}

// envKept are the variables of dsh's environment a git command sees.
var envKept = []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "XDG_CONFIG_HOME"}

// envFixed are set for every command.
var envFixed = []string{
	"LC_ALL=C", "LANG=C",
	"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat",
	"GIT_EDITOR=:", "GIT_SEQUENCE_EDITOR=:",
}

// callerEnv are the GIT_* variables a caller may set through Repo.Env
// (a separate index or object store for snapshots, an identity).
var callerEnv = []string{
	"GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
	"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	"GIT_OPTIONAL_LOCKS",
}

// Repo says where and how a git command runs.
type Repo struct {
	// Dir is the directory git starts in (git -C); required.
	Dir string
	// GitDir and WorkTree, when set, name the repository explicitly
	// (--git-dir, --work-tree) instead of discovering it from Dir.
	GitDir, WorkTree string
	// Env are extra NAME=value variables, limited to callerEnv; another
	// name is an error (it would reopen what the scrub closed).
	Env []string
}

// Command returns git args ready to run in r, hardened as the package
// says. It first lists the repository's config (bounded by ctx) to find
// the driver names to override; a repository git cannot read gives the
// error of that listing. The returned command has no Stdout or Stdin set;
// ctx should carry a deadline (Output and Run add DefaultTimeout).
//
// Diff-family commands should pass --no-ext-diff and --no-textconv: an
// external diff program set by the repository is emptied, which makes git
// fail rather than run it; a textconv becomes cat (no conversion).
func (r Repo) Command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if r.Dir == "" {
		return nil, errors.New("safegit: no directory")
	}
	env, err := r.environ()
	if err != nil {
		return nil, err
	}
	drivers, err := r.driverOverrides(ctx, env)
	if err != nil {
		return nil, err
	}
	return r.command(ctx, env, append(drivers, args...)), nil
}

// Output runs git args in r and returns its stdout (at most MaxOutput
// bytes, else an error). A failing command's error carries the end of
// its stderr.
func (r Repo) Output(ctx context.Context, args ...string) ([]byte, error) {
	return r.Run(ctx, nil, args...)
}

// Run is Output with stdin.
func (r Repo) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	cmd, err := r.Command(ctx, args...)
	if err != nil {
		return nil, err
	}
	return run(cmd, stdin)
}

func run(cmd *exec.Cmd, stdin io.Reader) ([]byte, error) {
	var out limitBuffer
	var stderr limitBuffer
	out.max, stderr.max = MaxOutput, 4<<10
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &stderr
	err := cmd.Run()
	if out.over {
		return nil, fmt.Errorf("git %s: output over %d bytes", strings.Join(cmd.Args[1:], " "), MaxOutput)
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("git %s: %w: %s", subcommand(cmd.Args), err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

// subcommand names the git command for an error (after the -c options).
func subcommand(argv []string) string {
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-c" || a == "-C":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return "?"
}

// command builds the hardened git command line around args.
func (r Repo) command(ctx context.Context, env, args []string) *exec.Cmd {
	argv := []string{"--no-pager", "--no-optional-locks", "-C", r.Dir}
	if r.GitDir != "" {
		argv = append(argv, "--git-dir="+r.GitDir)
	}
	if r.WorkTree != "" {
		argv = append(argv, "--work-tree="+r.WorkTree)
	}
	for _, o := range Overrides {
		argv = append(argv, "-c", o)
	}
	cmd := exec.CommandContext(ctx, "git", append(argv, args...)...)
	cmd.Env = env
	cmd.WaitDelay = time.Second
	return cmd
}

// environ is the command's environment: the kept variables of dsh's
// own, the fixed ones and the caller's.
func (r Repo) environ() ([]string, error) {
	var env []string
	for _, name := range envKept {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	env = append(env, envFixed...)
	for _, kv := range r.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(callerEnv, name) {
			return nil, fmt.Errorf("safegit: environment variable %q is not allowed", name)
		}
		env = append(env, kv)
	}
	return env, nil
}

// driverOverrides lists the repository's config (every file git reads,
// includes followed) and returns "-c" arguments that empty each
// per-driver program setting found.
func (r Repo) driverOverrides(ctx context.Context, env []string) ([]string, error) {
	cmd := r.command(ctx, env, []string{"config", "--null", "--name-only", "--list"})
	out, err := run(cmd, nil)
	if err != nil {
		// A config git cannot list (malformed, a hanging include) is not
		// run against: its drivers are unknown.
		return nil, fmt.Errorf("safegit: list the repository's config: %w", err)
	}
	return overridesFor(strings.Split(string(out), "\x00")), nil
}

// overridesFor returns the "-c name=" (and filter required=false)
// arguments for the program-naming keys among names.
func overridesFor(names []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(kv string) {
		if !seen[kv] {
			seen[kv] = true
			out = append(out, "-c", kv)
		}
	}
	for _, name := range names {
		section, rest, ok := strings.Cut(name, ".")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			continue
		}
		sub, key := rest[:i], strings.ToLower(rest[i+1:])
		keys, known := driverKeys[strings.ToLower(section)]
		if !known || !slices.Contains(keys, key) || strings.ContainsAny(sub, "=\n") {
			continue
		}
		value := ""
		switch key {
		case "textconv":
			value = "cat" // no conversion, and the diff still works
		case "allow":
			value = "never"
		}
		add(section + "." + sub + "." + key + "=" + value)
		if strings.EqualFold(section, "filter") {
			// A required filter with no program fails the command
			// rather than run a program.
			add(section + "." + sub + ".required=false")
		}
	}
	return out
}

// limitBuffer keeps at most max bytes and notes an overflow.
type limitBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
