package e2e

// Flow control of the ACP door, measured as an editor on acp-go-sdk sees it:
// acp-go-sdk's client side in this process, `dsh acp` in its own, and a
// session/update handler that takes 20 µs, 100 µs or 1 ms per update (a busy
// wait, so the time is what it says). The SDK queues notifications in 1,024
// slots and closes the connection when its handler falls that far behind;
// dsh's pacing must keep every run connected.
//
//	go test -run '^$' -bench ACPFlow -benchtime 1x ./e2e/
//
// Sub-benchmarks: turn1500 (one prompt of 1,500 tool calls), sessions16 (16
// sessions prompting a 150-call turn each at once) and load100k (session/load
// of a stored session of 100,000 events; DSH_BENCH_LOAD_EVENTS overrides the
// size). Each reports updates/s as the client received them and disconnects
// (the goal is 0). BenchmarkACPStuckClientRSS reports dsh's resident memory
// while a client that stopped reading holds a 1,500-call turn.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// flowScript writes a script whose every turn is steps steps of ten
// todo_write calls each, then a text; turns repeat ("cycle").
func flowScript(b *testing.B, dir string, steps int) string {
	b.Helper()
	var ss []any
	for i := 0; i < steps; i++ {
		var calls []any
		for j := 0; j < 10; j++ {
			calls = append(calls, map[string]any{"name": "todo_write", "arguments": map[string]any{
				"todos": []any{map[string]any{"content": fmt.Sprintf("step %d call %d", i, j), "status": "in_progress"}}}})
		}
		ss = append(ss, map[string]any{"toolCalls": calls})
	}
	ss = append(ss, map[string]any{"text": "done"})
	raw, _ := json.Marshal(map[string]any{"steps": ss, "repeat": "cycle"})
	path := filepath.Join(dir, fmt.Sprintf("script-%d.json", steps))
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// flowClient is an acp-go-sdk client whose update handler takes delay.
type flowClient struct {
	delay   time.Duration
	updates atomic.Int64
}

func (c *flowClient) SessionUpdate(context.Context, sdk.SessionNotification) error {
	start := time.Now()
	for time.Since(start) < c.delay {
	}
	c.updates.Add(1)
	return nil
}

func (c *flowClient) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(p.Options[0].OptionId)}, nil
}

func (c *flowClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
}

func (c *flowClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}

func (c *flowClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (c *flowClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (c *flowClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (c *flowClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (c *flowClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}

// flowRun is one `dsh acp` with an SDK client.
type flowRun struct {
	cmd  *exec.Cmd
	conn *sdk.ClientSideConnection
	cl   *flowClient
	cwd  string
}

func startFlow(b *testing.B, root, script string, delay time.Duration) *flowRun {
	b.Helper()
	cwd, env := acpBenchEnv(b, "DSH_PROVIDER=scripted", "DSH_SCRIPT="+script, "DSH_PERMISSION_MODE=full",
		"DSH_ACP_UPDATES_PER_SEC="+os.Getenv("DSH_ACP_UPDATES_PER_SEC"))
	if root != "" {
		env = append(env, "DSH_SESSION_ROOT="+root)
		cwd = flowCwd(root)
	}
	cmd := exec.Command(dshBin, "acp")
	cmd.Dir, cmd.Env = cwd, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	cl := &flowClient{delay: delay}
	conn := sdk.NewClientSideConnection(cl, stdin, stdout)
	conn.SetLogger(nopLogger())
	r := &flowRun{cmd: cmd, conn: conn, cl: cl, cwd: cwd}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if _, err := conn.Initialize(context.Background(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		b.Fatalf("initialize: %v", err)
	}
	return r
}

func (r *flowRun) newSession(b *testing.B) sdk.SessionId {
	b.Helper()
	resp, err := r.conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: r.cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		b.Fatalf("session/new: %v", err)
	}
	return resp.SessionId
}

// disconnected reports whether the SDK closed the connection.
func (r *flowRun) disconnected() bool {
	select {
	case <-r.conn.Done():
		return true
	default:
		return false
	}
}

func BenchmarkACPFlow(b *testing.B) {
	parent := b
	var fixture struct {
		once sync.Once
		root string
		id   string
		n    int
	}
	for _, d := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, time.Millisecond} {
		name := fmt.Sprintf("handler=%dus", d.Microseconds())
		b.Run("turn1500/"+name, func(b *testing.B) {
			script := flowScript(b, b.TempDir(), 150)
			flowReport(b, func() (int64, int, time.Duration) {
				r := startFlow(b, "", script, d)
				sid := r.newSession(b)
				start := time.Now()
				_, err := r.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("go")}})
				return r.cl.updates.Load(), flowLost(r, err), time.Since(start)
			})
		})
		b.Run("sessions16/"+name, func(b *testing.B) {
			script := flowScript(b, b.TempDir(), 15)
			flowReport(b, func() (int64, int, time.Duration) {
				r := startFlow(b, "", script, d)
				ids := make([]sdk.SessionId, 16)
				for i := range ids {
					ids[i] = r.newSession(b)
				}
				start := time.Now()
				var wg sync.WaitGroup
				var lost atomic.Int64
				for _, sid := range ids {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := r.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("go")}}); err != nil {
							lost.Add(1)
						}
					}()
				}
				wg.Wait()
				n := 0
				if lost.Load() > 0 || r.disconnected() {
					n = 1
				}
				return r.cl.updates.Load(), n, time.Since(start)
			})
		})
		b.Run("load100k/"+name, func(b *testing.B) {
			fixture.once.Do(func() {
				fixture.root, fixture.id, fixture.n = bigSession(b, parent)
			})
			if fixture.id == "" {
				b.Fatal("no fixture session")
			}
			script := flowScript(b, b.TempDir(), 1)
			flowReport(b, func() (int64, int, time.Duration) {
				r := startFlow(b, fixture.root, script, d)
				start := time.Now()
				_, err := r.conn.LoadSession(context.Background(), sdk.LoadSessionRequest{SessionId: sdk.SessionId(fixture.id), Cwd: r.cwd, McpServers: []sdk.McpServer{}})
				if err != nil {
					b.Logf("session/load: %v", err)
				}
				return r.cl.updates.Load(), flowLost(r, err), time.Since(start)
			})
			b.ReportMetric(float64(fixture.n), "events")
		})
	}
	// load100k/raw: the fastest reader there is, a loop that only reads
	// lines; what the pace costs a fast client is its time here at the
	// default against DSH_ACP_UPDATES_PER_SEC=off.
	b.Run("load100k/raw", func(b *testing.B) {
		fixture.once.Do(func() {
			fixture.root, fixture.id, fixture.n = bigSession(b, parent)
		})
		flowReport(b, func() (int64, int, time.Duration) { return rawLoad(b, fixture.root, fixture.id) })
		b.ReportMetric(float64(fixture.n), "events")
	})
}

// rawLoad runs one session/load of id through a client that reads lines
// as fast as they come and does nothing with them: updates counted, the
// time from the request to its answer.
func rawLoad(b *testing.B, root, id string) (int64, int, time.Duration) {
	b.Helper()
	_, env := acpBenchEnv(b, "DSH_PERMISSION_MODE=full", "DSH_SESSION_ROOT="+root,
		"DSH_ACP_UPDATES_PER_SEC="+os.Getenv("DSH_ACP_UPDATES_PER_SEC"))
	cmd := exec.Command(dshBin, "acp")
	cmd.Dir, cmd.Env = flowCwd(root), env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 0, 1<<20), 16<<20)
	send := func(v any) {
		raw, _ := json.Marshal(v)
		if _, err := stdin.Write(append(raw, '\n')); err != nil {
			b.Fatal(err)
		}
	}
	answer := func(id int) (updates int64) {
		for lines.Scan() {
			var m struct {
				ID     *int   `json:"id"`
				Method string `json:"method"`
			}
			if json.Unmarshal(lines.Bytes(), &m) == nil && m.ID != nil && *m.ID == id && m.Method == "" {
				return updates
			}
			if m.Method == "session/update" {
				updates++
			}
		}
		b.Fatalf("dsh acp ended before answering request %d: %v", id, lines.Err())
		return 0
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	answer(1)
	start := time.Now()
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": map[string]any{
		"sessionId": id, "cwd": flowCwd(root), "mcpServers": []any{}}})
	n := answer(2)
	return n, 0, time.Since(start)
}

func flowLost(r *flowRun, err error) int {
	if err != nil || r.disconnected() {
		return 1
	}
	return 0
}

// flowReport runs one scenario b.N times and reports its medians'
// ingredients: updates per second and disconnects per run.
func flowReport(b *testing.B, run func() (updates int64, lost int, took time.Duration)) {
	var updates int64
	var took time.Duration
	lost := 0
	for i := 0; i < b.N; i++ {
		u, l, d := run()
		updates += u
		lost += l
		took += d
	}
	b.ReportMetric(float64(updates)/took.Seconds(), "updates/s")
	b.ReportMetric(float64(lost)/float64(b.N), "disconnects/op")
	b.ReportMetric(float64(updates)/float64(b.N), "updates/op")
}

func nopLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// flowCwd is the workspace of the fixture session (next to its store).
func flowCwd(root string) string { return filepath.Join(filepath.Dir(root), "ws") }

// bigSession writes a stored session of at least DSH_BENCH_LOAD_EVENTS
// (100,000) events, removed when owner ends, by running scripted turns of 1,500 calls in process,
// without fsync.
func bigSession(b, owner *testing.B) (root, id string, n int) {
	b.Helper()
	want := 100000
	if v, err := strconv.Atoi(os.Getenv("DSH_BENCH_LOAD_EVENTS")); err == nil && v > 0 {
		want = v
	}
	base, err := os.MkdirTemp("", "dsh-load-fixture-")
	if err != nil {
		b.Fatal(err)
	}
	owner.Cleanup(func() { _ = os.RemoveAll(base) }) // every load sub-benchmark uses it
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	root = filepath.Join(base, "sessions")
	cwd := flowCwd(root)
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		b.Fatal(err)
	}
	script := flowScript(b, base, 150)
	rt, err := core.New(core.Config{
		Store:          store.New(root).WithoutSync(),
		NewProvider:    func(name string) (model.Provider, error) { return model.New(name, model.Options{ScriptPath: script}) },
		Defaults:       event.Config{Provider: model.ProviderScripted, Model: "scripted-model"},
		PermissionMode: permission.ModeFull,
		Tools:          tool.Builtins(),
		Origin:         "acp",
		Logger:         nopLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := rt.Create(ctx, core.SessionOptions{Cwd: cwd})
	if err != nil {
		b.Fatal(err)
	}
	for len(s.Events()) < want {
		tk, err := s.Prompt(ctx, []event.ContentBlock{event.Text("go")})
		if err != nil {
			b.Fatal(err)
		}
		<-tk.Done()
	}
	id, n = s.ID(), len(s.Events())
	if err := rt.Close(ctx); err != nil {
		b.Fatal(err)
	}
	return root, id, n
}

// BenchmarkACPStuckClientRSS: a client that stops reading while a
// 1,500-call turn runs. dsh's resident memory is sampled every 50 ms for
// 3 s; its peak is reported (the goal: bounded, not growing with the turn).
func BenchmarkACPStuckClientRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	script := flowScript(b, b.TempDir(), 150)
	for i := 0; i < b.N; i++ {
		cwd, env := acpBenchEnv(b, "DSH_PROVIDER=scripted", "DSH_SCRIPT="+script, "DSH_PERMISSION_MODE=full")
		p := startACPBench(b, cwd, env)
		p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
		f := p.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
		var ns struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(f.Result, &ns)
		idle, _ := procStatusKB(p.cmd.Process.Pid, "VmRSS")
		// Prompt, then read nothing more.
		raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
			"params": map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}})
		if _, err := p.stdin.Write(append(raw, '\n')); err != nil {
			b.Fatal(err)
		}
		var peak int64
		tick := time.NewTicker(50 * time.Millisecond)
		for t := 0; t < 60; t++ {
			<-tick.C
			if kb, err := procStatusKB(p.cmd.Process.Pid, "VmRSS"); err == nil && kb > peak {
				peak = kb
			}
		}
		tick.Stop()
		b.ReportMetric(float64(idle)/1024, "MiB-idle")
		b.ReportMetric(float64(peak)/1024, "MiB-peak-stuck")
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}
