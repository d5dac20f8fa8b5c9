package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-dev/dsh/core/mcp/mcptest"
)

// TestJSONThatIsNotJSONRPCIsSkipped: a server that writes valid JSON that
// is no JSON-RPC 2.0 message ({"hello":"world"}, [1,2,3], a string, a
// jsonrpc 1.0 object) before every answer keeps its tools; each such line
// is skipped and reported.
func TestJSONThatIsNotJSONRPCIsSkipped(t *testing.T) {
	var logs lockedBuffer
	h := start(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, stdioServer("t", KV{Name: "MCPTEST_NOISE", Value: "1"}))
	if st := h.set.Status(); len(st) != 1 || st[0].State != StateReady {
		t.Fatalf("status %+v", st)
	}
	if r := h.call(context.Background(), "mcp__t__echo", `{"text":"still here"}`, nil); r.IsError || !strings.Contains(text(r), "still here") {
		t.Fatalf("echo: %+v", r)
	}
	if got := logs.String(); !strings.Contains(got, `{\"hello\":\"world\"}`) || !strings.Contains(got, `[1,2,3]`) {
		t.Fatalf("the skipped lines were not reported:\n%s", got)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUndecodableToolDropsOnlyThatTool: a tools/list with an entry that
// does not decode as a tool and one with a 2,000-deep schema loses those
// two tools; the server and its other tools stay.
func TestUndecodableToolDropsOnlyThatTool(t *testing.T) {
	h := start(t, Options{}, stdioServer("t", KV{Name: "MCPTEST_BAD_TOOLS", Value: "1"}))
	st := h.set.Status()
	if len(st) != 1 || st[0].State != StateReady || st[0].Tools != len(allTools) {
		t.Fatalf("status %+v", st)
	}
	if !strings.Contains(st[0].Note, "undecodable") || !strings.Contains(st[0].Note, "deep") {
		t.Fatalf("the dropped tools are not named: %q", st[0].Note)
	}
	if r := h.call(context.Background(), "mcp__t__echo", `{"text":"ok"}`, nil); r.IsError {
		t.Fatalf("echo: %+v", r)
	}
}

// TestHTTPServersRefusedWithTheNetworkOff: with the network off an HTTP
// server is not connected (no request reaches it) and says why; a stdio
// server still starts.
func TestHTTPServersRefusedWithTheNetworkOff(t *testing.T) {
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mcptest.Handler(mcptest.Options{}).ServeHTTP(w, r)
	}))
	defer web.Close()
	h := start(t, Options{NetworkOff: true}, stdioServer("t"),
		ServerConfig{Name: "web", Transport: TransportHTTP, URL: web.URL},
		ServerConfig{Name: "old", Transport: TransportSSE, URL: web.URL})
	for _, st := range h.set.Status() {
		switch st.Name {
		case "t":
			if st.State != StateReady {
				t.Errorf("stdio server: %+v", st)
			}
		default:
			if st.State != StateFailed || !strings.Contains(st.Error, "network is off") {
				t.Errorf("%s: %+v", st.Name, st)
			}
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests reached the HTTP server", hits.Load())
	}
}
