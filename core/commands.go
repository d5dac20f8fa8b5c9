package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/dsh-dev/dsh/core/event"
)

// Slash commands are product operations a user types as a whole prompt
// ("/compact focus on the parser"). They live in core, not in a door, so
// every door offers the same ones: a door lists Session.Commands (ACP's
// available_commands_update), recognises a prompt with ParseCommand and
// runs it with Session.RunCommand, then shows the result its own way.
//
// The registry is deliberately small: a Command is a name, a description
// and a Run function. Built-ins are added when the runtime starts; later
// features add theirs with Commands.Add (a fixed command) or
// Commands.AddSource (commands that depend on the session, such as a
// project's own command files).

// Command is one slash command.
type Command struct {
	// Name is the command without its slash: lower-case letters, digits,
	// '-', '_', ':' and '.'.
	Name string
	// Description says what it does, in one line, for a client's menu.
	Description string
	// Hint describes its argument text; "" when it takes none.
	Hint string
	// Run executes the command for a session with the text after its name
	// (trimmed). A bad argument is a Reply saying so, not an error; an
	// error is a failure of the operation (a door maps it to its wire).
	// ctx is the request's: cancelling it cancels the command, and Run
	// then returns an error matching context.Canceled.
	Run func(ctx context.Context, s *Session, args string) (CommandResult, error)
}

// CommandResult is what a command did.
type CommandResult struct {
	// Reply is text dsh answers itself (Markdown), shown as the agent's
	// message; the model never sees it.
	Reply string
	// Prompt, when set, is sent to the model in place of the command text,
	// as the user's prompt of a normal turn (/init).
	Prompt string
	// Turn, with a Prompt, is what the command asks of the turn that
	// prompt starts (a command file's model and allowed-tools); a door
	// sends the prompt with Session.PromptWith(…, PromptOptions{Command:
	// Turn}).
	Turn *event.CommandTurn
	// Committed says the command committed events to the session's log
	// (a compaction's checkpoint); Seq is the last of them. A door shows
	// them before it answers.
	Committed bool
	Seq       int64
}

// ErrUnknownCommand is returned by RunCommand for a name no command has.
var ErrUnknownCommand = errors.New("unknown command")

// Commands is the registry of slash commands of one runtime.
type Commands struct {
	mu      sync.Mutex
	fixed   []Command
	sources []func(*Session) []Command
}

// Add registers a command. The name must be valid and not taken by
// another fixed command.
func (c *Commands) Add(cmd Command) error {
	if !validCommandName(cmd.Name) {
		return fmt.Errorf("command name %q: want lower-case letters, digits, '-', '_', ':' or '.'", cmd.Name)
	}
	if cmd.Run == nil {
		return fmt.Errorf("command %q has no Run", cmd.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.fixed {
		if x.Name == cmd.Name {
			return fmt.Errorf("command %q is already registered", cmd.Name)
		}
	}
	c.fixed = append(c.fixed, cmd)
	return nil
}

// AddSource registers commands that depend on the session (its project's
// command files, say). src is called each time a session's commands are
// listed or run, so it sees files that changed; it must be quick and safe
// for concurrent use. A source's command whose name is invalid or already
// taken (by a fixed command or an earlier source) is left out.
func (c *Commands) AddSource(src func(*Session) []Command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, src)
}

// fixedNames are the names of the fixed commands (the built-ins win over
// a source's command of the same name).
func (c *Commands) fixedNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.fixed))
	for i, x := range c.fixed {
		out[i] = x.Name
	}
	return out
}

// forSession lists the commands of s: the fixed ones in the order they were
// added, then each source's, sorted by name.
func (c *Commands) forSession(s *Session) []Command {
	c.mu.Lock()
	out := slices.Clone(c.fixed)
	sources := slices.Clone(c.sources)
	c.mu.Unlock()
	taken := make(map[string]bool, len(out))
	for _, x := range out {
		taken[x.Name] = true
	}
	for _, src := range sources {
		more := src(s)
		slices.SortFunc(more, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
		for _, x := range more {
			if taken[x.Name] || !validCommandName(x.Name) || x.Run == nil {
				continue
			}
			taken[x.Name] = true
			out = append(out, x)
		}
	}
	return out
}

func validCommandName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == ':' || r == '.') {
			return false
		}
	}
	return true
}

// ParseCommand splits a prompt text that is a slash command into its name
// and argument text: "/compact  the parser" is ("compact", "the parser").
// Leading white space is allowed; the name ends at white space. ok is
// false for text that does not start with '/' followed by a name.
func ParseCommand(text string) (name, args string, ok bool) {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	rest, found := strings.CutPrefix(t, "/")
	if !found {
		return "", "", false
	}
	end := strings.IndexFunc(rest, unicode.IsSpace)
	if end < 0 {
		end = len(rest)
	}
	name = rest[:end]
	if !validCommandName(name) {
		return "", "", false
	}
	return name, strings.TrimSpace(rest[end:]), true
}

// Commands returns the runtime's command registry.
func (r *Runtime) Commands() *Commands { return r.commands }

// Commands lists the slash commands this session offers.
func (s *Session) Commands() []Command { return s.rt.commands.forSession(s) }

// RunCommand runs the session's command name with args. A name the
// session has no command for is ErrUnknownCommand (a door then treats
// the text as an ordinary prompt).
func (s *Session) RunCommand(ctx context.Context, name, args string) (CommandResult, error) {
	for _, c := range s.Commands() {
		if c.Name == name {
			return c.Run(ctx, s, args)
		}
	}
	return CommandResult{}, fmt.Errorf("/%s: %w", name, ErrUnknownCommand)
}
