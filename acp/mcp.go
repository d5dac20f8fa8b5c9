package acp

import (
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// mcpCapabilities are the MCP transports dsh connects to besides stdio
// (which every agent must support).
func mcpCapabilities() sdk.McpCapabilities { return sdk.McpCapabilities{Http: true, Sse: true} }

// mcpServers turns a session request's mcpServers into core's form. An
// entry dsh cannot use (an MCP-over-ACP server, an empty entry) is kept
// with Invalid set, so the user is told about it rather than it vanishing.
func mcpServers(in []sdk.McpServer) []core.MCPServerConfig {
	out := make([]core.MCPServerConfig, 0, len(in))
	for i, s := range in {
		c := core.MCPServerConfig{Source: "acp"}
		switch {
		case s.Stdio != nil:
			c.Name, c.Transport, c.Command, c.Args = s.Stdio.Name, core.MCPStdio, s.Stdio.Command, s.Stdio.Args
			for _, e := range s.Stdio.Env {
				c.Env = append(c.Env, core.KV{Name: e.Name, Value: e.Value})
			}
		case s.Http != nil:
			c.Name, c.Transport, c.URL = s.Http.Name, core.MCPHTTP, s.Http.Url
			c.Headers = headers(s.Http.Headers)
		case s.Sse != nil:
			c.Name, c.Transport, c.URL = s.Sse.Name, core.MCPSSE, s.Sse.Url
			c.Headers = headers(s.Sse.Headers)
		case s.Acp != nil:
			c.Name = s.Acp.Name
			c.Invalid = fmt.Sprintf("server %q: MCP over ACP is not supported (not advertised)", s.Acp.Name)
		default:
			c.Invalid = fmt.Sprintf("mcpServers[%d]: neither a stdio, http nor sse server", i)
		}
		out = append(out, c)
	}
	return out
}

func headers(hs []sdk.HttpHeader) []core.KV {
	var out []core.KV
	for _, h := range hs {
		out = append(out, core.KV{Name: h.Name, Value: h.Value})
	}
	return out
}

// withMCP adds the request's servers to a session's options.
func withMCP(o core.SessionOptions, servers []sdk.McpServer) core.SessionOptions {
	o.MCPServers = mcpServers(servers)
	return o
}

// addMCP connects the servers a client sent when it reopened a session
// that is live in this process; those it has already are kept.
func addMCP(s *core.Session, servers []sdk.McpServer) {
	s.AddMCPServers(mcpServers(servers))
}

// mcpFailures is the chat message telling the user which of the session's
// MCP servers failed, or "" when none did.
func mcpFailures(s *core.Session) string {
	var lines []string
	for _, st := range s.MCPStatus() {
		if st.State == core.MCPFailed {
			lines = append(lines, mcpFailureLine(st.Name, st.Error))
		}
	}
	return strings.Join(lines, "\n")
}

// mcpNotice is the chat line for a server's mcp/server event, or "" for
// one the user need not be told of: a failure, a death and its restart,
// a server that became ready after the session opened.
func mcpNotice(m event.MCPServer) string {
	switch {
	case m.State == string(core.MCPFailed):
		return mcpFailureLine(m.Server, m.Error)
	case m.State == string(core.MCPRestarting):
		return fmt.Sprintf("⚠ MCP server %q %s; restarting it.", m.Server, m.Error)
	case m.State == string(core.MCPReady) && m.Restarts > 0:
		return fmt.Sprintf("MCP server %q was restarted (%d tools).", m.Server, m.Tools)
	case m.State == string(core.MCPReady) && m.Late:
		return fmt.Sprintf("MCP server %q is ready (%d tools); its tools join at the next turn.", m.Server, m.Tools)
	}
	return ""
}

func mcpFailureLine(name, why string) string {
	return fmt.Sprintf("⚠ MCP server %q is not available: %s. The session goes on without it.", name, why)
}
