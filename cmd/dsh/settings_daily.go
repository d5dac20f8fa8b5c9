package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dsh-dev/dsh/cmd/internal/headless"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/tool"
)

// resolveDaily resolves the settings that shape a developer's day with
// the sandbox and the permission gate: commandEnv, sandboxWritablePaths
// and the tool lists. Each adds up over its sources: nothing here can be
// taken away by a later source, only added to.
func (f *settingFlags) resolveDaily(r *resolver, s *Settings, fc fileConfig) error {
	if err := resolveCommandEnv(r, s, fc); err != nil {
		return err
	}
	if err := resolveWritablePaths(r, s, fc); err != nil {
		return err
	}
	return f.resolveToolLists(r, s, fc)
}

// splitWords splits a list given as one string at commas and white space.
func splitWords(v string) []string {
	return strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' })
}

func resolveCommandEnv(r *resolver, s *Settings, fc fileConfig) error {
	var sources []string
	add := func(entries []string, source string) error {
		for _, e := range entries {
			e = strings.TrimSpace(e)
			if msg := tool.ValidCommandEnvEntry(e); msg != "" {
				return fmt.Errorf("commandEnv entry %q from %s: %s", e, source, msg)
			}
			s.CommandEnv = append(s.CommandEnv, e)
		}
		if len(entries) > 0 {
			sources = append(sources, source)
		}
		return nil
	}
	if err := add(fc.CommandEnv, "config file"); err != nil {
		return err
	}
	if err := add(splitWords(os.Getenv("DSH_COMMAND_ENV")), "environment DSH_COMMAND_ENV"); err != nil {
		return err
	}
	r.sources["commandEnv"] = sourceList(sources)
	return nil
}

// resolveWritablePaths adds up sandboxWritablePaths from the config file
// and DSH_SANDBOX_WRITABLE_PATHS. Each must be a folder this user can
// write now: one that is not would fail every command that counts on it,
// so it is an error at start.
func resolveWritablePaths(r *resolver, s *Settings, fc fileConfig) error {
	var sources []string
	env := os.Getenv("DSH_SANDBOX_WRITABLE_PATHS")
	for _, l := range []struct {
		paths  []string
		source string
	}{{fc.SandboxWritablePaths, "config file"}, {filepath.SplitList(env), "environment DSH_SANDBOX_WRITABLE_PATHS"}} {
		for _, p := range l.paths {
			abs, err := expandHome(p)
			if err == nil {
				err = checkWritableDir(abs)
			}
			if err != nil {
				return fmt.Errorf("sandboxWritablePaths %q from %s: %w", p, l.source, err)
			}
			s.SandboxWritablePaths = append(s.SandboxWritablePaths, abs)
		}
		if len(l.paths) > 0 {
			sources = append(sources, l.source)
		}
	}
	r.sources["sandboxWritablePaths"] = sourceList(sources)
	return nil
}

// checkWritableDir insists on an existing folder this user may write.
func checkWritableDir(p string) error {
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("does not exist (the sandbox can only open folders that exist; create it first)")
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("is not a folder")
	}
	if err := syscall.Access(p, 2 /* W_OK */); err != nil {
		return fmt.Errorf("is not writable by this user: %w", err)
	}
	return nil
}

func (f *settingFlags) resolveToolLists(r *resolver, s *Settings, fc fileConfig) error {
	parse := func(key, flag, env string, file, flagged []string, allow bool) ([]permission.Rule, string, error) {
		var out []permission.Rule
		var sources, given []string
		if v := os.Getenv(env); strings.TrimSpace(v) != "" {
			given = append(given, v)
		}
		given = append(given, flagged...)
		for _, src := range []struct {
			entries []string
			source  string
		}{{file, "config file " + key}, {given[:len(given)-len(flagged)], "environment " + env}, {flagged, "flag --" + flag}} {
			for _, e := range src.entries {
				rs, err := permission.ParseToolList(e, allow)
				if err != nil {
					return nil, "", fmt.Errorf("%s: %w", src.source, err)
				}
				out = append(out, rs...)
			}
			if len(src.entries) > 0 {
				sources = append(sources, strings.TrimSuffix(src.source, " "+key))
			}
		}
		r.sources[key] = sourceList(sources)
		return out, strings.Join(given, ", "), nil
	}
	var err error
	if s.ToolLists.Allow, s.ToolListsGiven.Allow, err = parse("allowedTools", "allowed-tools", "DSH_ALLOWED_TOOLS", fc.AllowedTools, f.allowedTools, true); err != nil {
		return err
	}
	s.ToolLists.Deny, s.ToolListsGiven.Deny, err = parse("disallowedTools", "disallowed-tools", "DSH_DISALLOWED_TOOLS", fc.DisallowedTools, f.disallowedTools, false)
	return err
}

func sourceList(sources []string) string {
	if len(sources) == 0 {
		return "default"
	}
	return strings.Join(sources, " + ")
}

// toolchainHomes are the folders where compilers and package managers
// keep their caches, stores and per-user installs: writable for sandboxed
// commands so go build, cargo, rustup, Maven, Gradle, pip --user, npm,
// pnpm, yarn, bun and deno work. ~/.local is given by its parts, leaving
// out ~/.local/state, where dsh keeps its sessions. at(env, rel) is the
// variable's folder, else home/rel. Only folders that exist are opened
// (Landlock can grant only those; dsh makes nothing outside the session
// root and the workspace).
func toolchainHomes(home string, at func(env, rel string) string) []string {
	out := []string{at("XDG_CACHE_HOME", ".cache"), at("npm_config_cache", ".npm"), os.Getenv("GOCACHE"), os.Getenv("GOMODCACHE"),
		at("GOPATH", "go"), at("CARGO_HOME", ".cargo"), at("RUSTUP_HOME", ".rustup"), at("GRADLE_USER_HOME", ".gradle"),
		at("BUN_INSTALL", ".bun"), at("DENO_DIR", ".deno"), at("PNPM_HOME", filepath.Join(".local", "share", "pnpm")),
		at("YARN_CACHE_FOLDER", ".yarn"), os.Getenv("PIP_CACHE_DIR"), os.Getenv("UV_CACHE_DIR")}
	if home != "" {
		for _, rel := range []string{".m2", ".local/bin", ".local/lib", ".local/share", ".local/include", ".pnpm-store",
			".yarn", ".config/yarn", ".gem", ".nuget", ".dotnet", ".pyenv", ".nvm", ".volta", ".sdkman"} {
			out = append(out, filepath.Join(home, rel))
		}
	}
	return out
}

// dailyRows are dsh config's values of the settings resolved here.
func dailyRows(s Settings, values map[string]string) {
	list := func(xs []string, none string) string {
		if len(xs) == 0 {
			return none
		}
		return strings.Join(xs, ", ")
	}
	rules := func(rs []permission.Rule) []string {
		out := make([]string, 0, len(rs))
		for _, r := range rs {
			if r.Pattern == "*" {
				out = append(out, r.Tool)
			} else {
				out = append(out, r.Tool+"("+r.Pattern+")")
			}
		}
		return out
	}
	values["commandEnv"] = list(s.CommandEnv, "the base set only")
	values["sandboxWritablePaths"] = list(s.SandboxWritablePaths, "the toolchain homes only")
	values["allowedTools"] = list(rules(s.ToolLists.Allow), "none")
	values["disallowedTools"] = list(rules(s.ToolLists.Deny), "none")
}

// sandboxReach says what a contained command may write and whether it
// has the network, for the sandbox line of dsh config and of a run.
func sandboxReach(s Settings) string {
	net := "network on"
	if !s.SandboxNetwork {
		net = "network off"
	}
	if s.PermissionMode == string(permission.ModeReadOnly) {
		return net // the read-only prefix says there are no writes
	}
	w := "writes: the workspace, the session's /tmp, the toolchain homes"
	if n := len(s.SandboxWritablePaths); n > 0 {
		w += fmt.Sprintf(" and %d more (sandboxWritablePaths)", n)
	}
	return w + "; " + net
}

// runSandboxLine is the first stderr line of a plain, not quiet run: what
// contains the commands the model runs, or that nothing does.
func runSandboxLine(rf headless.RunFlags, s Settings, rt *runtime) string {
	if rf.JSON || rf.Quiet {
		return ""
	}
	return "dsh: sandbox " + sandboxInForceWith(s, rt.sandbox)
}
