package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of prompts and resources.
const (
	// listTimeout bounds one prompts/list or resources/list.
	listTimeout = 5 * time.Second
	// maxListed bounds the prompts or resources taken from one server.
	maxListed = 500
	// maxResourceText bounds what a read or a prompt returns.
	maxResourceText = 256 << 10
)

// Prompt is a server's prompt (a slash command to the user).
type Prompt struct {
	Server      string
	Name        string
	Description string
	Args        []PromptArg
}

// PromptArg is one argument of a prompt.
type PromptArg struct {
	Name     string
	Required bool
}

// Resource is one resource a server lists.
type Resource struct {
	Server, URI, Name, Description, MIMEType string
	Size                                     int64
}

// ready are the set's ready servers with their live sessions.
func (s *Set) ready() []readyServer {
	if s == nil {
		return nil
	}
	var out []readyServer
	for _, sv := range s.list() {
		sv.mu.Lock()
		cs, ok := sv.cs, sv.state == StateReady
		sv.mu.Unlock()
		if ok && cs != nil {
			out = append(out, readyServer{sv.cfg.Name, cs})
		}
	}
	return out
}

type readyServer struct {
	name string
	cs   *sdk.ClientSession
}

func caps(cs *sdk.ClientSession) *sdk.ServerCapabilities {
	if r := cs.InitializeResult(); r != nil {
		return r.Capabilities
	}
	return nil
}

// Prompts lists the prompts of the ready servers that offer them; a
// server that fails to list is skipped (its error is returned joined).
func (s *Set) Prompts(ctx context.Context) ([]Prompt, error) {
	var out []Prompt
	var errs []error
	for _, r := range s.ready() {
		if c := caps(r.cs); c == nil || c.Prompts == nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		n := 0
		for p, err := range r.cs.Prompts(lctx, nil) {
			if err != nil {
				errs = append(errs, fmt.Errorf("server %q: prompts/list: %w", r.name, err))
				break
			}
			if n++; n > maxListed {
				break
			}
			pr := Prompt{Server: r.name, Name: p.Name, Description: p.Description}
			for _, a := range p.Arguments {
				pr.Args = append(pr.Args, PromptArg{Name: a.Name, Required: a.Required})
			}
			out = append(out, pr)
		}
		cancel()
	}
	return out, errors.Join(errs...)
}

// GetPrompt runs a server's prompt and returns its messages as text (an
// embedded text resource is included; other content is named only).
func (s *Set) GetPrompt(ctx context.Context, server, name string, args map[string]string) (string, error) {
	cs, err := s.sessionOf(ctx, server)
	if err != nil {
		return "", err
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("server %q: prompt %q: %w", server, name, err)
	}
	var b strings.Builder
	for _, m := range res.Messages {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(contentText(m.Content))
	}
	return bound(b.String()), nil
}

func contentText(c sdk.Content) string {
	switch x := c.(type) {
	case *sdk.TextContent:
		return x.Text
	case *sdk.EmbeddedResource:
		if x.Resource != nil && x.Resource.Blob == nil {
			return "[resource " + x.Resource.URI + "]\n" + x.Resource.Text + "\n[/resource]"
		}
		if x.Resource != nil {
			return "[binary resource " + x.Resource.URI + " not shown]"
		}
	case *sdk.ResourceLink:
		return "[resource_link " + x.URI + "]"
	case *sdk.ImageContent:
		return "[image not shown]"
	case *sdk.AudioContent:
		return "[audio not shown]"
	}
	return "[content not shown]"
}

func bound(s string) string {
	if len(s) <= maxResourceText {
		return s
	}
	return strings.ToValidUTF8(s[:maxResourceText], "") + fmt.Sprintf("\n[cut: %d bytes in all]", len(s))
}

// sessionOf is the live session of the named server.
func (s *Set) sessionOf(ctx context.Context, server string) (*sdk.ClientSession, error) {
	if s != nil {
		for _, sv := range s.list() {
			if sv.cfg.Name == server {
				cs, _, err := sv.session(ctx)
				return cs, err
			}
		}
	}
	return nil, fmt.Errorf("no MCP server %q in this session", server)
}

// HasResources reports whether a ready server offers resources.
func (s *Set) HasResources() bool {
	for _, r := range s.ready() {
		if c := caps(r.cs); c != nil && c.Resources != nil {
			return true
		}
	}
	return false
}

// Resources lists the resources of the ready servers (of server only,
// when named).
func (s *Set) Resources(ctx context.Context, server string) ([]Resource, error) {
	var out []Resource
	var errs []error
	found := server == ""
	for _, r := range s.ready() {
		if server != "" && r.name != server {
			continue
		}
		found = true
		if c := caps(r.cs); c == nil || c.Resources == nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		n := 0
		for x, err := range r.cs.Resources(lctx, nil) {
			if err != nil {
				errs = append(errs, fmt.Errorf("server %q: resources/list: %w", r.name, err))
				break
			}
			if n++; n > maxListed {
				break
			}
			out = append(out, Resource{Server: r.name, URI: x.URI, Name: x.Name, Description: x.Description, MIMEType: x.MIMEType, Size: x.Size})
		}
		cancel()
	}
	if !found {
		return nil, fmt.Errorf("no ready MCP server %q in this session", server)
	}
	return out, errors.Join(errs...)
}

// ReadResource reads a resource by URI from server ("" : the first ready
// server that lists it, else each server offering resources in turn).
func (s *Set) ReadResource(ctx context.Context, server, uri string) (string, string, error) {
	servers := []string{server}
	if server == "" {
		servers = nil
		for _, r := range s.ready() {
			if c := caps(r.cs); c != nil && c.Resources != nil {
				servers = append(servers, r.name)
			}
		}
	}
	var errs []error
	for _, name := range servers {
		cs, err := s.sessionOf(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			errs = append(errs, fmt.Errorf("server %q: %w", name, err))
			continue
		}
		var b strings.Builder
		for _, c := range res.Contents {
			if c.Blob != nil {
				fmt.Fprintf(&b, "[binary content %s (%s, %d bytes) not shown]\n", c.URI, c.MIMEType, len(c.Blob))
				continue
			}
			b.WriteString(c.Text)
		}
		return name, bound(b.String()), nil
	}
	if len(errs) == 0 {
		return "", "", fmt.Errorf("no MCP server of this session offers resources")
	}
	return "", "", errors.Join(errs...)
}
