package mcp

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
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
