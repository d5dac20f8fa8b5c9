package acp

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/mcp/mcptest"
)

func httpMCP(name, url string) sdk.McpServer {
	return sdk.McpServer{Http: &sdk.McpServerHttpInline{Name: name, Url: url, Type: "http", Headers: []sdk.HttpHeader{}}}
}

// waitMCPReady waits for the committed mcp/server event of that server
// being ready.
func waitMCPReady(t *testing.T, sub *core.Subscription, server string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("server %s never became ready: %v", server, err)
		}
		if n.Kind != core.NoticeEvent || n.Event.Type != event.TypeMCPServer {
			continue
		}
		if d, _ := event.Decode[event.MCPServer](n.Event); d.Server == server && d.State == "ready" {
			return
		}
	}
}

// session/load of a session live in this process connects the servers the
// client sends that the session does not have, and keeps those it has.
func TestLoadOfALiveSessionAddsItsNewMCPServers(t *testing.T) {
	web := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(web.Close)
	other := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(other.Close)
	h := start(t, hopts{})
	h.initialize(sdk.ClientCapabilities{})
	ns, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	sub := h.rt.Subscribe()
	defer sub.Close()
	load := func(servers ...sdk.McpServer) {
		t.Helper()
		if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h.cwd, McpServers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	load(httpMCP("web", web.URL))
	waitMCPReady(t, sub, "web")
	load(httpMCP("web", other.URL), httpMCP("docs", other.URL))
	waitMCPReady(t, sub, "docs")
	st := h.rt.Get(string(ns.SessionId)).MCPStatus()
	if len(st) != 2 || st[0].Name != "docs" || st[1].Name != "web" || st[1].State != mcp.StateReady || !strings.Contains(st[1].Describe, web.URL) {
		t.Errorf("after two loads: %+v (web must stay on %s)", st, web.URL)
	}
}

// A server's death, restart and failure are told in the chat; its other
// reports are not.
func TestMCPNotices(t *testing.T) {
	for _, c := range []struct {
		ev   event.MCPServer
		want string
	}{
		{event.MCPServer{Server: "t", State: "ready", Tools: 3}, ""},
		{event.MCPServer{Server: "t", State: "restarting", Error: "stopped working: the process ended: signal: killed"},
			`⚠ MCP server "t" stopped working: the process ended: signal: killed; restarting it.`},
		{event.MCPServer{Server: "t", State: "ready", Tools: 3, Restarts: 1}, `MCP server "t" was restarted (3 tools).`},
		{event.MCPServer{Server: "t", State: "ready", Tools: 3, Late: true}, `MCP server "t" is ready (3 tools); its tools join at the next turn.`},
		{event.MCPServer{Server: "t", State: "failed", Error: "died and was not restarted"},
			`⚠ MCP server "t" is not available: died and was not restarted. The session goes on without it.`},
	} {
		if got := mcpNotice(c.ev); got != c.want {
			t.Errorf("%+v: %q, want %q", c.ev, got, c.want)
		}
	}
}
