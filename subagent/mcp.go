package subagent

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/mcp"
)

// childMCPServers is the parent session's MCP servers as an ACP child's
// session/new carries them, so a child agent reaches the same servers
// (a dsh child merges them with its config file's by name). HTTP and SSE
// servers go only to an agent that advertises them.
func childMCPServers(parent *core.Session, caps acp.McpCapabilities) []acp.McpServer {
	out := []acp.McpServer{}
	if parent == nil {
		return out
	}
	for _, c := range parent.MCPServers() {
		switch c.Transport {
		case mcp.TransportStdio:
			env := []acp.EnvVariable{}
			for _, kv := range c.Env {
				env = append(env, acp.EnvVariable{Name: kv.Name, Value: kv.Value})
			}
			args := append([]string{}, c.Args...)
			out = append(out, acp.McpServer{Stdio: &acp.McpServerStdio{Name: c.Name, Command: c.Command, Args: args, Env: env}})
		case mcp.TransportHTTP:
			if !caps.Http {
				continue
			}
			out = append(out, acp.McpServer{Http: &acp.McpServerHttpInline{Type: "http", Name: c.Name, Url: c.URL, Headers: headers(c.Headers)}})
		case mcp.TransportSSE:
			if !caps.Sse {
				continue
			}
			out = append(out, acp.McpServer{Sse: &acp.McpServerSseInline{Type: "sse", Name: c.Name, Url: c.URL, Headers: headers(c.Headers)}})
		}
	}
	return out
}

func headers(kvs []mcp.KV) []acp.HttpHeader {
	out := []acp.HttpHeader{}
	for _, kv := range kvs {
		out = append(out, acp.HttpHeader{Name: kv.Name, Value: kv.Value})
	}
	return out
}
