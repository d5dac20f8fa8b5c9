package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// readLoop answers like a model that reads big.txt once per prompt and
// then reports: a summary call gets a summary, a request ending with a
// tool result gets the report, anything else gets the read call. Every
// reply reports the usage the server measured, prefix cache included.
type readLoop struct {
	mu        sync.Mutex
	calls     int
	summaries int
	prompt    int64
	cached    int64
	refused   int
}

func (l *readLoop) respond(req *modeltest.Request) modeltest.Reply {
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.Refused {
		l.refused++
	}
	l.prompt += req.PromptTokens
	l.cached += req.CachedTokens
	u := req.Usage(40)
	if modeltest.IsCompaction(req) {
		l.summaries++
		return modeltest.SummaryReply(fmt.Sprintf("Summary %d: the user asks to read big.txt each turn; it was read.", l.summaries), u)
	}
	msgs := req.Body.Messages
	if last := msgs[len(msgs)-1]; last.Role == "tool" {
		return modeltest.NewStream().Role().Reasoning("report").Text("done reading").Finish("stop").Usage(u).Done().Reply()
	}
	l.calls++
	return modeltest.NewStream().Role().Reasoning("read it").
		ToolCall(0, fmt.Sprintf("call_read_%d", l.calls), "read", `{"file_path":"big.txt"}`, 1).
		Finish("tool_calls").Usage(u).Done().Reply()
}

func (l *readLoop) ratio() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prompt == 0 {
		return 0
	}
	return float64(l.cached) / float64(l.prompt)
}

func writeBig(t testing.TB, dir string, n int) {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %05d of a large file that the model reads again and again\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// logTypes counts the event types of a stored session.
func logTypes(t *testing.T, w *world, id string) map[string]int {
	t.Helper()
	r := w.run(nil, "sessions", "show", "--json", id)
	wantExit(t, r, 0)
	var doc struct {
		Events []event.Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range doc.Events {
		n[ev.Type]++
	}
	return n
}

// TestContextManyTurnsInASmallWindow drives 200 turns of 16 KB tool
// results through `dsh sdk` against a model with a 30k-token window: every
// turn completes, no request is refused, and the model-side invariants
// (pairing, reasoning replay, byte-stable system prompt and tools, prefix
// extension within each epoch) hold on every request, before and after
// each compaction.
func TestContextManyTurnsInASmallWindow(t *testing.T) {
	t.Parallel()
	loop := &readLoop{}
	srv := modeltest.New(t, modeltest.WithContextLimit(30000), modeltest.WithResponder(loop.respond))
	w := newWorld(t, append(srv.Env(), "DSH_CONTEXT_WINDOW=30000")...)
	writeBig(t, w.Cwd, 16<<10)
	c := startSDK(t, w, sdkConfig(w))
	sess := c.Session("")
	turns := 200
	if testing.Short() {
		turns = 40
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range turns {
		res, err := sess.Run(ctx, fmt.Sprintf("turn %d: read big.txt", i))
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if res.FinishReason != event.ReasonCompleted || res.FinalResponse != "done reading" {
			t.Fatalf("turn %d ended %q with %q", i, res.FinishReason, res.FinalResponse)
		}
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("%d model-side violations, first: %s", len(v), v[0])
	}
	if loop.refused != 0 {
		t.Fatalf("%d requests were over the window", loop.refused)
	}
	if loop.summaries < turns/10 {
		t.Fatalf("%d compactions in %d turns", loop.summaries, turns)
	}
	t.Logf("%d turns, %d requests, %d compactions, prefix-cache hit ratio %.3f", turns, srv.Count(), loop.summaries, loop.ratio())
	pxClose(t, c)

	// A wake of the session continues from its last checkpoint.
	r := w.run(nil, "run", "--session-id", sess.ID(), "read it once more")
	wantExit(t, r, 0)
	if strings.TrimSpace(r.Stdout) != "done reading" {
		t.Fatalf("wake answered %q", r.Stdout)
	}
	last := srv.Last()
	if !strings.Contains(string(last.Raw), modeltest.CompactedPrefix) {
		t.Fatal("the wake's request does not start from the checkpoint")
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("violations after the wake: %v", v[0])
	}
}

// TestContextOverflowWithAWrongWindowAndALaterWake: the setting says 1M
// tokens but the model holds 12k. The first refusal compacts and the retry
// fits; a session grown under a larger window and then woken against the
// small one recovers the same way.
func TestContextOverflowWithAWrongWindowAndALaterWake(t *testing.T) {
	t.Parallel()
	loop := &readLoop{}
	srv := modeltest.New(t, modeltest.WithResponder(loop.respond))
	w := newWorld(t, append(srv.Env(), "DSH_CONTEXT_WINDOW=1000000")...)
	writeBig(t, w.Cwd, 8<<10)

	// Grow a session to ~25k tokens while the model takes anything.
	evs, r := runJSON(t, w, nil, "run", "--json", "read big.txt")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)
	for i := range 9 {
		r := w.run(nil, "run", "--session-id", id, fmt.Sprintf("again %d", i))
		wantExit(t, r, 0)
	}
	// Now the model's window is 12k: the next wake is refused, compacts
	// once and goes on.
	srv.SetContextLimit(12000)
	for i := range 3 {
		r := w.run(nil, "run", "--session-id", id, fmt.Sprintf("after %d", i))
		wantExit(t, r, 0)
		if strings.TrimSpace(r.Stdout) != "done reading" {
			t.Fatalf("wake %d answered %q (stderr %s)", i, r.Stdout, r.Stderr)
		}
	}
	n := logTypes(t, w, id)
	if n[event.TypeCompactionCheckpoint] == 0 || n[event.TypeAssistantAttempt] == 0 {
		t.Fatalf("log %v: want a refusal and a compaction", n)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v[0])
	}
}

// TestContextManualCompaction covers `dsh sessions compact` and the SDK's
// session/compact: each answers once the checkpoint is committed, and the
// session goes on from it.
func TestContextManualCompaction(t *testing.T) {
	t.Parallel()
	loop := &readLoop{}
	srv := modeltest.New(t, modeltest.WithResponder(loop.respond))
	w := newWorld(t, srv.Env()...)
	writeBig(t, w.Cwd, 4<<10)
	evs, r := runJSON(t, w, nil, "run", "--json", "read big.txt")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)

	r = w.run(nil, "sessions", "compact", id, "the", "file")
	wantExit(t, r, 0)
	if !strings.Contains(r.Stdout, "compacted session "+id) {
		t.Fatalf("stdout %q", r.Stdout)
	}
	last := srv.Last()
	if !modeltest.IsCompaction(last) || !strings.Contains(lastUserText(t, last), "Focus the summary on: the file") {
		t.Fatal("the last request is not the focused summary call")
	}
	if n := logTypes(t, w, id); n[event.TypeCompactionCheckpoint] != 1 {
		t.Fatalf("log %v", n)
	}
	r = w.run(nil, "sessions", "compact", "session-nope")
	wantExit(t, r, 1)

	// The SDK door: compact a stored session, then prompt it.
	c := startSDK(t, w, sdkConfig(w))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess := c.Session(id)
	res, err := sess.Compact(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.TokensBefore <= 0 || res.TokensAfter <= 0 {
		t.Fatalf("result %+v", res)
	}
	run, err := sess.Run(ctx, "read it again")
	if err != nil || run.FinishReason != event.ReasonCompleted {
		t.Fatalf("run after compact: %v %+v", err, run)
	}
	if _, err := c.Session("session-none").Compact(ctx, ""); err == nil || !strings.Contains(err.Error(), "unknown session") {
		t.Fatalf("compact of a missing session: %v", err)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v[0])
	}
	pxClose(t, c)
}

// TestContextKillDuringSummaryCall: dsh is SIGKILLed while a compaction's
// summary call is in flight, in the middle of a turn. The log opens with
// the old history (a compaction/start and no checkpoint, the turn closed
// interrupted), and the next wake compacts and completes.
func TestContextKillDuringSummaryCall(t *testing.T) {
	t.Parallel()
	loop := &readLoop{}
	srv := modeltest.New(t, modeltest.WithResponder(loop.respond))
	w := newWorld(t, srv.Env()...)
	writeBig(t, w.Cwd, 8<<10)
	evs, r := runJSON(t, w, nil, "run", "--json", "read big.txt")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)
	for i := range 2 {
		wantExit(t, w.run(nil, "run", "--session-id", id, fmt.Sprintf("again %d", i)), 0)
	}

	arrived := make(chan struct{})
	var once sync.Once
	srv.Handle(func(req *modeltest.Request) modeltest.Reply {
		if modeltest.IsCompaction(req) {
			once.Do(func() { close(arrived) })
			return modeltest.NewStream().Role().Stall().Reply()
		}
		return loop.respond(req)
	})
	cmd, stdin, stdout, errb := w.start("run", "--json", "--context-window", "10000", "--session-id", id, "go on")
	stdin.Close()
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("no summary call; stderr %s", errb.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	n := logTypes(t, w, id)
	if n[event.TypeCompactionStart] != 1 || n[event.TypeCompactionCheckpoint] != 0 {
		t.Fatalf("log after the kill: %v", n)
	}
	srv.Handle(loop.respond)
	r = w.run(nil, "run", "--context-window", "10000", "--session-id", id, "and now?")
	wantExit(t, r, 0)
	if strings.TrimSpace(r.Stdout) != "done reading" {
		t.Fatalf("wake after the kill answered %q", r.Stdout)
	}
	if n := logTypes(t, w, id); n[event.TypeCompactionCheckpoint] == 0 {
		t.Fatalf("the wake did not compact: %v", n)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v[0])
	}
}
