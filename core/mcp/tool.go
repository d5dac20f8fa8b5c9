package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/core/tool"
)

// Bounds of what one tool adds to every request.
const (
	maxDescription = 2 << 10
	maxSchema      = 16 << 10
)

// Hints are a tool's MCP annotations: what its server says it does. They
// are hints, not guarantees; a server is as trusted as the user who
// configured it.
type Hints struct {
	ReadOnly    bool
	Destructive bool // meaningful when not ReadOnly; MCP's default is true
	Idempotent  bool
	OpenWorld   bool // MCP's default is true
	Title       string
}

// boundTool turns a listed tool into what the model will see, within the
// bounds; note says what was cut.
func boundTool(t *sdk.Tool) (remoteTool, string) {
	rt := remoteTool{name: t.Name, title: t.Title, hints: Hints{Destructive: true, OpenWorld: true}}
	if a := t.Annotations; a != nil {
		rt.hints.ReadOnly, rt.hints.Idempotent, rt.hints.Title = a.ReadOnlyHint, a.IdempotentHint, a.Title
		if a.DestructiveHint != nil {
			rt.hints.Destructive = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			rt.hints.OpenWorld = *a.OpenWorldHint
		}
		if rt.title == "" {
			rt.title = a.Title
		}
	}
	var notes []string
	desc := strings.TrimSpace(strings.ToValidUTF8(t.Description, ""))
	if len(desc) > maxDescription {
		desc = short(desc, maxDescription)
		notes = append(notes, fmt.Sprintf("the description of %s was cut to %d bytes", t.Name, maxDescription))
	}
	schema, required, err := normSchema(t.InputSchema)
	if err != nil {
		notes = append(notes, fmt.Sprintf("the input schema of %s was left out: %v", t.Name, err))
		desc += fmt.Sprintf("\n(The server's input schema for this tool was left out: %v. Pass the arguments the description asks for.)", err)
	}
	rt.desc, rt.schema, rt.required = desc, schema, required
	return rt, strings.Join(notes, "; ")
}

// normSchema makes a server's input schema byte-stable (keys sorted, as
// encoding/json writes maps) and bounded. A schema that is not an object
// schema, or is too large, becomes the open object schema.
func normSchema(in any) ([]byte, []string, error) {
	open := []byte(`{"properties":{},"type":"object"}`)
	raw, err := json.Marshal(in)
	if err != nil {
		return open, nil, fmt.Errorf("not JSON: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return open, nil, errors.New("not a JSON object")
	}
	if t, ok := m["type"]; !ok {
		m["type"] = "object"
	} else if t != "object" {
		return open, nil, fmt.Errorf("type is %v, not object", t)
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return open, nil, err
	}
	if len(out) > maxSchema {
		return open, nil, fmt.Errorf("%d KiB, over the limit of %d KiB", len(out)>>10, maxSchema>>10)
	}
	var required []string
	if rs, ok := m["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				required = append(required, s)
			}
		}
	}
	sort.Strings(required)
	return out, required, nil
}

// Tool is one MCP server's tool as the model sees it.
type Tool struct {
	server *server
	name   string
	remote remoteTool
}

var _ tool.Tool = (*Tool)(nil)

// Name is the model-facing name: mcp__<server>__<tool>, sanitised.
func (t *Tool) Name() string { return t.name }

// Description is the server's description, bounded.
func (t *Tool) Description() string {
	if t.remote.desc != "" {
		return t.remote.desc
	}
	return fmt.Sprintf("The %s tool of the MCP server %s.", t.remote.name, t.server.cfg.Name)
}

// Schema is the server's input schema, bounded and byte-stable.
func (t *Tool) Schema() json.RawMessage { return t.remote.schema }

// Kind is KindMCPRead when the server marks the tool read-only, else
// KindMCP: the permission gate treats them as the rules say.
func (t *Tool) Kind() tool.Kind {
	if t.remote.hints.ReadOnly {
		return tool.KindMCPRead
	}
	return tool.KindMCP
}

// ParallelSafe reports whether calls may run at once: read-only tools may.
func (t *Tool) ParallelSafe() bool { return t.remote.hints.ReadOnly }

// Server is the name of the tool's server, as configured.
func (t *Tool) Server() string { return t.server.cfg.Name }

// RemoteName is the tool's name on its server.
func (t *Tool) RemoteName() string { return t.remote.name }

// Hints are the tool's annotations.
func (t *Tool) Hints() Hints { return t.remote.hints }

// Title is a human title: "<server>: <tool title>".
func (t *Tool) Title() string {
	title := t.remote.title
	if title == "" {
		title = t.remote.name
	}
	return t.server.cfg.Name + ": " + title
}

// Inspect checks the arguments against the schema's required fields; the
// server validates the rest.
func (t *Tool) Inspect(args json.RawMessage, env *tool.Env) (tool.Access, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return tool.Access{}, errors.New("the arguments must be a JSON object")
	}
	var missing []string
	for _, r := range t.remote.required {
		if _, ok := obj[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return tool.Access{}, fmt.Errorf("missing required argument(s) %s for %s", strings.Join(missing, ", "), t.name)
	}
	return tool.Access{Title: t.Title()}, nil
}

// Run calls the tool on its server. Cancelling ctx sends
// notifications/cancelled and returns at once. A call to a server being
// restarted waits for it; a call that an HTTP server refused because it
// no longer knew the session (it never ran) is sent again once, on the
// reconnected session.
func (t *Tool) Run(ctx context.Context, args json.RawMessage, env *tool.Env) tool.Result {
	ctx, cancel := context.WithTimeout(ctx, t.server.set.opts.CallTimeout)
	defer cancel()
	for try := 0; ; try++ {
		cs, p, err := t.server.session(ctx)
		if err != nil {
			return tool.ErrorResult(fmt.Sprintf("%s cannot run: %v", t.name, err))
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.remote.name, Arguments: args})
		if err != nil && try == 0 && errors.Is(err, sdk.ErrSessionMissing) && ctx.Err() == nil {
			t.server.died(cs, "the server no longer knows the session: "+err.Error())
			continue
		}
		if err != nil {
			return tool.ErrorResult(t.callError(ctx, p, err))
		}
		return convertResult(res, env, t)
	}
}

// callError words a failed call for the model; p is the server's process
// the call went to (nil over HTTP).
func (t *Tool) callError(ctx context.Context, p *stdioProc, err error) string {
	server := t.server.cfg.Name
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("the MCP server %s did not answer %s within %s; the call was cancelled", server, t.remote.name, t.server.set.opts.CallTimeout)
	case ctx.Err() != nil:
		return fmt.Sprintf("the call to %s on the MCP server %s was cancelled", t.remote.name, server)
	case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF):
		why := "its connection closed"
		if p != nil && p.exitedWithin(time.Second) {
			why = p.exitText()
		}
		return fmt.Sprintf("the MCP server %s stopped during the call to %s (%s); the call's outcome is unknown, and the server is restarted if its restart limit allows", server, t.remote.name, why)
	}
	return fmt.Sprintf("the MCP server %s failed the call to %s: %v", server, t.remote.name, err)
}
