package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/tool"
)

// promptListWait bounds how long listing a session's commands waits for
// its MCP servers' prompts.
const promptListWait = 3 * time.Second

// mcpPromptCommands is the command source of the session's MCP servers:
// each prompt is /mcp__<server>__<prompt>, its arguments filled in order
// from the words typed after it (the last takes the rest).
func mcpPromptCommands(s *Session) []Command {
	if s.mcp == nil || s.mcp.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), promptListWait)
	defer cancel()
	prompts, err := s.mcp.Prompts(ctx)
	if err != nil {
		s.rt.warnOnce("MCP prompts not listed", "session", s.id, "err", err)
	}
	out := make([]Command, 0, len(prompts))
	for _, p := range prompts {
		var hint []string
		for _, a := range p.Args {
			if a.Required {
				hint = append(hint, "<"+a.Name+">")
			} else {
				hint = append(hint, "["+a.Name+"]")
			}
		}
		desc := p.Description
		if desc == "" {
			desc = "prompt " + p.Name
		}
		out = append(out, Command{Name: "mcp__" + commandWord(p.Server) + "__" + commandWord(p.Name),
			Description: desc + " (MCP server " + p.Server + ")", Hint: strings.Join(hint, " "),
			Run: func(ctx context.Context, s *Session, args string) (CommandResult, error) {
				return runMCPPrompt(ctx, s, p, args)
			}})
	}
	return out
}

// commandWord is a name as a slash command can carry it: lower case,
// anything but letters, digits, - _ . as '_'.
func commandWord(n string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, n)
}

func runMCPPrompt(ctx context.Context, s *Session, p mcp.Prompt, args string) (CommandResult, error) {
	words := strings.Fields(args)
	vals := map[string]string{}
	for i, a := range p.Args {
		if i >= len(words) {
			if a.Required {
				return CommandResult{Reply: fmt.Sprintf("/mcp__%s__%s needs %s: give the arguments in order (%s)",
					commandWord(p.Server), commandWord(p.Name), a.Name, argNames(p.Args))}, nil
			}
			continue
		}
		v := words[i]
		if i == len(p.Args)-1 {
			v = strings.Join(words[i:], " ")
		}
		vals[a.Name] = v
	}
	text, err := s.mcp.GetPrompt(ctx, p.Server, p.Name, vals)
	if err != nil {
		return CommandResult{}, err
	}
	return CommandResult{Prompt: text}, nil
}

func argNames(as []mcp.PromptArg) string {
	var n []string
	for _, a := range as {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

// ReadResource reads an MCP resource of the session by URI (an ACP
// resource link naming one): the server that had it and its text.
func (s *Session) ReadResource(ctx context.Context, uri string) (string, string, error) {
	if s.mcp == nil || !s.mcp.HasResources() {
		return "", "", fmt.Errorf("%w: no MCP server of this session offers resources", ErrNotFound)
	}
	return s.mcp.ReadResource(ctx, "", uri)
}

// resourceTools are the model's two tools over the MCP servers'
// resources, offered while a server has resources.
func resourceTools(set *mcp.Set) []tool.Tool {
	return []tool.Tool{listResourcesTool{set}, readResourceTool{set}}
}

type listResourcesTool struct{ set *mcp.Set }

func (listResourcesTool) Name() string { return "list_mcp_resources" }
func (listResourcesTool) Description() string {
	return "List the resources (files, records, documents) the MCP servers of this session offer: each with its server, URI, name and type. Read one with read_mcp_resource."
}
func (listResourcesTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"Only this server's resources (default: every server's)"}},"additionalProperties":false}`)
}
func (listResourcesTool) Kind() tool.Kind    { return tool.KindMCPRead }
func (listResourcesTool) ParallelSafe() bool { return true }
func (listResourcesTool) Inspect(raw json.RawMessage, _ *tool.Env) (tool.Access, error) {
	var a struct {
		Server string `json:"server"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Access{}, fmt.Errorf("want {\"server\": \"...\"} or {}: %v", err)
	}
	return tool.Access{Title: "List MCP resources"}, nil
}
func (t listResourcesTool) Run(ctx context.Context, raw json.RawMessage, _ *tool.Env) tool.Result {
	var a struct {
		Server string `json:"server"`
	}
	_ = json.Unmarshal(raw, &a)
	rs, err := t.set.Resources(ctx, a.Server)
	if err != nil && len(rs) == 0 {
		return tool.ErrorResult(err.Error())
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "- server=%s uri=%s name=%q", r.Server, r.URI, r.Name)
		if r.MIMEType != "" {
			b.WriteString(" type=" + r.MIMEType)
		}
		if r.Description != "" {
			b.WriteString(" — " + r.Description)
		}
		b.WriteByte('\n')
	}
	if len(rs) == 0 {
		b.WriteString("No resources.")
	}
	if err != nil {
		b.WriteString("\n(some servers did not answer: " + err.Error() + ")")
	}
	return tool.TextResult(b.String())
}

type readResourceTool struct{ set *mcp.Set }

type readResourceArgs struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

func (readResourceTool) Name() string { return "read_mcp_resource" }
func (readResourceTool) Description() string {
	return "Read one resource of an MCP server of this session by its URI (as list_mcp_resources gives it)."
}
func (readResourceTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"The server that lists the resource"},"uri":{"type":"string","description":"The resource's URI"}},"required":["uri"],"additionalProperties":false}`)
}
func (readResourceTool) Kind() tool.Kind    { return tool.KindMCPRead }
func (readResourceTool) ParallelSafe() bool { return true }
func (readResourceTool) Inspect(raw json.RawMessage, _ *tool.Env) (tool.Access, error) {
	var a readResourceArgs
	if err := json.Unmarshal(raw, &a); err != nil || strings.TrimSpace(a.URI) == "" {
		return tool.Access{}, fmt.Errorf("want {\"uri\": \"...\", \"server\": \"...\"}")
	}
	return tool.Access{Title: "Read MCP resource " + a.URI}, nil
}
func (t readResourceTool) Run(ctx context.Context, raw json.RawMessage, _ *tool.Env) tool.Result {
	var a readResourceArgs
	_ = json.Unmarshal(raw, &a)
	server, text, err := t.set.ReadResource(ctx, a.Server, a.URI)
	if err != nil {
		return tool.ErrorResult(err.Error())
	}
	return tool.TextResult(fmt.Sprintf("[resource server=%s uri=%s]\n%s", server, a.URI, text))
}
