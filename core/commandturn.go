package core

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
)

// A custom command's frontmatter may ask the turn its prompt starts for
// another model (`model`) and for tools that run without asking
// (`allowed-tools`), as Claude Code's commands do. What it asks is
// resolved when the command runs, recorded on the prompt (event.Message
// Command) and on the turn's turn/start, and holds for that turn only.

// PromptOptions are what a prompt asks of the turn that takes it.
type PromptOptions struct {
	// Command is what a custom command's file asks of its turn
	// (CommandResult.Turn); nil for an ordinary prompt.
	Command *event.CommandTurn
}

// claudeModels are the model names of Claude Code files that no dsh
// provider serves: a command naming one runs on the session's model, as
// an agent file naming one does.
var claudeModels = map[string]bool{"sonnet": true, "opus": true, "haiku": true, "opusplan": true, "default": true}

// commandTurn resolves what the command file c asks of its turn: nil
// when it asks nothing that applies. An unknown model is an error (the
// command does not run); allowed-tools of a project file apply only in a
// trusted project, and an entry that cannot be read is left out, both
// with a warning.
func (s *Session) commandTurn(c ext.Command) (*event.CommandTurn, error) {
	t := &event.CommandTurn{Name: c.Name}
	m, err := s.commandModel(c)
	if err != nil {
		return nil, err
	}
	t.Model = m
	switch {
	case len(c.AllowedTools) == 0:
	case c.Scope == ext.ScopeProject && !s.ext.trusted:
		s.rt.warnOnce("allowed-tools of a project's command not applied: the project is not trusted (run `dsh trust` in it)",
			"command", "/"+c.Name, "file", c.Path)
	default:
		t.AllowedTools = s.grantRules(c)
	}
	if t.Model == "" && len(t.AllowedTools) == 0 {
		return nil, nil
	}
	return t, nil
}

// commandModel is the model a command file names, "" for the session's.
func (s *Session) commandModel(c ext.Command) (string, error) {
	m := strings.TrimSpace(c.Model)
	low := strings.ToLower(m)
	switch {
	case m == "" || low == "inherit":
		return "", nil
	case claudeModels[low] || strings.HasPrefix(low, "claude-"):
		s.rt.warnOnce("a command names a Claude model; the session's model runs it", "command", "/"+c.Name, "model", m, "file", c.Path)
		return "", nil
	}
	cfg := s.Config()
	if m == cfg.Model {
		return "", nil
	}
	if err := model.CheckModel(cfg.Provider, m); err != nil {
		return "", fmt.Errorf("%w: /%s (%s) asks for model %q: %v; nothing was sent", ErrBadInput, c.Name, c.Path, m, err)
	}
	return m, nil
}

// grantRules turns a command's allowed-tools (Claude Code's spellings:
// Bash(git add:*), Read, LS) into permission rules written as the
// allowed-tools list takes them.
func (s *Session) grantRules(c ext.Command) []string {
	var out []string
	for _, e := range c.AllowedTools {
		name, pattern, hasPattern := strings.Cut(strings.TrimSpace(e), "(")
		entry := ext.ToolName(name)
		if hasPattern {
			entry += "(" + pattern
		}
		rules, err := permission.ParseToolList(entry, true)
		if err != nil {
			s.rt.warnOnce("allowed-tools entry of a command left out", "command", "/"+c.Name, "file", c.Path, "problem", err.Error())
			continue
		}
		for _, r := range rules {
			if w := r.Tool + "(" + r.Pattern + ")"; !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// turnGrants are the rules a turn's command allows, for the gate.
func turnGrants(t *event.CommandTurn) permission.Grants {
	if t == nil || len(t.AllowedTools) == 0 {
		return permission.Grants{}
	}
	rules, err := permission.ParseToolList(strings.Join(t.AllowedTools, ","), true)
	if err != nil {
		return permission.Grants{} // recorded by commandTurn, so never: grant nothing
	}
	return permission.Grants{Rules: rules, Source: "allowed-tools of /" + t.Name}
}

// turnConfig is the model configuration of the running turn: the
// session's, with the model its command asked for.
func (s *Session) turnConfig() event.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg := s.cfg
	if s.turnCmd != nil && s.turnCmd.Model != "" {
		cfg.Model = s.turnCmd.Model
	}
	return cfg
}

// setTurnCommand sets (or, with nil, clears) what the running turn's
// command asks of it.
func (s *Session) setTurnCommand(t *event.CommandTurn) {
	s.mu.Lock()
	s.turnCmd = t
	s.mu.Unlock()
}

// claimable is the run of queued prompts the next turn takes: a prompt
// a command asked things of runs alone, and no other turn takes it along.
func claimable(inbox []*Ticket) int {
	if len(inbox) == 0 || inbox[0].msg.Command != nil {
		return min(len(inbox), 1)
	}
	n := 1
	for n < len(inbox) && inbox[n].msg.Command == nil {
		n++
	}
	return n
}

// PromptWith is Prompt with what the prompt asks of its turn.
func (s *Session) PromptWith(ctx context.Context, content []event.ContentBlock, opts PromptOptions) (*Ticket, error) {
	return s.prompt(ctx, content, opts)
}
