package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/permission"
)

// builtinCommands is the registry every runtime starts with: /init,
// /mcp, /permissions and /compact, in the order a client's menu shows them.
func builtinCommands() *Commands {
	c := &Commands{}
	for _, cmd := range []Command{{
		Name:        "init",
		Description: "Write an AGENTS.md for this workspace (layout, build and test commands, conventions)",
		Hint:        "what to focus on (optional)",
		Run:         runInit,
	}, {
		Name:        "mcp",
		Description: "List this session's MCP servers, their state and tool counts",
		Run: func(_ context.Context, s *Session, _ string) (CommandResult, error) {
			return CommandResult{Reply: MCPReport(s.MCPStatus())}, nil
		},
	}, {
		Name:        "permissions",
		Description: "List the remembered always-allow and always-reject rules of this project; remove one by number",
		Hint:        "remove N (optional)",
		Run:         runPermissions,
	}, {
		Name:        "compact",
		Description: "Summarise the conversation so far to free the context window",
		Hint:        "what the summary should focus on (optional)",
		Run:         runCompact,
	}, {
		Name:        "rewind",
		Description: "Go back to before a turn: files and conversation (no argument: list the turns; undo: undo the last rewind)",
		Hint:        "N [files|conversation] [force], or undo",
		Run:         runRewind,
	}} {
		if err := c.Add(cmd); err != nil {
			panic(err) // the built-ins are fixed: a bad one is a programming error
		}
	}
	return c
}

// initPrompt is what /init asks the model to do.
const initPrompt = `Write an AGENTS.md file for this workspace.

Explore the workspace first (list it, read the build files, the README and a few representative sources). Then write AGENTS.md at the workspace root for future coding agents: what the project is, how it is laid out, the exact commands to build, test and lint it, the code style and conventions it follows, and anything non-obvious a newcomer would trip over. Keep it short and concrete. If AGENTS.md already exists, read it and improve it instead of starting over.`

func runInit(_ context.Context, _ *Session, focus string) (CommandResult, error) {
	if focus != "" {
		return CommandResult{Prompt: initPrompt + "\n\nThe user asks you to focus on: " + focus}, nil
	}
	return CommandResult{Prompt: initPrompt}, nil
}

// runCompact compacts now; the checkpoint's event shows the result.
func runCompact(ctx context.Context, s *Session, focus string) (CommandResult, error) {
	cp, err := s.Compact(ctx, focus)
	switch {
	case errors.Is(err, ErrNothingToCompact):
		return CommandResult{Reply: "There is no conversation to compact yet."}, nil
	case err != nil:
		return CommandResult{}, err
	}
	return CommandResult{Committed: true, Seq: cp.Seq}, nil
}

// runPermissions makes the "always" answers reviewable and revocable: it
// lists the rules in force for the session's project (allow and deny,
// with where they are kept and how they got there) and, as
// "/permissions remove N", forgets the N-th.
func runPermissions(_ context.Context, s *Session, args string) (CommandResult, error) {
	fields := strings.Fields(args)
	switch {
	case len(fields) == 0:
		return CommandResult{Reply: RulesReport(s.Rules().List(), s.Rules().Path())}, nil
	case len(fields) == 2 && (fields[0] == "remove" || fields[0] == "rm"):
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 1 {
			return CommandResult{Reply: fmt.Sprintf("%q is not a rule number; /permissions lists them, numbered from 1", fields[1])}, nil
		}
		return CommandResult{Reply: s.removeRule(n)}, nil
	}
	return CommandResult{Reply: "usage: /permissions (list the remembered rules) or /permissions remove N"}, nil
}

// removeRule forgets the n-th (1-based) rule of the session's project and
// says what happened.
func (s *Session) removeRule(n int) string {
	rs := s.Rules()
	rules := rs.List()
	if n > len(rules) {
		return fmt.Sprintf("There is no rule %d: this project has %d remembered rules (/permissions lists them).", n, len(rules))
	}
	r := rules[n-1]
	removed, err := rs.Remove(r)
	switch {
	case err != nil:
		return fmt.Sprintf("Could not remove rule %d (%s): %v", n, r, err)
	case !removed:
		return fmt.Sprintf("Rule %d (%s) was already gone (another session removed it).", n, r)
	}
	return fmt.Sprintf("Removed rule %d: %s. The next such call is decided by the session's mode again.\n\n%s", n, r, RulesReport(rs.List(), rs.Path()))
}

// RulesReport describes remembered permission rules kept in path.
func RulesReport(rules []permission.Rule, path string) string {
	if len(rules) == 0 {
		return "No remembered permission rules for this project: every call is decided by the session's mode. " +
			"Answering a permission request with \"Always allow\" or \"Always reject\" adds one."
	}
	var b strings.Builder
	b.WriteString("Remembered permission rules for this project (a deny wins over any allow):\n")
	for i, r := range rules {
		verb, from := "deny ", "an \"Always reject\" answer"
		if r.Allow {
			verb, from = "allow", "an \"Always allow\" answer"
		}
		fmt.Fprintf(&b, "%d. %s %s(%s) — from %s\n", i+1, verb, r.Tool, r.Pattern, from)
	}
	fmt.Fprintf(&b, "\nKept in %s, shared by every session of this project. Remove one with /permissions remove N.", path)
	return b.String()
}

// MCPReport describes a session's MCP servers, their state and tools.
func MCPReport(st []mcp.Status) string {
	if len(st) == 0 {
		return "No MCP servers are configured for this session (the editor's settings and the dsh config file's \"mcpServers\" add them)."
	}
	var b strings.Builder
	b.WriteString("MCP servers:\n")
	for _, x := range st {
		fmt.Fprintf(&b, "- %s (%s, from %s): %s", x.Name, x.Describe, x.Source, x.State)
		if x.State == mcp.StateReady {
			fmt.Fprintf(&b, ", %d tools", x.Tools)
		}
		if x.Restarts > 0 {
			fmt.Fprintf(&b, ", restarted %d times", x.Restarts)
		}
		if x.Error != "" {
			b.WriteString(" — " + x.Error)
		}
		if x.Note != "" {
			b.WriteString(" (" + x.Note + ")")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
