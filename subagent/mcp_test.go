package subagent

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
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

// A dsh sdk child process gets its parent session's MCP servers in
// initialize, and its model's call to one of their tools runs.
func TestSDKChildReachesParentMCPServers(t *testing.T) {
	web := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(web.Close)
	h := newHarness(t, hopts{config: dshConfig})
	needDoor(t, h, "sdk-cold")
	p, err := h.rt.Create(context.Background(), core.SessionOptions{Cwd: h.cwd, MCPServers: []mcp.ServerConfig{
		{Name: "web", Transport: mcp.TransportHTTP, URL: web.URL, Source: "acp"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	rec := newRecorder()
	r := h.call(context.Background(), p, rec, dshArgs("sdk-cold", "CHILD-MCP go"))
	if r.IsError || !strings.HasPrefix(resultText(r), "mcp done") {
		t.Fatalf("child: %v %q", r.IsError, resultText(r))
	}
	st, _ := event.Decode[event.SubagentStart](rec.of(event.TypeSubagentStart)[0])
	_, evs, err := h.rt.Store().Read(st.ChildSessionID)
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	for _, ev := range evs {
		if ev.Type == event.TypeToolResult && strings.Contains(string(ev.Data), "echo: through the parent's server") {
			ran = true
		}
	}
	if !ran {
		t.Fatal("the child's call to the parent's MCP server did not run")
	}
}
