package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// watchProvider wraps a provider and checks every request against the
// model-side invariants: no request over the window, system prompt and
// tools byte-stable, every tool call answered right after it, reasoning
// replayed on every assistant message that had some.
type watchProvider struct {
	model.Provider
	window int64
	mu     sync.Mutex
	reqs   int
	sums   int
	system string
	tools  string
	bad    []string
	maxTok int64
	cut    int // requests that carried a message cut to fit
}

func (w *watchProvider) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	w.mu.Lock()
	w.reqs++
	if req.Summary {
		w.sums++
	}
	tokens := int64(0)
	for _, m := range req.Messages {
		tokens += int64(len(m.Content) + len(m.Reasoning))
		for _, tc := range m.ToolCalls {
			tokens += int64(len(tc.Name) + len(tc.Arguments))
		}
	}
	var tools strings.Builder
	for _, t := range req.Tools {
		tokens += int64(len(t.Name) + len(t.Description) + len(t.Parameters))
		fmt.Fprintf(&tools, "%s|%s|%s;", t.Name, t.Description, t.Parameters)
	}
	tokens /= 4
	w.maxTok = max(w.maxTok, tokens)
	if w.window > 0 && tokens > w.window {
		w.bad = append(w.bad, fmt.Sprintf("request %d has %d tokens, over the %d window", w.reqs, tokens, w.window))
	}
	if w.system == "" {
		w.system, w.tools = req.Messages[0].Content, tools.String()
	} else if w.system != req.Messages[0].Content || w.tools != tools.String() {
		w.bad = append(w.bad, fmt.Sprintf("request %d changed the system prompt or the tools", w.reqs))
	}
	for _, m := range req.Messages {
		if strings.Contains(m.Content, "cut here so this message fits the model's context window") {
			w.cut++
			break
		}
	}
	for i, m := range req.Messages {
		if m.Role == "assistant" && m.Kind != model.KindWork && m.Reasoning == "" && len(m.ToolCalls) > 0 {
			w.bad = append(w.bad, fmt.Sprintf("request %d: assistant message %d lost its reasoning", w.reqs, i))
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			for k, tc := range m.ToolCalls {
				if i+1+k >= len(req.Messages) || req.Messages[i+1+k].ToolCallID != tc.ID {
					w.bad = append(w.bad, fmt.Sprintf("request %d: call %s of message %d is not answered right after it", w.reqs, tc.ID, i))
				}
			}
		}
		if m.Role == "tool" && (i == 0 || (req.Messages[i-1].Role != "assistant" && req.Messages[i-1].Role != "tool")) {
			w.bad = append(w.bad, fmt.Sprintf("request %d: tool result %d follows no call", w.reqs, i))
		}
	}
	w.mu.Unlock()
	return w.Provider.Stream(ctx, req, d)
}

func (w *watchProvider) problems() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// scriptedHarness is a runtime on the scripted provider, watched.
type scriptedHarness struct {
	t     *testing.T
	root  string
	cwd   string
	watch *watchProvider
	rt    *Runtime
	cfg   Config
}

func newScriptedHarness(t *testing.T, script string, window int64, mutate func(*Config)) *scriptedHarness {
	t.Helper()
	sc, err := model.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	h := &scriptedHarness{t: t, root: t.TempDir(), cwd: t.TempDir()}
	h.watch = &watchProvider{Provider: model.NewScripted(sc), window: window}
	h.cfg = Config{
		Store:          store.New(h.root),
		NewProvider:    func(string) (model.Provider, error) { return h.watch, nil },
		Defaults:       event.Config{Provider: "scripted", Model: "m"},
		PermissionMode: permission.ModeFull,
		Tools:          tool.Builtins(),
		Backoff:        func(int, time.Duration) time.Duration { return time.Millisecond },
	}
	if mutate != nil {
		mutate(&h.cfg)
	}
	h.rt = h.open()
	return h
}

func (h *scriptedHarness) open() *Runtime {
	rt, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

func countTypes(evs []event.Event) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[e.Type]++
	}
	return n
}

// bigFile writes a file of n bytes of numbered lines into dir.
func bigFile(t *testing.T, dir, name string, n int) {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %05d of a large file that the model reads again and again\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

const readLoopScript = `{"contextWindow": 30000, "repeat": "cycle", "steps": [
  {"reasoning": "read it", "toolCalls": [{"name": "read", "arguments": {"file_path": "big.txt"}}]},
  {"reasoning": "report", "text": "done reading"}]}`

func TestManyTurnsOfLargeResultsFitASmallWindow(t *testing.T) {
	h := newScriptedHarness(t, readLoopScript, 30000, nil)
	bigFile(t, h.cwd, "big.txt", 16<<10)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	turns := 200
	if testing.Short() {
		turns = 40
	}
	for i := range turns {
		res := run(t, s, fmt.Sprintf("turn %d: read big.txt", i))
		if res.Reason.Kind != event.ReasonCompleted {
			t.Fatalf("turn %d ended %+v", i, res.Reason)
		}
		if res.Text != "done reading" {
			t.Fatalf("turn %d answered %q", i, res.Text)
		}
	}
	for _, p := range h.watch.problems() {
		t.Error(p)
	}
	n := countTypes(transcript(t, s))
	if n[event.TypeCompactionCheckpoint] < turns/10 {
		t.Errorf("%d checkpoints in %d turns; want compactions to keep the history small", n[event.TypeCompactionCheckpoint], turns)
	}
	if n[event.TypeAssistantAttempt] != 0 || n[event.TypeCompactionFailed] != 0 {
		t.Errorf("%d failed attempts, %d failed compactions; want none", n[event.TypeAssistantAttempt], n[event.TypeCompactionFailed])
	}
	if n[event.TypeRequestContext] != 1 {
		t.Errorf("%d request/context events; want one, the window never changed", n[event.TypeRequestContext])
	}
	t.Logf("%d turns: %d requests (%d summaries), %d checkpoints, largest request %d tokens",
		turns, h.watch.reqs, h.watch.sums, n[event.TypeCompactionCheckpoint], h.watch.maxTok)

	// A resumed session rebuilds the same model-facing history.
	live := s.conv.build(s, s.header0, true)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r2 := h.open()
	s2, err := r2.Resume(context.Background(), s.ID(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if evs := s2.Events(); evs[0].Type != event.TypeCompactionCheckpoint || len(evs) > 200 {
		t.Fatalf("resume read %d events from %s; want the tail from the last checkpoint", len(evs), evs[0].Type)
	}
	again := s2.conv.build(s2, s2.header0, true)
	if fmt.Sprint(live) != fmt.Sprint(again) {
		t.Fatalf("resumed history differs:\nlive  %d messages\nagain %d messages", len(live), len(again))
	}
	if res := run(t, s2, "one more"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn after resume ended %+v", res.Reason)
	}
}

func TestCheckpointKeepsTaskRecentPromptsAndSummary(t *testing.T) {
	h := newScriptedHarness(t, `{"repeat": "last", "steps": [{"text": "ok"}], "summary": {"text": "SUMMARY TEXT"}}`, 0, nil)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		run(t, s, fmt.Sprintf("prompt %d", i))
	}
	cp, err := s.Compact(context.Background(), "the tests")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Trigger != event.CompactManual || cp.Focus != "the tests" || !strings.HasPrefix(cp.Summary, "SUMMARY TEXT") {
		t.Fatalf("checkpoint %+v", cp)
	}
	var kinds []string
	for _, m := range cp.History {
		kinds = append(kinds, m.Kind+":"+m.Content[:min(len(m.Content), 8)])
	}
	want := "[context:<dsh-con task:prompt 0 :prompt 1 :prompt 2 summary:[context]"
	if got := fmt.Sprint(kinds); got != want {
		t.Fatalf("kept %s, want %s", got, want)
	}
	if cp.ReplacedMessages != 3 || cp.Usage == nil {
		t.Fatalf("replaced %d, usage %v", cp.ReplacedMessages, cp.Usage)
	}
	// The summary call was a continuation: the history then the instruction.
	if res := run(t, s, "after"); res.Reason.Kind != event.ReasonCompleted || res.Text != "ok" {
		t.Fatalf("turn after compaction: %+v", res)
	}
	evs := transcript(t, s)
	if countTypes(evs)[event.TypeCompactionStart] != 1 {
		t.Fatalf("events %v", types(evs))
	}
}

func TestCompactOfAnEmptySessionIsRefused(t *testing.T) {
	h := newScriptedHarness(t, `[{"text":"ok"}]`, 0, nil)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(context.Background(), ""); !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("err %v", err)
	}
}

func TestFailedSummaryLeavesTheSessionUsable(t *testing.T) {
	h := newScriptedHarness(t, `{"repeat": "last", "steps": [{"text": "ok"}],
	  "summary": {"errors": [{"class": "AUTH"}]}}`, 0, nil)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "first")
	before := fmt.Sprint(s.conv.msgs)
	if _, err := s.Compact(context.Background(), ""); err == nil {
		t.Fatal("compaction with a failing summary call succeeded")
	}
	if fmt.Sprint(s.conv.msgs) != before {
		t.Fatal("a failed compaction changed the history")
	}
	n := countTypes(transcript(t, s))
	if n[event.TypeCompactionFailed] != 1 || n[event.TypeCompactionCheckpoint] != 0 {
		t.Fatalf("events %v", types(transcript(t, s)))
	}
	if res := run(t, s, "second"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn after a failed compaction: %+v", res.Reason)
	}
}

func TestCancelledCompactAnswersCancelled(t *testing.T) {
	h := newScriptedHarness(t, `{"repeat": "last", "steps": [{"text": "ok"}], "summary": {"delayMs": 60000}}`, 0, nil)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "first")
	sub := h.rt.Subscribe()
	defer sub.Close()
	done := make(chan error, 1)
	go func() { _, err := s.Compact(context.Background(), ""); done <- err }()
	waitEvent(t, sub, event.TypeCompactionStart)
	s.Cancel(nil)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled compaction did not answer")
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "second"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn after a cancelled compaction: %+v", res.Reason)
	}
}

// waitEvent waits for the next committed event of type typ.
func waitEvent(t *testing.T, sub *Subscription, typ string) event.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n, ok := <-sub.C():
			if !ok {
				t.Fatal("subscription closed")
			}
			if n.Kind == NoticeEvent && n.Event.Type == typ {
				return n.Event
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

func TestOverflowCompactsOnceThenRetries(t *testing.T) {
	// The window setting says 1M, the model refuses once: the loop
	// compacts and the retry succeeds.
	h := newScriptedHarness(t, `{"repeat": "last", "steps": [
	  {"text": "a"}, {"text": "b"},
	  {"errors": [{"class": "CONTEXT_WINDOW_EXCEEDED", "status": 400, "message": "too long"}], "text": "c"}]}`, 0, nil)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "one")
	run(t, s, "two")
	res := run(t, s, "three")
	if res.Reason.Kind != event.ReasonCompleted || res.Text != "c" {
		t.Fatalf("turn after overflow: %+v", res)
	}
	n := countTypes(transcript(t, s))
	if n[event.TypeCompactionCheckpoint] != 1 || n[event.TypeAssistantAttempt] != 1 {
		t.Fatalf("events %v", n)
	}
}

func TestOverflowWithAWrongWindowSettingRecovers(t *testing.T) {
	// contextWindow says 1M but the model's real window is 6000 tokens:
	// the refusals compact once, then trim, and the session lives on.
	h := newScriptedHarness(t, `{"contextWindow": 6000, "repeat": "cycle", "steps": [
	  {"reasoning": "r", "toolCalls": [{"name": "read", "arguments": {"file_path": "big.txt"}}]},
	  {"reasoning": "r", "text": "read"}]}`, 0, func(c *Config) { c.ContextWindow = 1_000_000 })
	bigFile(t, h.cwd, "big.txt", 8<<10)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if res := run(t, s, fmt.Sprintf("read %d", i)); res.Reason.Kind != event.ReasonCompleted {
			t.Fatalf("turn %d: %+v %+v\n%v", i, res.Reason, res.Reason.Error, countTypes(transcript(t, s)))
		}
	}
	n := countTypes(transcript(t, s))
	if n[event.TypeCompactionCheckpoint] == 0 {
		t.Fatalf("no compaction: %v", n)
	}
	// The refusal named the real window; later requests are sized for it.
	s.mu.Lock()
	learned := s.learnedWindow
	s.mu.Unlock()
	if learned != 6000 {
		t.Fatalf("learned window %d", learned)
	}
}

func TestHugeToolResultIsCutToFit(t *testing.T) {
	h := newScriptedHarness(t, `{"contextWindow": 8000, "repeat": "last", "steps": [
	  {"reasoning": "r", "toolCalls": [{"name": "read", "arguments": {"file_path": "huge.txt"}}]},
	  {"text": "seen"}]}`, 8000, nil)
	bigFile(t, h.cwd, "huge.txt", 90<<10)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "read the huge file"); res.Reason.Kind != event.ReasonCompleted || res.Text != "seen" {
		t.Fatalf("turn: %+v", res)
	}
	for _, p := range h.watch.problems() {
		t.Error(p)
	}
	if n := countTypes(transcript(t, s)); n[event.TypeAssistantAttempt] != 0 {
		t.Fatalf("a request was refused: %v", n)
	}
	h.watch.mu.Lock()
	cut := h.watch.cut
	h.watch.mu.Unlock()
	if cut == 0 {
		t.Fatal("no request carried the huge result cut with a note")
	}
}

// transcript is every event of the session, from its log.
func transcript(t *testing.T, s *Session) []event.Event {
	t.Helper()
	evs, err := s.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestTornCheckpointOpensWithTheOldHistory: a crash while the checkpoint
// line was being written leaves a torn last line; the session opens with
// the history from before the compaction, whole, and compacts again later.
func TestTornCheckpointOpensWithTheOldHistory(t *testing.T) {
	h := newScriptedHarness(t, `{"repeat": "last", "steps": [{"text": "ok"}], "summary": {"text": "the summary"}}`, 0, nil)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		run(t, s, fmt.Sprintf("prompt %d", i))
	}
	before := fmt.Sprint(s.conv.build(s, s.header0, true))
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir(), "session.jsonl")
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := strings.LastIndex(strings.TrimSuffix(string(data), "\n"), "\n")
	if !strings.Contains(string(data[last:]), `"type":"compaction/checkpoint"`) {
		t.Fatal("the checkpoint is not the last line")
	}
	// Cut the checkpoint line in the middle, as a crash inside its write would.
	if err := os.WriteFile(path, data[:last+1+(len(data)-last)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := h.open().Resume(context.Background(), s.ID(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s2.conv.build(s2, s2.header0, true)); got != before {
		t.Fatal("the session did not open with its history from before the compaction")
	}
	if _, err := os.Stat(path + ".broken"); err != nil {
		t.Fatalf("no copy of the torn log: %v", err)
	}
	if _, err := s2.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if res := run(t, s2, "after"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn after the repair: %+v", res.Reason)
	}
}

// TestResumeFromAMidTurnCheckpointClosesTheTurn: a process that died after
// an automatic compaction inside a turn leaves a log whose tail starts at
// the checkpoint; the repair closes that turn (its step too) and the next
// turn is numbered after it.
func TestResumeFromAMidTurnCheckpointClosesTheTurn(t *testing.T) {
	h := newScriptedHarness(t, `{"repeat": "last", "steps": [{"text": "ok"}]}`, 0, nil)
	s, err := h.rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "first")
	id := s.ID()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Append what a killed turn 2 leaves: its start, then a checkpoint made
	// in step 1.
	lg, _, err := store.New(h.root).Open(id)
	if err != nil {
		t.Fatal(err)
	}
	add := func(typ string, data any) {
		ev := event.New(typ, data)
		ev.Seq = lg.NextSeq()
		if err := lg.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	add(event.TypeTurnStart, event.TurnStart{Turn: 2})
	add(event.TypeStepStart, event.Step{Turn: 2, Step: 1})
	add(event.TypeCompactionCheckpoint, event.CompactionCheckpoint{Trigger: event.CompactAuto, Turn: 2, Step: 1,
		History: []event.CheckpointMessage{{Kind: model.KindSummary, Role: "user", Content: CompactedPrefix + "so far"}},
		State:   &event.CheckpointState{Turn: 2, Titled: true}})
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := h.open().Resume(context.Background(), id, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tail := types(s2.Events())
	if got := strings.Join(tail, ","); got != "compaction/checkpoint,step/end,turn/end" {
		t.Fatalf("resumed tail %s", got)
	}
	if res := run(t, s2, "second"); res.Turn != 3 || res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("next turn %+v", res)
	}
}
