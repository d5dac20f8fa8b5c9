package e2e

// BenchmarkWakeStreamed100k: the wake of a session that has never
// compacted and whose model calls streamed, as every session of this dsh
// records them (issue 25, "chunks off the wake's path"). Self-contained
// but for newBenchWorld, w.command and dshBin, which the e2e package has
// had since before the last release, so the file can be copied into a
// worktree of an earlier commit and run there for a before/after figure.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

// streamedEvents is the size of the woken session, chunks included.
const streamedEvents = 100_000

// BenchmarkWakeStreamed100k times `dsh run --json --session-id` of an
// uncompacted 100,000-event session from process start to its first line
// (the session line, written once the session is awake) and to its exit
// (one scripted step more), and reports the process's CPU time and its peak
// RSS up to the session line (VmHWM, read while it runs: the child's
// ru_maxrss would include the test process's own RSS, which Linux carries
// across exec into the child's accounting). About 85%
// of the events are assistant/chunk lines, as streaming leaves them.
func BenchmarkWakeStreamed100k(b *testing.B) {
	w := newBenchWorld(b, `{"steps":[{"text":"ok"}],"repeat":"last"}`)
	const id = "session-bench-wake-streamed"
	writeStreamedSession(b, w.Root, w.Cwd, id, streamedEvents)
	fi, err := os.Stat(wakeLogPath(b, w.Root, id))
	if err != nil {
		b.Fatal(err)
	}
	wake := func() (first, exit, cpu time.Duration, peakKB int64) {
		cmd := w.command("run", "--json", "--session-id", id, "one more thing")
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
		line, rerr := br.ReadString('\n')
		first = time.Since(start)
		hwm, herr := procStatusKB(cmd.Process.Pid, "VmHWM")
		_, _ = io.Copy(io.Discard, br)
		werr := cmd.Wait()
		exit = time.Since(start)
		if rerr != nil || !strings.HasPrefix(line, `{"type":"session",`) || werr != nil {
			b.Fatalf("first line %q (%v), exit %v, stderr %s", line, rerr, werr, errb.String())
		}
		if herr != nil {
			b.Fatalf("VmHWM of dsh run at its session line: %v", herr)
		}
		peakKB = hwm
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		return first, exit, cpu, peakKB
	}
	wake() // proves the fixture wakes, and warms the page cache
	var firsts, exits, cpus []time.Duration
	var peaks []int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, e, c, p := wake()
		firsts, exits, cpus, peaks = append(firsts, f), append(exits, e), append(cpus, c), append(peaks, p)
	}
	b.StopTimer()
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / float64(time.Millisecond)
	}
	slices.Sort(peaks)
	b.ReportMetric(median(firsts), "p50-wake-ms")
	b.ReportMetric(median(exits), "p50-exit-ms")
	b.ReportMetric(median(cpus), "p50-cpu-ms") // user+sys of the whole run: steadier than wall time on a shared machine
	b.ReportMetric(float64(peaks[len(peaks)/2])/1024, "wake-peak-MiB")
	b.ReportMetric(float64(fi.Size())/(1<<20), "log-MiB")
}

// wakeLogPath is the log of session id under root.
func wakeLogPath(b *testing.B, root, id string) string {
	matches, err := filepath.Glob(filepath.Join(root, "*", id, "session.jsonl"))
	if err != nil || len(matches) != 1 {
		b.Fatalf("log of %s: %v %v", id, matches, err)
	}
	return matches[0]
}

// writeStreamedSession writes whole turns until the log holds at least n
// events: the prompt entering and leaving the inbox, a step that reasons
// and runs a tool, a step that reasons and answers, each model call
// streamed as DeepSeek streams it (a delta of a token or two) before its
// assistant/message.
func writeStreamedSession(b *testing.B, root, cwd, id string, n int) {
	b.Helper()
	lg, err := store.New(root).WithoutSync().Create(store.Header{ID: id, Cwd: cwd, Origin: "run",
		Config: &event.Config{Provider: "scripted", Model: "deepseek-flash"}})
	if err != nil {
		b.Fatal(err)
	}
	var seq int64
	add := func(typ string, data any) {
		ev := event.New(typ, data)
		ev.Seq, ev.Time = seq, 1_780_000_000_000+seq*40
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
		think := "The user wants the failing test fixed. I will run the package's tests first to see what fails."
		streamCall(add, turn, 1, usage, event.Reasoning(think), event.ContentBlock{Type: event.BlockToolCall, ID: callID, Name: "bash", Arguments: args})
		add(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 1, Usage: usage, FinishReason: "tool_calls",
			Message: event.Message{ID: fmt.Sprintf("a-%d-1", turn), Role: "assistant", Source: src, Content: []event.ContentBlock{
				event.Reasoning(think), {Type: event.BlockToolCall, ID: callID, Name: "bash", Arguments: args}}}})
		add(event.TypeToolCall, event.ToolCall{Turn: turn, Step: 1, CallID: callID, Name: "bash", Arguments: args})
		output := strings.Repeat(fmt.Sprintf("--- FAIL: TestThing%d (0.00s)\n    thing_test.go:42: got 1, want 2\n", turn), 4) + "FAIL\n[exit code: 1]"
		add(event.TypeToolResult, event.ToolResult{Turn: turn, Step: 1, Message: event.Message{
			ID: fmt.Sprintf("r-%d", turn), Role: "user", Source: event.Source{Kind: "tool", CallID: callID},
			Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: callID,
				Content: []event.ContentBlock{event.Text(output)}}}}})
		add(event.TypeStepEnd, event.Step{Turn: turn, Step: 1})
		add(event.TypeStepStart, event.Step{Turn: turn, Step: 2})
		think = "The assertion compares the wrong values."
		answer := fmt.Sprintf("TestThing%d fails because it compares the wrong values; the fix is to compare the result with 2.", turn)
		streamCall(add, turn, 2, usage, event.Reasoning(think), event.Text(answer))
		add(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 2, Usage: usage, FinishReason: "stop",
			Message: event.Message{ID: fmt.Sprintf("a-%d-2", turn), Role: "assistant", Source: src, Content: []event.ContentBlock{
				event.Reasoning(think), event.Text(answer)}}})
		add(event.TypeStepEnd, event.Step{Turn: turn, Step: 2})
		add(event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: event.TurnEndReason{Kind: event.ReasonCompleted}})
	}
	if err := lg.Close(); err != nil {
		b.Fatal(err)
	}
}

// streamCall records the chunks of one streamed model call that returned
// blocks: a block-start and deltas of about six bytes per block, then a
// block-end per block, usage and finish (core/chunks.go's order).
func streamCall(add func(string, any), turn, step int, usage *event.Usage, blocks ...event.ContentBlock) {
	chunk := func(c event.Chunk) {
		add(event.TypeAssistantChunk, event.AssistantChunk{Turn: turn, Step: step, Chunk: c})
	}
	for i, bl := range blocks {
		chunk(event.Chunk{Type: event.ChunkBlockStart, Index: &i, BlockType: bl.Type})
		body := bl.Text
		if bl.Type == event.BlockToolCall {
			body = bl.Arguments
		}
		for len(body) > 0 {
			piece := body[:min(6, len(body))]
			body = body[len(piece):]
			switch bl.Type {
			case event.BlockReasoning:
				chunk(event.Chunk{Type: event.ChunkReasoningDelta, Index: &i, Text: &piece})
			case event.BlockText:
				chunk(event.Chunk{Type: event.ChunkTextDelta, Index: &i, Text: &piece})
			default:
				chunk(event.Chunk{Type: event.ChunkToolCallDelta, Index: &i, ID: bl.ID, Name: bl.Name, ArgumentsDelta: &piece})
			}
		}
	}
	for i := range blocks {
		chunk(event.Chunk{Type: event.ChunkBlockEnd, Index: &i, Block: &blocks[i]})
	}
	chunk(event.Chunk{Type: event.ChunkUsage, Usage: usage})
	chunk(event.Chunk{Type: event.ChunkFinish, Reason: &event.FinishReason{Kind: event.FinishStop}})
}
