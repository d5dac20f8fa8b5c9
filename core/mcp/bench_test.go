package mcp

// Benchmarks of MCP servers against the built-ins:
//
//	go test -run XXX -bench MCP ./core/mcp/
//
// BenchmarkMCPStart3Stdio is the time from starting three stdio servers
// (this test binary as the Go SDK test server) until all three have
// listed their tools. BenchmarkMCPToolCall is one call of a small tool:
// the built-in read of a small file, and the test server's echo over
// stdio and over streamable HTTP; the difference is the MCP overhead.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/mcp/mcptest"
	"github.com/dsh-dev/dsh/core/tool"
)

func BenchmarkMCPStart3Stdio(b *testing.B) {
	cwd := b.TempDir()
	for range b.N {
		set := Start([]ServerConfig{stdioServer("a"), stdioServer("b"), stdioServer("c")}, Options{Cwd: cwd})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if !set.WaitStarted(ctx) {
			b.Fatal("servers did not start")
		}
		b.StopTimer()
		if ts, _ := set.Tools(); len(ts) != 3*len(allTools) {
			b.Fatalf("%d tools: %+v", len(ts), set.Status())
		}
		_ = set.Close(ctx)
		cancel()
		b.StartTimer()
	}
}

func BenchmarkMCPToolCall(b *testing.B) {
	cwd := b.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("hello\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	web := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	defer web.Close()
	set := Start([]ServerConfig{stdioServer("t"), {Name: "web", Transport: TransportHTTP, URL: web.URL}}, Options{Cwd: cwd})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer set.Close(ctx)
	set.WaitStarted(ctx)
	ts, _ := set.Tools()
	find := func(name string) tool.Tool {
		for _, x := range ts {
			if x.Name() == name {
				return x
			}
		}
		b.Fatalf("no %s", name)
		return nil
	}
	var read tool.Tool
	for _, x := range tool.Builtins() {
		if x.Name() == "read" {
			read = x
		}
	}
	env := &tool.Env{Cwd: cwd, Files: tool.LocalFS(), Reads: tool.NewReadTracker()}
	for _, c := range []struct {
		name string
		t    tool.Tool
		args string
	}{
		{"builtin-read", read, `{"file_path":"a.txt"}`},
		{"mcp-stdio", find("mcp__t__echo"), `{"text":"hello"}`},
		{"mcp-http", find("mcp__web__echo"), `{"text":"hello"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if r := c.t.Run(context.Background(), json.RawMessage(c.args), env); r.IsError {
					b.Fatalf("%s: %v", c.name, r.Content)
				}
			}
		})
	}
}
