package e2e

// BenchmarkDelegationE2E: the cost of one delegation through the built
// binary, per provider, cold and pooled:
//
//	go test -run XXX -bench DelegationE2E -benchtime 20x ./e2e/
//
// A parent `dsh sdk` (scripted model) runs, per iteration, a new parent
// session with two turns. Each turn calls the subagent tool once per
// provider, one call per step so the delegations do not overlap: the first
// turn's calls are cold (the session has no child yet: spawn, handshake,
// child session, one scripted turn), the second turn's are pooled (the
// child process of the first turn is reused). A delegation is timed from
// the parent's tool/call notification to its tool/result notification as
// the SDK host receives them, so it includes the parent's permission check
// and the recording of the subagent/start and subagent/end events.
// Metrics: ms-cold-<provider> and ms-pooled-<provider>; ns/op is one
// iteration (two turns and the session's close).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

func BenchmarkDelegationE2E(b *testing.B) {
	base := b.TempDir()
	cwd, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	for _, d := range []string{cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// Every parent turn plays these steps: one delegation per step.
	var steps []any
	for _, a := range saBuiltins {
		steps = append(steps, map[string]any{"toolCalls": []any{map[string]any{"name": "subagent", "arguments": map[string]any{
			"description": "bench " + a, "prompt": "CHILD-BENCH: answer ok", "agent": a}}}})
	}
	steps = append(steps, map[string]any{"text": "all delegated"})
	script, err := json.Marshal(map[string]any{"repeat": "cycle", "steps": steps,
		"conversations": []any{map[string]any{"match": "CHILD-BENCH", "steps": []any{map[string]any{"text": "ok"}}}}})
	if err != nil {
		b.Fatal(err)
	}
	// Every iteration leaves its pooled children idle; a short idle
	// timeout keeps them from piling up (they are not closed with their
	// parent session, only when idle or with the runtime).
	config := `{"subagents": {"dsh-sdk": {"idleTimeout": "500ms"}, "dsh-acp": {"idleTimeout": "500ms"}}}`
	scriptPath, configPath := filepath.Join(base, "script.json"), filepath.Join(base, "config.json")
	for path, data := range map[string][]byte{scriptPath: script, configPath: []byte(config)} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"DSH_SESSION_ROOT=" + filepath.Join(base, "sessions"),
		"TMPDIR=" + os.TempDir(),
		"DSH_PROVIDER=scripted",
		"DSH_SCRIPT=" + scriptPath,
		"DSH_CONFIG=" + configPath,
	}
	ctx := context.Background()
	c, _, err := client.Start(ctx, client.Config{Command: []string{dshBin, "sdk"}, Env: env, Dir: cwd},
		protocol.InitializeParams{Cwd: cwd, Provider: "scripted"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := c.Close(ctx); err != nil {
			b.Error(err)
		}
	}()

	// turn runs one parent turn and returns each delegation's time by
	// provider.
	turn := func(sid string) map[string]time.Duration {
		started := map[string]time.Time{}
		agentOf := map[string]string{}
		took := map[string]time.Duration{}
		var bad error
		res, err := c.Session(sid).RunBlocks(ctx, []client.Block{client.Text("PARENT bench: delegate")}, client.OnNotification(func(n client.Notification) {
			if n.Method != protocol.NotifySessionEvent || n.SessionID() != sid {
				return
			}
			now := time.Now()
			p, err := n.Event()
			if err != nil {
				bad = err
				return
			}
			switch p.Event.Type {
			case event.TypeToolCall:
				d, err := event.Decode[event.ToolCall](p.Event)
				if err != nil {
					bad = err
					return
				}
				var args struct{ Agent string }
				if err := json.Unmarshal([]byte(d.Arguments), &args); err != nil {
					bad = err
					return
				}
				started[d.CallID], agentOf[d.CallID] = now, args.Agent
			case event.TypeToolResult:
				d, err := event.Decode[event.ToolResult](p.Event)
				if err != nil {
					bad = err
					return
				}
				r := d.Result()
				if r.IsError || event.JoinText(r.Content) != "ok" {
					bad = fmt.Errorf("delegation %s failed: %q", r.ToolCallID, event.JoinText(r.Content))
					return
				}
				took[agentOf[r.ToolCallID]] = now.Sub(started[r.ToolCallID])
			}
		}))
		switch {
		case err != nil:
			b.Fatalf("run: %v\nstderr: %v", err, c.StderrTail())
		case bad != nil:
			b.Fatal(bad)
		case res.FinishReason != event.ReasonCompleted || len(took) != len(saBuiltins):
			b.Fatalf("turn ended %q with delegations %v", res.FinishReason, took)
		}
		return took
	}

	cold, pooled := map[string]time.Duration{}, map[string]time.Duration{}
	n := 0
	for b.Loop() {
		sid := newSessionID()
		for a, d := range turn(sid) {
			cold[a] += d
		}
		for a, d := range turn(sid) {
			pooled[a] += d
		}
		if err := c.Session(sid).Close(ctx); err != nil {
			b.Fatal(err)
		}
		n++
	}
	for _, a := range saBuiltins {
		b.ReportMetric(float64(cold[a].Microseconds())/1000/float64(n), "ms-cold-"+a)
		b.ReportMetric(float64(pooled[a].Microseconds())/1000/float64(n), "ms-pooled-"+a)
	}
}
