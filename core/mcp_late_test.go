package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/mcp/mcptest"
)

// A server that is not ready when the session opens is recorded as late
// when it becomes ready (the ACP door tells the editor), and WaitMCP
// waits for it and takes its tools into the next turn's list; one ready
// while the session opened is not late.
func TestMCPServerReadyAfterTheSessionOpened(t *testing.T) {
	release := make(chan struct{})
	inner := mcptest.Handler(mcptest.Options{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	quick := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(quick.Close)
	h := newHarness(t, text("done"))
	rt := h.runtimeWith(func(c *Config) { c.MCPStartWait = 10 * time.Second })
	sub := rt.Subscribe()
	t.Cleanup(sub.Close)
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: h.cwd, MCPServers: []mcp.ServerConfig{
		{Name: "quick", Transport: mcp.TransportHTTP, URL: quick.URL, Source: "acp"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The slow server joins a live session (as an ACP client's load adds
	// it) with the start wait cut short by its gate.
	rt.cfg.MCPStartWait = time.Millisecond
	if added := s.AddMCPServers([]mcp.ServerConfig{{Name: "slow", Transport: mcp.TransportHTTP, URL: slow.URL, Source: "acp"}}); len(added) != 1 {
		t.Fatalf("added %v", added)
	}
	if got := s.MCPStarting(); len(got) != 1 || got[0] != "slow" {
		t.Fatalf("starting: %v", got)
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if !s.WaitMCP(ctx) {
		t.Fatal("WaitMCP did not see the slow server settle")
	}
	if !strings.Contains(toolNamesOf(s), "mcp__slow__echo") {
		t.Errorf("after WaitMCP the slow server's tools are on offer: %s", toolNamesOf(s))
	}
	late := map[string]bool{}
	for _, ev := range s.Events() {
		if ev.Type == event.TypeMCPServer {
			d, _ := event.Decode[event.MCPServer](ev)
			late[d.Server] = d.Late
		}
	}
	if !late["slow"] || late["quick"] {
		t.Errorf("late: %v (want only slow)", late)
	}
}

func toolNamesOf(s *Session) string {
	var out []string
	for _, t := range s.Tools() {
		out = append(out, t.Name())
	}
	return strings.Join(out, " ")
}
