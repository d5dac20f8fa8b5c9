package core

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		in, name, args string
		ok             bool
	}{
		{"/compact", "compact", "", true},
		{"  /compact  the parser \n", "compact", "the parser", true},
		{"/permissions remove 2", "permissions", "remove 2", true},
		{"/review:deep x", "review:deep", "x", true},
		{"compact", "", "", false},
		{"/", "", "", false},
		{"/ compact", "", "", false},
		{"/Compact", "", "", false},
		{"/usr/bin/ls is a path", "", "", false},
	} {
		name, args, ok := ParseCommand(c.in)
		if name != c.name || args != c.args || ok != c.ok {
			t.Errorf("ParseCommand(%q) = %q, %q, %v; want %q, %q, %v", c.in, name, args, ok, c.name, c.args, c.ok)
		}
	}
}

// The registry lists the built-ins first, then what a source offers for
// the session; a source cannot shadow a built-in, and an unknown name is
// ErrUnknownCommand so a door passes the text to the model.
func TestCommandsRegistry(t *testing.T) {
	h := newHarness(t)
	rt, s := h.rt, h.session()
	defer s.Close(context.Background())
	if err := rt.Commands().Add(Command{Name: "compact", Run: runInit}); err == nil {
		t.Error("a second /compact was registered")
	}
	if err := rt.Commands().Add(Command{Name: "Bad Name", Run: runInit}); err == nil {
		t.Error("a command named \"Bad Name\" was registered")
	}
	rt.Commands().AddSource(func(got *Session) []Command {
		if got != s {
			t.Errorf("source called for %v", got)
		}
		echo := func(_ context.Context, _ *Session, args string) (CommandResult, error) {
			return CommandResult{Reply: "echo: " + args}, nil
		}
		return []Command{{Name: "zz-echo", Run: echo}, {Name: "mcp", Run: echo}, {Name: "echo", Run: echo}}
	})
	var names []string
	for _, c := range s.Commands() {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, " "), "init mcp permissions compact rewind echo zz-echo"; got != want {
		t.Errorf("commands %q, want %q", got, want)
	}
	res, err := s.RunCommand(context.Background(), "echo", "hi there")
	if err != nil || res.Reply != "echo: hi there" {
		t.Errorf("/echo: %+v, %v", res, err)
	}
	if res, err := s.RunCommand(context.Background(), "mcp", ""); err != nil || !strings.Contains(res.Reply, "No MCP servers") {
		t.Errorf("/mcp was shadowed or failed: %+v, %v", res, err)
	}
	if _, err := s.RunCommand(context.Background(), "nope", ""); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("/nope: %v, want ErrUnknownCommand", err)
	}
	if res, err := s.RunCommand(context.Background(), "init", "tests"); err != nil || !strings.HasSuffix(res.Prompt, "focus on: tests") {
		t.Errorf("/init tests: %+v, %v", res, err)
	}
	if res, err := s.RunCommand(context.Background(), "permissions", "remove x"); err != nil || !strings.Contains(res.Reply, "not a rule number") {
		t.Errorf("/permissions remove x: %+v, %v", res, err)
	}
	if res, err := s.RunCommand(context.Background(), "compact", ""); err != nil || res.Reply != "There is no conversation to compact yet." || res.Committed {
		t.Errorf("/compact of an empty session: %+v, %v", res, err)
	}
}
