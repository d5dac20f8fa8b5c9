package e2e

// Benchmarks of the SDK door:
//
//	go test -run XXX -bench SDK -benchtime 20x ./e2e/
//
// BenchmarkSDKStartInitialize reports init-ms (spawn of the built binary →
// initialize response; target < 15 ms); ns/op also includes the close.
//
// BenchmarkSDKNotifications reports notifications/s: session.event
// notifications delivered to a Go client's subscription from one `dsh sdk`
// (target > 50,000/s). The rate depends on how busy the machine is, so it
// also reports the CPU time per event of the runtime process
// (server-cpu-us/event) and of this process (self-cpu-us/event, the
// client): 2 cores can at best deliver 2e6/(server+client) events/s.
// BenchmarkSDKNotificationsInProcess runs the same workload with the server
// in this process, for -cpuprofile.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
	"github.com/dsh-dev/dsh/sdkrpc"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// sdkBenchEnv is an isolated environment for a benchmark: a cwd and the
// binary's environment with a fresh session root and home.
func sdkBenchEnv(b *testing.B, extra ...string) (cwd string, env []string) {
	b.Helper()
	base := b.TempDir()
	cwd = filepath.Join(base, "ws")
	home := filepath.Join(base, "home")
	for _, d := range []string{cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"DSH_SESSION_ROOT=" + filepath.Join(base, "sessions"),
		"TMPDIR=" + os.TempDir(),
	}
	return cwd, append(env, extra...)
}

// sdkScriptFile writes a scripted-provider script and returns its settings.
func sdkScriptFile(b *testing.B, script string) []string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	return []string{"DSH_PROVIDER=scripted", "DSH_SCRIPT=" + path}
}

func BenchmarkSDKStartInitialize(b *testing.B) {
	cwd, env := sdkBenchEnv(b, sdkScriptFile(b, `{"steps":[{"text":"hi"}],"repeat":"last"}`)...)
	cfg := client.Config{Command: []string{dshBin, "sdk"}, Env: env, Dir: cwd}
	init := protocol.InitializeParams{Cwd: cwd, Provider: "scripted", Model: "scripted-model"}
	ctx := context.Background()
	var initTotal, closeTotal time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		c, _, err := client.Start(ctx, cfg, init)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
		initTotal += t1.Sub(t0)
		closeTotal += time.Since(t1)
	}
	b.ReportMetric(float64(initTotal.Microseconds())/1000/float64(b.N), "init-ms")
	b.ReportMetric(float64(closeTotal.Microseconds())/1000/float64(b.N), "close-ms")
}

// sdkNotifScript makes every turn `steps` todo_write tool rounds and a text
// answer: cheap steps (no model, no process, no file) that each commit
// several events (step/start, assistant/message, tool/call, tool/result,
// todo/write, step/end, ...).
func sdkNotifScript(steps int) string {
	type call struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}
	type step struct {
		Text      string `json:"text,omitempty"`
		ToolCalls []call `json:"toolCalls,omitempty"`
	}
	s := struct {
		Repeat string `json:"repeat"`
		Steps  []step `json:"steps"`
	}{Repeat: "cycle"}
	for i := range steps {
		s.Steps = append(s.Steps, step{ToolCalls: []call{{Name: "todo_write", Arguments: map[string]any{
			"todos": []map[string]string{{"content": fmt.Sprintf("task %d", i), "status": "in_progress"}},
		}}}})
	}
	s.Steps = append(s.Steps, step{Text: "all done"})
	out, _ := json.Marshal(s)
	return string(out)
}

// BenchmarkSDKNotifications runs, per op, one turn of 100 tool rounds on
// each of 4 fresh sessions in parallel, and counts the session.event
// notifications a subscription of the client receives over the wall time.
// Sub-benchmarks: "subscribe" prompts and waits for each session's idle
// (the delivery path alone); "run" uses Client.Run, which also decodes
// every event of the run as a host's owned run does.
func BenchmarkSDKNotifications(b *testing.B) {
	c := sdkBenchStart(b, sdkNotifScript(sdkNotifSteps))
	b.Run("subscribe", func(b *testing.B) { sdkBenchNotifications(b, c, c.Pid(), sdkPromptTurn) })
	b.Run("run", func(b *testing.B) { sdkBenchNotifications(b, c, c.Pid(), sdkRunTurn) })
}

// sdkBenchStart starts and initializes `dsh sdk` on the scripted provider
// with script; it is closed when the benchmark ends.
func sdkBenchStart(b *testing.B, script string) *client.Client {
	b.Helper()
	cwd, env := sdkBenchEnv(b, sdkScriptFile(b, script)...)
	c, _, err := client.Start(context.Background(), client.Config{Command: []string{dshBin, "sdk"}, Env: env, Dir: cwd},
		protocol.InitializeParams{Cwd: cwd, Provider: "scripted", Model: "scripted-model"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return c
}

// BenchmarkSDKNotificationsInProcess is the same workload with the server
// in this process (sdkrpc.Serve over OS pipes, the runtime wired as `dsh
// sdk` wires it), so -cpuprofile sees both ends.
func BenchmarkSDKNotificationsInProcess(b *testing.B) {
	dir := b.TempDir()
	scriptPath := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptPath, []byte(sdkNotifScript(sdkNotifSteps)), 0o644); err != nil {
		b.Fatal(err)
	}
	rt, err := core.New(core.Config{
		Store: store.New(filepath.Join(dir, "sessions")),
		NewProvider: func(name string) (model.Provider, error) {
			return model.New(name, model.Options{ScriptPath: scriptPath})
		},
		Defaults:       event.Config{Provider: "scripted", Model: "scripted-model"},
		PermissionMode: permission.ModeAuto,
		Tools:          tool.Builtins(),
		Origin:         "sdk",
	})
	if err != nil {
		b.Fatal(err)
	}
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	served := make(chan int, 1)
	go func() {
		served <- sdkrpc.Serve(context.Background(), rt, inR, outW, sdkrpc.Options{Version: "bench"})
		outW.Close()
	}()
	ctx := context.Background()
	c := client.NewClient(sdkPipeRWC{r: outR, w: inW}, client.Options{})
	if _, err := c.Initialize(ctx, protocol.InitializeParams{Cwd: dir, Provider: "scripted", Model: "scripted-model"}); err != nil {
		b.Fatal(err)
	}
	b.Run("subscribe", func(b *testing.B) { sdkBenchNotifications(b, c, 0, sdkPromptTurn) })
	b.Run("run", func(b *testing.B) { sdkBenchNotifications(b, c, 0, sdkRunTurn) })
	if err := c.Close(ctx); err != nil {
		b.Error(err)
	}
	if code := <-served; code != 0 {
		b.Errorf("Serve returned %d", code)
	}
	inR.Close()
	_ = rt.Close(ctx)
}

type sdkPipeRWC struct{ r, w *os.File }

func (p sdkPipeRWC) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p sdkPipeRWC) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p sdkPipeRWC) Close() error {
	p.w.Close()
	return p.r.Close()
}

const sdkNotifSteps, sdkNotifSessions = 100, 4

// sdkRunTurn is one owned run (Client.Run) of session id.
func sdkRunTurn(ctx context.Context, c *client.Client, id string) error {
	res, err := c.Session(id).Run(ctx, "go")
	if err == nil && res.FinishReason != "completed" {
		err = fmt.Errorf("turn ended %q", res.FinishReason)
	}
	if err == nil && !strings.Contains(res.FinalResponse, "all done") {
		err = fmt.Errorf("final response %q", res.FinalResponse)
	}
	return err
}

// sdkPromptTurn prompts the fresh session id and waits for it to go running,
// then idle, decoding only the status notifications.
func sdkPromptTurn(ctx context.Context, c *client.Client, id string) error {
	sub := c.Subscribe(func(n client.Notification) bool {
		return n.Method == protocol.NotifySessionStatus && n.SessionID() == id
	})
	defer sub.Close()
	if _, err := c.Session(id).Prompt(ctx, client.Text("go")); err != nil {
		return err
	}
	running := false
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		st, err := n.Status()
		if err != nil {
			return err
		}
		switch st.Status {
		case protocol.StatusRunning:
			running = true
		case protocol.StatusIdle:
			if running {
				return nil
			}
		}
	}
}

var sdkBenchOp atomic.Int64 // fresh session ids across sub-benchmarks

// sdkBenchNotifications runs the workload with turn and reports
// notifications/s, and the CPU time spent per event: by this process
// ("self-cpu-us/event": the client, plus the server when in process) and by
// the runtime process pid if not 0 ("server-cpu-us/event"). The CPU figures
// hold on a busy machine, where the rate does not.
func sdkBenchNotifications(b *testing.B, c *client.Client, pid int, turn func(context.Context, *client.Client, string) error) {
	ctx := context.Background()
	// offered counts on the client's read goroutine; taken counts what a
	// consumer dequeued. A turn returns after its root's idle, which the
	// read goroutine offers after every earlier event, so offered is final
	// once every turn returned.
	var offered, taken atomic.Int64
	sub := c.Subscribe(func(n client.Notification) bool {
		if n.Method != protocol.NotifySessionEvent {
			return false
		}
		offered.Add(1)
		return true
	})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			if _, err := sub.Next(ctx); err != nil {
				return
			}
			taken.Add(1)
		}
	}()

	b.ResetTimer()
	start := time.Now()
	self0, server0 := sdkSelfCPU(), sdkProcCPU(pid)
	for range b.N {
		op := sdkBenchOp.Add(1)
		var wg sync.WaitGroup
		errs := make(chan error, sdkNotifSessions)
		for s := range sdkNotifSessions {
			wg.Go(func() { errs <- turn(ctx, c, fmt.Sprintf("bench-%d-%d", op, s)) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for taken.Load() < offered.Load() {
		time.Sleep(100 * time.Microsecond)
	}
	elapsed := time.Since(start)
	self, server := sdkSelfCPU()-self0, sdkProcCPU(pid)-server0
	b.StopTimer()
	sub.Close()
	<-drained
	n := float64(taken.Load())
	b.ReportMetric(n/elapsed.Seconds(), "notifications/s")
	b.ReportMetric(n/float64(b.N), "events/op")
	b.ReportMetric(float64(self.Microseconds())/n, "self-cpu-us/event")
	if pid != 0 && server > 0 {
		b.ReportMetric(float64(server.Microseconds())/n, "server-cpu-us/event")
	}
}

// sdkSelfCPU is this process's user+system CPU time.
func sdkSelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sdkProcCPU is the user+system CPU time of process pid from /proc (Linux;
// 0 elsewhere or for pid 0). /proc counts in clock ticks, taken as the
// usual 100 Hz.
func sdkProcCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line.
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
