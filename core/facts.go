package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/tool"
)

// A tool call's facts (title, kind, paths; event.ToolFacts) are computed
// once, by core, when the call is committed, and recorded in its tool/call
// event. Every door shows them from there: none calls a tool's Inspect or
// has to survive one that panics.
//
// The permission gate inspects the call again just before it decides
// (prepare): an earlier call of the same step may have changed what a path
// resolves to, and the decision must follow the filesystem as it is when
// the call runs, not as it was when the model asked.

// callFacts inspects a call as the model wrote it. A call no tool answers,
// or whose arguments the tool refuses, gets the tool's name as title and no
// paths; a tool whose Inspect panics is logged and treated the same.
func (s *Session) callFacts(name, args string, env *tool.Env) event.ToolFacts {
	t, _ := s.resolveTool(name)
	if t == nil {
		return event.ToolFacts{Title: name, Kind: event.ToolKindOther}
	}
	f := event.ToolFacts{Title: t.Name(), Kind: displayKind(t)}
	raw := strings.TrimSpace(args)
	if raw == "" {
		raw = "{}"
	}
	acc, err := s.inspect(t, json.RawMessage(raw), env)
	if err != nil {
		return f
	}
	if acc.Title != "" {
		f.Title = acc.Title
	}
	f.Paths = acc.Paths
	return f
}

// inspect runs t's Inspect; a panic is logged and becomes an error (the
// call is then refused as having arguments the tool cannot read).
func (s *Session) inspect(t tool.Tool, args json.RawMessage, env *tool.Env) (acc tool.Access, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.rt.log.Error("tool Inspect panicked", "session", s.id, "tool", t.Name(), "panic", v)
			acc, err = tool.Access{}, fmt.Errorf("the %s tool failed to read its arguments: %v", t.Name(), v)
		}
	}()
	return t.Inspect(args, env)
}

// displayKind is what a tool's calls do in the doors' vocabulary: by name
// for the built-ins whose class says too little (glob and grep search,
// todo_write thinks, web_fetch fetches), by an MCP tool's hints, else by
// its permission class.
func displayKind(t tool.Tool) string {
	switch t.Name() {
	case "glob", "grep":
		return event.ToolKindSearch
	case "todo_write":
		return event.ToolKindThink
	case "web_fetch":
		return event.ToolKindFetch
	}
	if mt, ok := t.(*mcp.Tool); ok {
		h := mt.Hints()
		switch {
		case h.ReadOnly && h.OpenWorld:
			return event.ToolKindFetch
		case h.ReadOnly:
			return event.ToolKindRead
		}
		return event.ToolKindOther
	}
	switch t.Kind() {
	case tool.KindRead:
		return event.ToolKindRead
	case tool.KindMutate:
		return event.ToolKindEdit
	case tool.KindExecute:
		return event.ToolKindExecute
	}
	return event.ToolKindOther
}

// ToolFacts returns the facts of a committed call: those recorded with
// it, or, for a call from a log written before facts were recorded, the
// facts computed now from the session's tools (once per read; the log is
// not rewritten). A door projects calls through it.
func (s *Session) ToolFacts(tc event.ToolCall) event.ToolFacts {
	if tc.Facts != nil {
		return *tc.Facts
	}
	return s.callFacts(tc.Tool(), tc.Arguments, &tool.Env{SessionID: s.id, CallID: tc.CallID, Cwd: s.Cwd()})
}

// preview is the permission request's Preview of a call of t, or nil when
// t cannot preview its changes. A panicking preview is logged: no diff.
func (s *Session) preview(t tool.Tool, args json.RawMessage, env *tool.Env) func(context.Context) *event.Diff {
	pv, ok := t.(tool.Previewer)
	if !ok {
		return nil
	}
	return func(ctx context.Context) (d *event.Diff) {
		defer func() {
			if v := recover(); v != nil {
				s.rt.log.Error("tool Preview panicked", "session", s.id, "tool", t.Name(), "panic", v)
				d = nil
			}
		}()
		d, err := pv.Preview(ctx, args, env)
		if err != nil {
			return nil
		}
		return d
	}
}
