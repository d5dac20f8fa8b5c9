package e2e

// BenchmarkACPSessionNewMCP measures session/new through dsh acp with no
// MCP server and with three stdio servers (the Go SDK test server):
// answer-ms is the time to the session/new response, tools-ms the time
// until /mcp (answered right after) shows every server ready with its
// tools, which the next prompt then offers the model.
//
//	go test -run XXX -bench ACPSessionNewMCP -benchtime 10x ./e2e/

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

func BenchmarkACPSessionNewMCP(b *testing.B) {
	bin := mcptestServer(b)
	for _, n := range []int{0, 3} {
		name := map[int]string{0: "none", 3: "3-stdio"}[n]
		b.Run(name, func(b *testing.B) {
			srv := modeltest.New(b)
			cwd, env := acpBenchEnv(b, srv.Env()...)
			p := startACPBench(b, cwd, env)
			defer p.close()
			p.call("initialize", acpBenchInit)
			servers := []any{}
			for i := range n {
				servers = append(servers, map[string]any{"name": string(rune('a' + i)), "command": bin, "args": []any{}, "env": []any{}})
			}
			var answer, tools time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				f := p.call("session/new", map[string]any{"cwd": cwd, "mcpServers": servers})
				answer += time.Since(t0)
				var r struct {
					SessionID string `json:"sessionId"`
				}
				_ = json.Unmarshal(f.Result, &r)
				p.call("session/prompt", textPrompt(r.SessionID, "/mcp"))
				tools += time.Since(t0)
				b.StopTimer()
				p.call("session/close", map[string]any{"sessionId": r.SessionID})
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(answer.Microseconds())/1000/float64(b.N), "answer-ms")
			b.ReportMetric(float64(tools.Microseconds())/1000/float64(b.N), "tools-ms")
		})
	}
}
