package core

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/mcp/mcptest"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
)

func toolNames(specs []model.ToolSpec) string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return strings.Join(out, " ")
}

// waitMCP waits for the session's mcp/server event of that server with
// that tool count.
func waitMCP(t *testing.T, sub *Subscription, server string, tools int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no mcp/server event for %s with %d tools: %v", server, tools, err)
		}
		if n.Kind != NoticeEvent || n.Event.Type != event.TypeMCPServer {
			continue
		}
		d, _ := event.Decode[event.MCPServer](n.Event)
		if d.Server == server && d.State == "ready" && d.Tools == tools {
			return
		}
	}
}

// An MCP server's tools join the session's sorted tool list, run through
// the gate, and change only at a turn boundary after tools/list_changed.
func TestMCPToolsInTheLoop(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(srv.Close)
	h := newHarness(t,
		calls(model.ToolCall{ID: "c1", Name: "mcp__web__echo", Arguments: `{"text":"hi"}`},
			model.ToolCall{ID: "c2", Name: "mcp__web__grow", Arguments: `{}`}),
		text("done"),
		calls(model.ToolCall{ID: "c3", Name: "mcp__web__extra", Arguments: `{}`}),
		text("done again"))
	s, sub := webSession(t, h, srv.URL)
	if r := run(t, s, "go"); r.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn 1: %+v", r.Reason)
	}
	waitMCP(t, sub, "web", 10) // the re-list after tools/list_changed
	if r := run(t, s, "again"); r.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn 2: %+v", r.Reason)
	}
	reqs := h.prov.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	first := toolNames(reqs[0].Tools)
	if !strings.Contains(first, "grep job_kill job_list job_output mcp__web__add mcp__web__big") || strings.Contains(first, "extra") {
		t.Errorf("turn 1 tools (sorted with the built-ins): %s", first)
	}
	if toolNames(reqs[1].Tools) != first {
		t.Errorf("the tool list must not change within a turn:\n%s\n%s", first, toolNames(reqs[1].Tools))
	}
	if !strings.Contains(toolNames(reqs[2].Tools), "mcp__web__extra") {
		t.Errorf("turn 2 must offer the new tool: %s", toolNames(reqs[2].Tools))
	}
	var results []string
	headers := 0
	for _, ev := range s.Events() {
		switch ev.Type {
		case event.TypeToolResult:
			tr, _ := event.Decode[event.ToolResult](ev)
			results = append(results, event.JoinText(tr.Message.Content[0].Content))
		case event.TypeRequestHeader:
			headers++
		}
	}
	if strings.Join(results, "|") != "echo: hi|grown|extra ran" {
		t.Errorf("results %q", results)
	}
	if headers != 2 {
		t.Errorf("request/header must be recorded again when the tools change: %d", headers)
	}
}

// In ask mode an MCP call asks, naming the server's tool; a server that
// failed to start is reported and the session goes on.
func TestMCPCallsAskAndBadServersAreReported(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(srv.Close)
	h := newHarness(t,
		calls(model.ToolCall{ID: "c1", Name: "mcp__web__fail", Arguments: `{}`}),
		text("ok"))
	var asked []permission.Request
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, PermissionMode: permission.ModeAsk,
		Asker: askFunc(func(_ context.Context, r permission.Request) (permission.Answer, error) {
			asked = append(asked, r)
			return permission.AllowOnce, nil
		}),
		MCPServers: []mcp.ServerConfig{{Name: "web", Transport: mcp.TransportHTTP, URL: srv.URL},
			{Name: "broken", Transport: mcp.TransportStdio, Command: "dsh-no-such-server"}}})
	if err != nil {
		t.Fatal(err)
	}
	s.mcp.WaitStarted(context.Background())
	run(t, s, "go")
	if len(asked) != 1 || asked[0].Tool != "mcp__web__fail" || asked[0].Title != "web: fail" || asked[0].Kind != "mcp" {
		t.Fatalf("asked %+v", asked)
	}
	var failed, toolErr bool
	for _, ev := range s.Events() {
		switch ev.Type {
		case event.TypeMCPServer:
			d, _ := event.Decode[event.MCPServer](ev)
			failed = failed || (d.Server == "broken" && d.State == "failed" && strings.Contains(d.Error, "not found on PATH"))
		case event.TypeToolResult:
			tr, _ := event.Decode[event.ToolResult](ev)
			toolErr = tr.Message.Content[0].IsError && tr.Error != nil
		}
	}
	if !failed || !toolErr {
		t.Errorf("failed server reported %v; isError as a tool error %v", failed, toolErr)
	}
	st := s.MCPStatus()
	if len(st) != 2 || st[0].Name != "broken" || st[1].State != mcp.StateReady {
		t.Errorf("status %+v", st)
	}
}

type askFunc func(context.Context, permission.Request) (permission.Answer, error)

func (f askFunc) Ask(ctx context.Context, r permission.Request) (permission.Answer, error) {
	return f(ctx, r)
}

// A server that lost the session is reconnected mid-turn: the call goes
// through, the log has the death and the restart, and the tool list (so
// the request prefix) is the same bytes before and after.
func TestMCPReconnectKeepsTheRequestPrefix(t *testing.T) {
	rs := mcptest.NewRestartable(mcptest.Options{})
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	t.Cleanup(rs.Close)
	h := newHarness(t,
		calls(model.ToolCall{ID: "c1", Name: "mcp__web__echo", Arguments: `{"text":"one"}`}),
		text("done"),
		calls(model.ToolCall{ID: "c2", Name: "mcp__web__echo", Arguments: `{"text":"two"}`}),
		text("done again"),
		text("and again"))
	s, _ := webSession(t, h, srv.URL)
	run(t, s, "go")
	rs.Restart()
	run(t, s, "again")
	run(t, s, "once more")
	var results, states []string
	headers := 0
	for _, ev := range s.Events() {
		switch ev.Type {
		case event.TypeToolResult:
			tr, _ := event.Decode[event.ToolResult](ev)
			results = append(results, event.JoinText(tr.Message.Content[0].Content))
		case event.TypeRequestHeader:
			headers++
		case event.TypeMCPServer:
			d, _ := event.Decode[event.MCPServer](ev)
			states = append(states, fmt.Sprintf("%s/%d", d.State, d.Restarts))
		}
	}
	if strings.Join(results, "|") != "echo: one|echo: two" {
		t.Errorf("results %q", results)
	}
	if strings.Join(states, " ") != "ready/0 restarting/0 ready/1" {
		t.Errorf("mcp/server events %v", states)
	}
	if headers != 1 {
		t.Errorf("the reconnect changed the request prefix: %d request/header events", headers)
	}
}

// webSession opens a session of h with the streamable-HTTP server at url
// as "web" and waits until its nine tools are ready; sub sees the rest.
func webSession(t *testing.T, h *harness, url string) (*Session, *Subscription) {
	t.Helper()
	sub := h.rt.Subscribe()
	t.Cleanup(sub.Close)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd,
		MCPServers: []mcp.ServerConfig{{Name: "web", Transport: mcp.TransportHTTP, URL: url, Source: "acp"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMCP(t, sub, "web", 9)
	return s, sub
}
