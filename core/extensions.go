package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
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

// readExtensions reads the skills, agent types and hooks of a session
// in cwd; what cannot be used is reported.
func (r *Runtime) readExtensions(cwd string) extState {
	x := &r.cfg.Extensions
	st := extState{roots: ext.Roots{Cwd: cwd, UserConfig: x.UserConfig, Home: x.Home, Secret: r.cfg.SecretPaths},
		trusted: ext.Trusted(cwd, x.TrustedProjects)}
	var diags, ds []ext.Diagnostic
	st.skills, ds = ext.LoadSkills(st.roots)
	diags = append(diags, ds...)
	base := r.baseTools()
	known := func(n string) bool {
		return base.byName[n] != nil || slices.Contains(base.withheld, n) || n == skillToolName || strings.HasPrefix(n, "mcp__")
	}
	st.agents, ds = ext.LoadAgents(st.roots, known)
	diags = append(diags, ds...)
	st.hooks = append(st.hooks, x.UserHooks...)
	if ph, ds := ext.LoadProjectHooks(st.roots); len(ph) > 0 || len(ds) > 0 {
		diags = append(diags, ds...)
		if st.trusted {
			st.hooks = append(st.hooks, ph...)
		} else if len(ph) > 0 {
			r.warnOnce("project hooks not run: the project is not trusted (run `dsh trust` in it to allow them)",
				"project", cwd, "hooks", len(ph))
		}
	}
	r.reportDiagnostics(diags)
	return st
}

// agentNamed is the agent type a new typed subagent session runs as.
func (st *extState) agentNamed(name string) (*ext.Agent, error) {
	i := slices.IndexFunc(st.agents, func(a ext.Agent) bool { return a.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("%w: no agent type %q in this project", ErrBadInput, name)
	}
	return &st.agents[i], nil
}

// agentRecord is what a typed session's header keeps of its agent type,
// so a resume applies it again.
func agentRecord(a *ext.Agent) *store.AgentType {
	return &store.AgentType{Name: a.Name, Path: a.Path, Tools: slices.Clone(a.Tools), Model: a.Model, Prompt: a.Prompt}
}

// recordedAgent is the agent type a resumed session runs as: the one its
// header names, read again from its file (which may have changed); when
// no file defines it any more, the tools and instructions the header
// recorded, and the log says so.
func (r *Runtime) recordedAgent(st *extState, h store.Header) *ext.Agent {
	rec := h.Agent
	if rec == nil {
		return nil
	}
	if a, err := st.agentNamed(rec.Name); err == nil {
		return a
	}
	r.log.Warn("the agent file of a resumed subagent session is gone; it keeps the tools and instructions recorded when it started",
		"session", h.ID, "agent", rec.Name, "file", rec.Path)
	return &ext.Agent{Name: rec.Name, Tools: slices.Clone(rec.Tools), Model: rec.Model, Prompt: rec.Prompt, Path: rec.Path}
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

// fileCommands is the command source of the extension folders: the
// custom commands of the session's project and user, read each time the
// registry asks (so a changed file shows at the next listing). A file
// named like a built-in is left out, and the log says so.
func fileCommands(s *Session) []Command {
	cs, diags := ext.LoadCommands(s.ext.roots)
	s.rt.reportDiagnostics(diags)
	fixed := s.rt.commands.fixedNames()
	out := make([]Command, 0, len(cs))
	for _, c := range cs {
		switch {
		case slices.Contains(fixed, c.Name):
			s.rt.warnOnce("command file not used: /"+c.Name+" is a built-in command", "file", c.Path)
			continue
		case !validCommandName(c.Name):
			s.rt.warnOnce("command file not used: a command name is lower-case letters, digits, - _ : .", "file", c.Path)
			continue
		}
		out = append(out, Command{Name: c.Name, Description: describeFile(c), Hint: c.ArgumentHint,
			Run: func(ctx context.Context, s *Session, args string) (CommandResult, error) {
				turn, err := s.commandTurn(c)
				if err != nil {
					return CommandResult{}, err
				}
				p, err := s.expandFile(ctx, c, args, turn)
				return CommandResult{Prompt: p, Turn: turn}, err
			}})
	}
	return out
}

// describeFile is a command file's description with where it is from.
func describeFile(c ext.Command) string {
	d := c.Description
	if d == "" {
		d = "custom command"
	}
	return d + " (" + string(c.Scope) + ")"
}

// expandFile turns a command file into its prompt. A file with !`cmd`
// lines runs them only in a trusted project, each through the permission
// gate as a bash call would go (the command's allowed-tools answering for
// a person, as they do in its turn), and fails when one is refused or
// fails.
func (s *Session) expandFile(ctx context.Context, c ext.Command, args string, turn *event.CommandTurn) (string, error) {
	var shell func(string) (string, error)
	if len(ext.ShellLines(c.Body)) > 0 {
		if !s.ext.trusted {
			return "", fmt.Errorf("/%s runs shell commands (!-lines in %s): %w; run `dsh trust` in the project to allow them", c.Name, c.Path, ErrUntrusted)
		}
		shell = func(cmd string) (string, error) { return s.commandShell(ctx, c.Name, cmd, turnGrants(turn)) }
	}
	return c.Expand(args, shell)
}

// commandShell runs one !-line of a command: asked of the permission gate
// as a bash call, then run as the bash tool runs commands.
func (s *Session) commandShell(ctx context.Context, name, cmd string, grants permission.Grants) (string, error) {
	d := s.decide(ctx, permission.Request{CallID: "command-" + name, Tool: "bash", Kind: string(tool.KindExecute),
		Command: cmd, Title: "/" + name + ": " + cmd, RawInput: mustJSON(map[string]string{"command": cmd})},
		func(g *permission.Gate) { g.Turn = grants })
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

// agentTypes are the session's agent files as the subagent tool offers
// them.
func (s *Session) agentTypes() []tool.AgentType {
	out := make([]tool.AgentType, len(s.ext.agents))
	for i, a := range s.ext.agents {
		out[i] = tool.AgentType{Name: a.Name, Description: a.Description, Model: a.Model}
	}
	return out
}

// ExpandCommand turns a prompt text that names one of the session's
// command files ("/name args") into that command's prompt, for a door
// whose wire cannot show a built-in's reply (the SDK's); ok is false for
// any other text, built-ins included, which the door sends unchanged.
func (s *Session) ExpandCommand(ctx context.Context, text string) (string, bool, error) {
	name, args, ok := ParseCommand(text)
	if !ok {
		return text, false, nil
	}
	for _, c := range fileCommands(s) {
		if c.Name == name {
			res, err := c.Run(ctx, s, args)
			return res.Prompt, true, err
		}
	}
	return text, false, nil
}
