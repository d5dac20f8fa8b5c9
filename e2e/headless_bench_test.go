package e2e

// Benchmarks of the headless door's per-wake cost, the figure a supervisor
// that starts one dsh per wake pays (issue 5): process start to the first
// `session` line, and a whole wake that resumes a 10,000-event session.
// Both use the scripted provider, so no network is involved. Each reports
// the median (p50-ms) beside the mean (ms/op).

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

// benchWorld is newWorld for benchmarks: an isolated cwd, session root and
// home, with the scripted provider replaying script.
type benchWorld struct {
	Cwd, Root string
	Env       []string
}

func newBenchWorld(b *testing.B, script string) *benchWorld {
	b.Helper()
	base := b.TempDir()
	w := &benchWorld{Cwd: filepath.Join(base, "ws"), Root: filepath.Join(base, "sessions")}
	home := filepath.Join(base, "home")
	for _, d := range []string{w.Cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if r, err := filepath.EvalSymlinks(w.Cwd); err == nil {
		w.Cwd = r
	}
	scriptPath := filepath.Join(base, "script.json")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	w.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"DSH_SESSION_ROOT=" + w.Root,
		"TMPDIR=" + os.TempDir(),
		"DSH_PROVIDER=scripted",
		"DSH_SCRIPT=" + scriptPath,
	}
	return w
}

func (w *benchWorld) command(args ...string) *exec.Cmd {
	cmd := exec.Command(dshBin, args...)
	cmd.Dir = w.Cwd
	cmd.Env = w.Env
	return cmd
}

// reportDurations reports the mean and the median of ds in milliseconds.
func reportDurations(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(sum)/float64(len(ds)), "ms/op")
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
	b.ReportMetric(ms(ds[len(ds)*9/10]), "p90-ms")
}

// BenchmarkRunStartup measures process start to the first `session` line
// of `dsh run --json` (target: under 20 ms). The rest of the run (one
// scripted step) and the exit are outside the timer.
func BenchmarkRunStartup(b *testing.B) {
	w := newBenchWorld(b, `{"steps":[{"text":"ok"}],"repeat":"last"}`)
	benchFirstSessionLine(b, w, "run", "--json", "hello")
}

// benchFirstSessionLine times, b.N times, dsh with args from process start
// to its first `session` line; the rest of the run and the exit are
// outside the timer.
func benchFirstSessionLine(b *testing.B, w *benchWorld, args ...string) {
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := w.command(args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		var errb strings.Builder
		cmd.Stderr = &errb
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(out)
		line, err := br.ReadString('\n')
		d := time.Since(start)
		b.StopTimer()
		_, _ = io.Copy(io.Discard, br)
		werr := cmd.Wait()
		if err != nil || !strings.HasPrefix(line, `{"type":"session",`) || werr != nil {
			b.Fatalf("first line %q (%v), exit %v, stderr %s", line, err, werr, errb.String())
		}
		ds = append(ds, d)
		b.StartTimer()
	}
	b.StopTimer()
	reportDurations(b, ds)
}

// resumeEvents is the number of events the resumed session holds.
const resumeEvents = 10_000

// writeLongSession writes a session of at least n events to w's store, in
// the shape real turns leave: the prompt entering and leaving the inbox,
// a step that reasons and runs a tool, a step that answers.
func writeLongSession(b *testing.B, w *benchWorld, id string, n int) {
	b.Helper()
	// No fsync while building the fixture: the benchmark measures the
	// wake that reads it, not the writing.
	st := store.New(w.Root).WithoutSync()
	lg, err := st.Create(store.Header{ID: id, Cwd: w.Cwd, Origin: "run",
		Config: &event.Config{Provider: "scripted", Model: "deepseek-flash"}})
	if err != nil {
		b.Fatal(err)
	}
	var seq int64
	add := func(typ string, data any) {
		ev := event.New(typ, data)
		ev.Seq = seq
		seq++
		if err := lg.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
	src := event.Source{Kind: "model", Provider: "scripted", Model: "deepseek-flash"}
	usage := &event.Usage{InputTokens: 1200, OutputTokens: 80}
	for turn := 1; seq < int64(n); turn++ {
		user := event.Message{ID: fmt.Sprintf("u-%d", turn), Role: "user", Source: event.Source{Kind: "user"},
			Content: []event.ContentBlock{event.Text(fmt.Sprintf("Turn %d: look at the build output and fix the failing test in pkg/%d.", turn, turn%17))}}
		one := 1
		add(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Start: 0, Inserted: []event.Message{user}})
		add(event.TypeTurnStart, event.TurnStart{Turn: turn})
		add(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Start: 0, RemovedCount: &one, Inserted: []event.Message{}})
		add(event.TypeStepStart, event.Step{Turn: turn, Step: 1})
		add(event.TypeUserMessage, user)
		callID := fmt.Sprintf("call_%d_0", turn)
		args := fmt.Sprintf(`{"command":"go test ./pkg/%d/...","description":"run the tests"}`, turn%17)
		add(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 1, Usage: usage, FinishReason: "tool_calls",
			Message: event.Message{ID: fmt.Sprintf("a-%d-1", turn), Role: "assistant", Source: src, Content: []event.ContentBlock{
				event.Reasoning("The user wants the failing test fixed. I will run the package's tests first to see what fails."),
				{Type: event.BlockToolCall, ID: callID, Name: "bash", Arguments: args},
			}}})
		add(event.TypeToolCall, event.ToolCall{Turn: turn, Step: 1, CallID: callID, Name: "bash", Arguments: args})
		output := strings.Repeat(fmt.Sprintf("--- FAIL: TestThing%d (0.00s)\n    thing_test.go:42: got 1, want 2\n", turn), 4) + "FAIL\n[exit code: 1]"
		add(event.TypeToolResult, event.ToolResult{Turn: turn, Step: 1, Message: event.Message{
			ID: fmt.Sprintf("r-%d", turn), Role: "user", Source: event.Source{Kind: "tool", CallID: callID},
			Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: callID, IsError: false,
				Content: []event.ContentBlock{event.Text(output)}}}}})
		add(event.TypeStepEnd, event.Step{Turn: turn, Step: 1})
		add(event.TypeStepStart, event.Step{Turn: turn, Step: 2})
		add(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 2, Usage: usage, FinishReason: "stop",
			Message: event.Message{ID: fmt.Sprintf("a-%d-2", turn), Role: "assistant", Source: src, Content: []event.ContentBlock{
				event.Reasoning("The assertion compares the wrong values."),
				event.Text(fmt.Sprintf("TestThing%d fails because it compares the wrong values; the fix is to compare the result with 2.", turn)),
			}}})
		add(event.TypeStepEnd, event.Step{Turn: turn, Step: 2})
		add(event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: event.TurnEndReason{Kind: event.ReasonCompleted}})
	}
	if err := lg.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRunResume10k measures a whole wake, process start to exit, that
// adopts a 10,000-event session with --session-id and runs one scripted
// step (target: under 100 ms). Each wake adds one short turn, so the
// session grows by a handful of events per iteration.
func BenchmarkRunResume10k(b *testing.B) {
	w := newBenchWorld(b, `{"steps":[{"text":"ok"}],"repeat":"last"}`)
	const id = "session-bench-resume"
	writeLongSession(b, w, id, resumeEvents)
	if fi, err := os.Stat(filepath.Join(w.Root)); err != nil || !fi.IsDir() {
		b.Fatal("no session root", err)
	}
	run := func() (time.Duration, string, string, error) {
		cmd := w.command("run", "--session-id", id, "one more thing")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		return time.Since(start), out.String(), errb.String(), err
	}
	// One untimed wake proves the fixture resumes and completes.
	if _, out, errs, err := run(); err != nil || out != "ok\n" {
		b.Fatalf("warm-up wake: %v, stdout %q, stderr %s", err, out, errs)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, out, errs, err := run()
		if err != nil || out != "ok\n" {
			b.Fatalf("wake %d: %v, stdout %q, stderr %s", i, err, out, errs)
		}
		ds = append(ds, d)
	}
	b.StopTimer()
	reportDurations(b, ds)
	_, evs, err := store.New(w.Root).Read(id)
	if err != nil || len(evs) < resumeEvents {
		b.Fatalf("after the wakes: %d events, %v", len(evs), err)
	}
}
