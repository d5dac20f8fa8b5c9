package subagent

import (
	"context"
	"net/http/httptest"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/mcp/mcptest"
)

// An ACP child gets its parent's usable MCP servers in session/new: HTTP
// only when it advertises HTTP; refused entries never.
func TestChildMCPServers(t *testing.T) {
	web := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(web.Close)
	h := newHarness(t, hopts{})
	s, err := h.rt.Create(context.Background(), core.SessionOptions{Cwd: h.cwd, MCPServers: []mcp.ServerConfig{
		{Name: "web", Transport: mcp.TransportHTTP, URL: web.URL, Headers: []mcp.KV{{Name: "X-K", Value: "v"}}},
		{Name: "local", Transport: mcp.TransportStdio, Command: "dsh-no-such-server", Env: []mcp.KV{{Name: "A", Value: "1"}}},
		{Name: "bad", Transport: mcp.TransportStdio},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	got := childMCPServers(s, acp.McpCapabilities{Http: true})
	if len(got) != 2 || got[0].Stdio == nil || got[0].Stdio.Name != "local" || got[0].Stdio.Env[0].Value != "1" ||
		got[1].Http == nil || got[1].Http.Url != web.URL || got[1].Http.Headers[0].Name != "X-K" {
		t.Fatalf("servers for an http-capable child: %+v", got)
	}
	if got := childMCPServers(s, acp.McpCapabilities{}); len(got) != 1 || got[0].Stdio == nil {
		t.Fatalf("a stdio-only child gets only stdio servers: %+v", got)
	}
	if got := childMCPServers(nil, acp.McpCapabilities{}); got == nil || len(got) != 0 {
		t.Fatal("no parent: an empty list, never null")
	}
}
