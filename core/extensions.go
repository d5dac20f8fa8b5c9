package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/tool"
)

// Extensions say where a session's extension files (custom commands,
// skills, agent types, hooks: see core/ext) are read and whose hooks run.
type Extensions struct {
	// UserConfig is dsh's user folder ($XDG_CONFIG_HOME/dsh: commands/,
	// skills/, agents/); Home is the user's home (~/.claude/…,
	// ~/.agents/skills). "" skips either.
	UserConfig string
	Home       string
	// UserHooks are the dsh config file's hooks: they always run.
	UserHooks []ext.Hook
	// TrustedProjects are folders whose project hooks and command
	// !-lines may run (the trustedProjects setting, `dsh trust`).
	TrustedProjects []string
}

// Errors of extensions.
var (
	// ErrHookBlocked: a UserPromptSubmit hook refused the prompt.
	ErrHookBlocked = errors.New("refused by a hook")
	// ErrUntrusted: a command's !-lines need a trusted project.
	ErrUntrusted = errors.New("the project is not trusted")
)

// BuiltinCommands are the slash commands the doors implement themselves;
// a command file of the same name is not offered (built-ins win).
var BuiltinCommands = []string{"compact", "init", "mcp", "permissions"}

// extState is what a session read of its extension files when it opened.
// Skills and agent types are fixed for the session's life: they are part
// of its system prompt and tool list, which never move. Commands are
// read again whenever asked for.
type extState struct {
	roots   ext.Roots
	trusted bool
	skills  []ext.Skill
	agents  []ext.Agent
	hooks   []ext.Hook
	// agent is the type this session runs as (a typed subagent child).
	agent *ext.Agent
}

// loadExtensions reads the session's skills, agent types and hooks.
func (s *Session) loadExtensions(agentType string) error {
	x := &s.rt.cfg.Extensions
	st := extState{roots: ext.Roots{Cwd: s.header.Cwd, UserConfig: x.UserConfig, Home: x.Home},
		trusted: ext.Trusted(s.header.Cwd, x.TrustedProjects)}
	var diags, ds []ext.Diagnostic
	st.skills, ds = ext.LoadSkills(st.roots)
	diags = append(diags, ds...)
	base := s.rt.baseTools()
	known := func(n string) bool {
		return base.byName[n] != nil || n == skillToolName || strings.HasPrefix(n, "mcp__")
	}
	st.agents, ds = ext.LoadAgents(st.roots, known)
	diags = append(diags, ds...)
	st.hooks = append(st.hooks, x.UserHooks...)
	if ph, ds := ext.LoadProjectHooks(s.header.Cwd); len(ph) > 0 || len(ds) > 0 {
		diags = append(diags, ds...)
		if st.trusted {
			st.hooks = append(st.hooks, ph...)
		} else if len(ph) > 0 {
			s.rt.warnOnce("project hooks not run: the project is not trusted (run `dsh trust` in it to allow them)",
				"project", s.header.Cwd, "hooks", len(ph))
		}
	}
	s.rt.reportDiagnostics(diags)
	if agentType != "" {
		i := slices.IndexFunc(st.agents, func(a ext.Agent) bool { return a.Name == agentType })
		if i < 0 {
			return fmt.Errorf("%w: no agent type %q in this project", ErrBadInput, agentType)
		}
		st.agent = &st.agents[i]
	}
	s.ext = st
	return nil
}

// warnOnce logs a warning once per runtime (a diagnostic repeats for
// every session of the same project otherwise).
func (r *Runtime) warnOnce(msg string, args ...any) {
	key := fmt.Sprint(append([]any{msg}, args...)...)
	r.mu.Lock()
	if r.warned == nil {
		r.warned = map[string]bool{}
	}
	seen := r.warned[key]
	r.warned[key] = true
	r.mu.Unlock()
	if !seen {
		r.log.Warn(msg, args...)
	}
}

func (r *Runtime) reportDiagnostics(ds []ext.Diagnostic) {
	for _, d := range ds {
		r.warnOnce("extension file not used as written", "file", d.Path, "problem", d.Msg)
	}
}

// CommandInfo is a custom slash command as a door offers it.
type CommandInfo struct {
	Name         string
	Description  string
	ArgumentHint string
	// Source is "project" or "user", and the file.
	Source string
	Path   string
}

// Commands returns the custom commands of the session's project and user,
// read now (a door calls it at each turn to see changes), sorted by name,
// without the ones a built-in hides. Unusable files are logged.
func (s *Session) Commands() []CommandInfo {
	cs, diags := ext.LoadCommands(s.ext.roots)
	s.rt.reportDiagnostics(diags)
	out := make([]CommandInfo, 0, len(cs))
	for _, c := range cs {
		if slices.Contains(BuiltinCommands, c.Name) {
			s.rt.warnOnce("command file not used: /"+c.Name+" is a built-in command", "file", c.Path)
			continue
		}
		out = append(out, CommandInfo{Name: c.Name, Description: c.Description, ArgumentHint: c.ArgumentHint,
			Source: string(c.Scope), Path: c.Path})
	}
	slices.SortFunc(out, func(a, b CommandInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ExpandCommand turns text that starts with "/name" naming a custom
// command into the command's prompt. ok is false when text is not such a
// command (a built-in's name, an unknown name, plain text): the door then
// uses text as it is. A command whose file has !`cmd` lines runs them
// only in a trusted project, each through the permission gate as a bash
// call would go, and fails when one is refused or fails.
func (s *Session) ExpandCommand(ctx context.Context, text string) (string, bool, error) {
	name, args, ok := splitSlash(text)
	if !ok || slices.Contains(BuiltinCommands, name) {
		return text, false, nil
	}
	cs, diags := ext.LoadCommands(s.ext.roots)
	s.rt.reportDiagnostics(diags)
	i := slices.IndexFunc(cs, func(c ext.Command) bool { return c.Name == name })
	if i < 0 {
		return text, false, nil
	}
	c := cs[i]
	var shell func(string) (string, error)
	if len(ext.ShellLines(c.Body)) > 0 {
		if !s.ext.trusted {
			return "", true, fmt.Errorf("/%s runs shell commands (!-lines in %s): %w; run `dsh trust` in the project to allow them", name, c.Path, ErrUntrusted)
		}
		shell = func(cmd string) (string, error) { return s.commandShell(ctx, name, cmd) }
	}
	out, err := c.Expand(args, shell)
	if err != nil {
		return "", true, err
	}
	return out, true, nil
}

// splitSlash splits "/name args" (leading blanks allowed).
func splitSlash(text string) (name, args string, ok bool) {
	t := strings.TrimLeft(text, " \t\r\n")
	if !strings.HasPrefix(t, "/") {
		return "", "", false
	}
	t = t[1:]
	i := strings.IndexAny(t, " \t\r\n")
	if i < 0 {
		return t, "", t != ""
	}
	return t[:i], t[i+1:], i > 0
}

// commandShell runs one !-line of a command: asked of the permission gate
// as a bash call, then run as the bash tool runs commands.
func (s *Session) commandShell(ctx context.Context, name, cmd string) (string, error) {
	d := s.Decide(ctx, permission.Request{CallID: "command-" + name, Tool: "bash", Kind: string(tool.KindExecute),
		Command: cmd, Title: "/" + name + ": " + cmd, RawInput: mustJSON(map[string]string{"command": cmd})})
	if !d.Allow {
		why := d.Reason
		if why == "" {
			why = "permission denied"
		}
		return "", fmt.Errorf("/%s: `%s` not run: %s", name, cmd, why)
	}
	env := s.toolEnv(0, "command-"+name, noCaps)
	res, err := env.Exec.Exec(ctx, tool.ExecRequest{Command: cmd, Workdir: s.header.Cwd, Timeout: commandShellTimeout,
		OutputLimit: commandShellOutput, Scope: tool.CommandScope(env)})
	switch {
	case err != nil:
		return "", fmt.Errorf("/%s: `%s`: %w", name, cmd, err)
	case res.TimedOut:
		return "", fmt.Errorf("/%s: `%s` did not finish within %s", name, cmd, commandShellTimeout)
	case res.ExitCode != 0:
		return "", fmt.Errorf("/%s: `%s` exited with code %d: %s", name, cmd, res.ExitCode, strings.TrimSpace(res.Output))
	}
	return res.Output, nil
}

// AgentType is an agent file a subagent may run as.
type AgentType struct {
	Name        string
	Description string
	// Tools are the tools it keeps (nil: all).
	Tools []string
	Model string
	Path  string
}

// AgentTypes are the agent files of the session's project and user, as
// read when the session opened.
func (s *Session) AgentTypes() []AgentType {
	out := make([]AgentType, len(s.ext.agents))
	for i, a := range s.ext.agents {
		out[i] = AgentType{Name: a.Name, Description: a.Description, Tools: a.Tools, Model: a.Model, Path: a.Path}
	}
	return out
}
