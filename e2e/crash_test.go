package e2e

// Crash recovery: dsh is SIGKILLed at random points of tool-heavy turns,
// through both doors, and every session is then resumed by a second
// process. This file also holds the helpers the other fault tests
// (load_test.go, secrets_test.go, badinput_test.go) share; their names
// start with px.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// ---- shared helpers -------------------------------------------------------

// pxStartSDK starts `dsh sdk` in w through the Go client and initializes it
// with provider (the client would otherwise ask for deepseek-official). The
// runtime is closed (and reaped) at cleanup if the test did not close it.
func pxStartSDK(t testing.TB, w *world, provider string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := client.Start(ctx, client.Config{
		Command:   []string{dshBin, "sdk"},
		Env:       w.Env,
		Dir:       w.Cwd,
		EOFGrace:  5 * time.Second,
		TermGrace: 2 * time.Second,
		KillGrace: 2 * time.Second,
		Options:   client.Options{RequestTimeout: 60 * time.Second},
	}, protocol.InitializeParams{Cwd: w.Cwd, Provider: provider})
	if err != nil {
		t.Fatalf("start dsh sdk: %v", err)
	}
	t.Cleanup(func() { pxClose(t, c) })
	return c
}

// pxClose closes a client (shutdown, then the close ladder); idempotent.
func pxClose(t testing.TB, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Errorf("close dsh sdk: %v", err)
	}
}

// pxRead replays session id from the world's session root, as a later
// process would.
func pxRead(t testing.TB, w *world, id string) []event.Event {
	t.Helper()
	_, evs, err := store.New(w.Root).Read(id)
	if err != nil {
		t.Fatalf("replay of session %q: %v", id, err)
	}
	return evs
}

// pxSameEvent reports whether a published event and a logged one are the
// same fact, byte for byte.
func pxSameEvent(a, b event.Event) bool {
	return a.Type == b.Type && a.Seq == b.Seq && a.Time == b.Time && bytes.Equal(a.Data, b.Data) &&
		bytes.Equal(a.SurfaceOp, b.SurfaceOp) && a.Ignorable == b.Ignorable
}

// pxPrefix checks that the log starts with the events a client received.
func pxPrefix(t testing.TB, got []event.Event, log []event.Event) {
	t.Helper()
	if len(got) > len(log) {
		t.Fatalf("the client received %d events but the log holds %d", len(got), len(log))
	}
	for i := range got {
		if !pxSameEvent(got[i], log[i]) {
			t.Fatalf("event %d differs:\nreceived %s %s\nlogged   %s %s", i, got[i].Type, got[i].Data, log[i].Type, log[i].Data)
		}
	}
}

// pxTurnEnds returns the reason kinds of the turn/end events, in order.
func pxTurnEnds(t testing.TB, evs []event.Event) []string {
	t.Helper()
	var kinds []string
	for _, ev := range evs {
		if ev.Type == event.TypeTurnEnd {
			d, err := event.Decode[event.TurnEnd](ev)
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, d.Reason.Kind)
		}
	}
	return kinds
}

// pxSnapshot lists every regular file under dir (relative path → size and
// modification time), skipping the subtrees in skip.
func pxSnapshot(t testing.TB, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = "dir"
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		out[rel] = fmt.Sprintf("%d %d", info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pxChanged returns the entries added or modified between two snapshots.
func pxChanged(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, k)
		}
	}
	return out
}

// pxLines splits stdout into complete lines; a last line without its
// newline (a write cut by a kill) is dropped.
func pxLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	var out []string
	for _, l := range lines {
		if strings.HasSuffix(l, "\n") {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

// ---- crash recovery ---------------------------------------------------------

// crashScript is a tool-heavy script: three steps of bash, write and
// todo_write calls, then an answer, cycling, streamed slowly enough (small
// deltas, a delay between them) that kills land inside steps, between
// tools and between commits.
const crashScript = `{"repeat":"cycle","deltaDelayMs":1,"chunkRunes":5,"steps":[
 {"reasoning":"Start with the shell and a plan.","toolCalls":[
   {"name":"bash","arguments":{"command":"echo one","description":"echo one"}},
   {"name":"todo_write","arguments":{"todos":[{"content":"echo","status":"in_progress"},{"content":"write","status":"pending"}]}}]},
 {"reasoning":"Now write a file and echo twice.","toolCalls":[
   {"name":"write","arguments":{"file_path":"out/notes.txt","content":"notes from the crash test\n"}},
   {"name":"bash","arguments":{"command":"echo two","description":"echo two"}},
   {"name":"bash","arguments":{"command":"echo three >&2","description":"echo three"}}]},
 {"toolCalls":[
   {"name":"todo_write","arguments":{"todos":[{"content":"echo","status":"completed"},{"content":"write","status":"completed"}]}},
   {"name":"bash","arguments":{"command":"printf 'four\\n'","description":"printf four"}}]},
 {"reasoning":"All tools ran.","text":"Done: echoed, wrote out/notes.txt and kept the plan."}
]}`

// crashPlan is one kill point: which door, after how many received events
// (or --json lines) the kill is sent, plus a jitter.
type crashPlan struct {
	door   string // "sdk" or "run"
	after  int
	jitter time.Duration
}

// crashOutcome is what one kill point found.
type crashOutcome struct {
	received    int  // events (sdk) or lines (run) received before the kill
	interrupted int  // turn/end interrupted in the log
	unknown     int  // TOOL_OUTCOME_UNKNOWN results
	orphans     int  // prompts receipted but never claimed by a turn
	torn        int  // .broken copies (torn tails repaired)
	exited      bool // the process had already exited when killed
}

// TestCrashRecovery SIGKILLs dsh at 50 random points of tool-heavy turns,
// half through `dsh sdk` (driven by the Go client), half through
// `dsh run --json`, then resumes each session with a second process:
// every event the first process published is in the log, in order; the log
// replays; an interrupted turn is closed `interrupted` with
// TOOL_OUTCOME_UNKNOWN for its open calls; the next prompt completes. The
// random seed is logged; DSH_CRASH_SEED replays a run.
func TestCrashRecovery(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DSH_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DSH_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("crash: seed %d (replay with DSH_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))

	// Calibrate: one whole turn per door tells how many events (lines) a
	// turn has, so kill points are spread over the whole turn.
	span := map[string]int{"sdk": crashCalibrate(t, "sdk"), "run": crashCalibrate(t, "run")}
	t.Logf("crash: a whole turn is %d session.events (sdk) and %d --json lines (run)", span["sdk"], span["run"])

	const kills = 50
	plans := make([]crashPlan, kills)
	worlds := make([]*world, kills)
	for i := range plans {
		door := []string{"sdk", "run"}[i%2]
		plans[i] = crashPlan{door: door, after: 1 + rng.IntN(span[door]), jitter: time.Duration(rng.IntN(2000)) * time.Microsecond}
		w := newWorld(t)
		w.Env = append(w.Env, w.scriptEnv(crashScript)...)
		worlds[i] = w
	}

	outcomes := make([]crashOutcome, kills)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p := plans[i]
			t.Run(fmt.Sprintf("%02d-%s-after-%d", i, p.door, p.after), func(t *testing.T) {
				w := *worlds[i]
				w.t = t
				if p.door == "sdk" {
					outcomes[i] = crashSDK(t, &w, p)
				} else {
					outcomes[i] = crashRun(t, &w, p)
				}
				t.Logf("outcome %+v", outcomes[i])
			})
		}()
	}
	wg.Wait()

	var sum crashOutcome
	exited := 0
	for _, o := range outcomes {
		sum.interrupted += o.interrupted
		sum.unknown += o.unknown
		sum.orphans += o.orphans
		sum.torn += o.torn
		if o.exited {
			exited++
		}
	}
	t.Logf("crash: %d kill points (%d sdk, %d run), 0 corrupt logs: %d turns closed interrupted, %d tool outcomes unknown, "+
		"%d torn tails repaired, %d kills after the turn had ended",
		kills, (kills+1)/2, kills/2, sum.interrupted, sum.unknown, sum.torn, kills-sum.interrupted-sum.orphans)
	if exited > 0 {
		t.Logf("crash: %d processes had exited before their kill", exited)
	}
	if sum.orphans > 0 {
		// A prompt whose receipt was committed before the kill must be
		// claimed by a turn after the resume (core re-queues it).
		t.Errorf("crash: %d receipted prompts were never claimed by a turn", sum.orphans)
	}
	if sum.interrupted == 0 {
		t.Errorf("no kill landed inside a turn; the kill points are not spread over the turn")
	}
}

// crashCalibrate runs one whole turn through door and returns how many
// session.events (sdk) or --json lines after the session line (run) it
// produced.
func crashCalibrate(t *testing.T, door string) int {
	t.Helper()
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(crashScript)...)
	if door == "run" {
		r := w.run(nil, "run", "--json", "crash task")
		if r.Code != 0 {
			t.Fatalf("calibration run: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		return len(pxLines(r.Stdout)) - 2 // minus session and final
	}
	c := pxStartSDK(t, w, "scripted")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.NewSession().Run(ctx, "crash task")
	if err != nil || res.FinishReason != event.ReasonCompleted {
		t.Fatalf("calibration turn: %v (finish %q)", err, res.FinishReason)
	}
	pxClose(t, c)
	return len(res.Events) + 1 // the receipt is the first event; res starts at it
}

// crashSDK kills a `dsh sdk` mid-turn and resumes the session with a new
// one.
func crashSDK(t *testing.T, w *world, p crashPlan) crashOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := pxStartSDK(t, w, "scripted")
	id := c.NewSession().ID()
	sub := c.SubscribeSessionTree(id)
	defer sub.Close()
	promptErr := make(chan error, 1)
	go func() {
		_, err := c.Session(id).Prompt(ctx, client.Text("crash task"))
		promptErr <- err
	}()

	var got []event.Event
	var out crashOutcome
	killed := false
	for !killed {
		n, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("before the kill: %v", err)
		}
		switch n.Method {
		case protocol.NotifySessionEvent:
			pe, err := n.Event()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pe.Event)
		case protocol.NotifySessionStatus:
			if st, _ := n.Status(); st.Status == protocol.StatusIdle {
				killed = true // the turn is over: kill it idle
				continue
			}
		}
		if len(got) >= p.after {
			killed = true
		}
	}
	time.Sleep(p.jitter)
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		out.exited = true
	}
	// Whatever was read before the transport died was committed too.
	for {
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := sub.Next(dctx)
		dcancel()
		if err != nil {
			var tce *client.TransportClosedError
			if !errors.As(err, &tce) {
				t.Fatalf("draining after the kill: %v", err)
			}
			break
		}
		if n.Method == protocol.NotifySessionEvent {
			pe, err := n.Event()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pe.Event)
		}
	}
	<-promptErr // answered, or failed by the kill
	pxClose(t, c)
	out.received = len(got)
	for i, ev := range got {
		if ev.Seq != int64(i) {
			t.Fatalf("received event %d with seq %d", i, ev.Seq)
		}
	}

	// A replay straight after the crash, as `dsh sessions show` would do.
	pxPrefix(t, got, pxRead(t, w, id))

	// Resume with a second process and prompt again.
	c2 := pxStartSDK(t, w, "scripted")
	res, err := c2.Session(id).Run(ctx, "after the crash")
	if err != nil {
		t.Fatalf("prompt after the crash: %v", err)
	}
	if res.FinishReason != event.ReasonCompleted {
		t.Fatalf("the turn after the crash ended %q", res.FinishReason)
	}
	pxClose(t, c2)

	log := pxRead(t, w, id)
	pxPrefix(t, got, log)
	// The second process's events are the log's tail, byte for byte.
	if len(res.Events) == 0 {
		t.Fatal("no events after the crash")
	}
	at := int(res.Events[0].Seq)
	pxPrefix(t, res.Events, log[at:at+len(res.Events)])
	crashCheckLog(t, w, id, log, at, &out)
	return out
}

// crashRun kills a `dsh run --json` mid-turn and resumes the session with
// `dsh run --session-id`.
func crashRun(t *testing.T, w *world, p crashPlan) crashOutcome {
	cmd, stdin, stdout, errb := w.start("run", "--json", "crash task")
	stdin.Close()
	var out crashOutcome
	br := bufio.NewReader(stdout)
	var lines []string
	id := ""
	var rest bytes.Buffer
	killed := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			rest.WriteString(line)
			break
		}
		line = strings.TrimSuffix(line, "\n")
		if id == "" {
			var s struct {
				Type      string `json:"type"`
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal([]byte(line), &s) != nil || s.Type != "session" || s.SessionID == "" {
				t.Fatalf("first line is not the session line: %q", line)
			}
			id = s.SessionID
			continue
		}
		lines = append(lines, line)
		if !killed && len(lines) >= p.after {
			killed = true
			time.Sleep(p.jitter)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				out.exited = true
			}
			// Keep reading: lines already in the pipe were committed.
		}
	}
	_ = cmd.Wait() // killed, or exited on its own
	if !killed {
		out.exited = true
	}
	if rest.Len() > 0 {
		t.Logf("a line was cut by the kill: %q", rest.String())
	}
	if id == "" {
		t.Fatalf("no session line before the kill (stderr %s)", errb.String())
	}
	// Drop the final line if the turn ended before the kill.
	if n := len(lines); n > 0 && strings.HasPrefix(lines[n-1], `{"type":"final"`) {
		lines = lines[:n-1]
	}
	out.received = len(lines)
	recvKeys := make([]string, 0, len(lines))
	for _, l := range lines {
		k, err := crashLineKey(l)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		recvKeys = append(recvKeys, k)
	}
	crashKeysPrefix(t, recvKeys, pxRead(t, w, id))

	r := w.run(nil, "run", "--json", "--session-id", id, "after the crash")
	if r.Code != 0 {
		t.Fatalf("resume: exit %d\nstdout %s\nstderr %s", r.Code, r.Stdout, r.Stderr)
	}
	log := pxRead(t, w, id)
	crashKeysPrefix(t, recvKeys, log)
	at := -1
	for i, ev := range log {
		if ev.Type == event.TypeInboxSpliced && crashIsReceipt(ev) {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no receipt in the log")
	}
	crashCheckLog(t, w, id, log, at, &out)
	return out
}

// crashIsReceipt reports whether ev is an enqueue receipt (it inserts a
// message), not a turn's claim of the inbox.
func crashIsReceipt(ev event.Event) bool {
	d, err := event.Decode[event.InboxSpliced](ev)
	return err == nil && len(d.Inserted) > 0
}

// crashLineKey reduces a --json line to the fact it projects.
func crashLineKey(line string) (string, error) {
	var l struct {
		Type   string `json:"type"`
		Phase  string `json:"phase"`
		Turn   int    `json:"turn"`
		Step   int    `json:"step"`
		Text   string `json:"text"`
		CallID string `json:"callId"`
		Status string `json:"status"`
		Reason struct {
			Kind string `json:"kind"`
		} `json:"reason"`
	}
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		return "", err
	}
	switch l.Type {
	case "status":
		switch l.Phase {
		case "turn_start":
			return fmt.Sprintf("turn_start %d", l.Turn), nil
		case "turn_end":
			return fmt.Sprintf("turn_end %d %s", l.Turn, l.Reason.Kind), nil
		}
		return fmt.Sprintf("%s %d %d", l.Phase, l.Turn, l.Step), nil
	case "thinking", "text":
		return l.Type + " " + l.Text, nil
	case "tool_call":
		return "tool_call " + l.CallID, nil
	case "tool_result":
		return "tool_result " + l.CallID + " " + l.Status, nil
	}
	return "", fmt.Errorf("unexpected line type %q", l.Type)
}

// crashLogKeys projects logged events the way --json does, to the keys of
// crashLineKey.
func crashLogKeys(t testing.TB, evs []event.Event) []string {
	t.Helper()
	var keys []string
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeTurnStart:
			d, _ := event.Decode[event.TurnStart](ev)
			keys = append(keys, fmt.Sprintf("turn_start %d", d.Turn))
		case event.TypeStepStart, event.TypeStepEnd:
			d, _ := event.Decode[event.Step](ev)
			phase := "step_start"
			if ev.Type == event.TypeStepEnd {
				phase = "step_end"
			}
			keys = append(keys, fmt.Sprintf("%s %d %d", phase, d.Turn, d.Step))
		case event.TypeTurnEnd:
			d, _ := event.Decode[event.TurnEnd](ev)
			keys = append(keys, fmt.Sprintf("turn_end %d %s", d.Turn, d.Reason.Kind))
		case event.TypeAssistantMessage:
			if !ev.IsAppend() {
				continue
			}
			d, err := event.Decode[event.AssistantMessage](ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range d.Message.Content {
				if (b.Type == event.BlockText || b.Type == event.BlockReasoning) && b.Text != "" {
					typ := "text"
					if b.Type == event.BlockReasoning {
						typ = "thinking"
					}
					keys = append(keys, typ+" "+b.Text)
				}
			}
		case event.TypeToolCall:
			d, _ := event.Decode[event.ToolCall](ev)
			keys = append(keys, "tool_call "+d.CallID)
		case event.TypeToolResult:
			if !ev.IsAppend() {
				continue
			}
			d, err := event.Decode[event.ToolResult](ev)
			if err != nil {
				t.Fatal(err)
			}
			b := d.Result()
			status := "completed"
			if b.IsError || d.Error != nil {
				status = "error"
			}
			id := b.ToolCallID
			if id == "" {
				id = d.Message.Source.CallID
			}
			keys = append(keys, "tool_result "+id+" "+status)
		}
	}
	return keys
}

// crashKeysPrefix checks that the --json lines received before the kill
// are the projection of the log's first events.
func crashKeysPrefix(t testing.TB, got []string, log []event.Event) {
	t.Helper()
	want := crashLogKeys(t, log)
	if len(got) > len(want) {
		t.Fatalf("received %d lines but the log projects to %d:\n%s", len(got), len(want), strings.Join(want, "\n"))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("line %d is %q but the log projects %q", i, got[i], want[i])
		}
	}
}

// crashCheckLog checks a log after crash and resume. resumeAt is the index
// of the resumed prompt's receipt: everything before it was written by the
// killed process or by the repair on open.
func crashCheckLog(t testing.TB, w *world, id string, log []event.Event, resumeAt int, out *crashOutcome) {
	t.Helper()
	for i, ev := range log {
		if ev.Seq != int64(i) {
			t.Fatalf("log event %d has seq %d", i, ev.Seq)
		}
	}
	// Turns: each turn/start is closed by its turn/end before the next
	// turn starts; the repair closes a killed turn before the resume.
	// Calls (ARCHITECTURE.md §4): every tool-call block of an assistant/message is
	// announced by exactly one tool/call after it and answered by exactly
	// one tool/result after that, before the turn ends — also when the
	// turn was killed and closed by the repair.
	type turnState struct {
		turn    int
		blocks  map[string]bool // call ids of the turn's assistant messages
		calls   map[string]int  // announced call id → results
		unknown int
	}
	var cur *turnState
	lastTurn := 0
	claimed := map[string]bool{}
	var receipted []string
	for i, ev := range log {
		switch ev.Type {
		case event.TypeInboxSpliced:
			d, err := event.Decode[event.InboxSpliced](ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range d.Inserted {
				if i < resumeAt {
					receipted = append(receipted, m.ID)
				}
			}
		case event.TypeUserMessage:
			d, err := event.Decode[event.Message](ev)
			if err != nil {
				t.Fatal(err)
			}
			claimed[d.ID] = true
		case event.TypeTurnStart:
			d, _ := event.Decode[event.TurnStart](ev)
			if cur != nil {
				t.Fatalf("turn %d starts at seq %d while turn %d is open", d.Turn, i, cur.turn)
			}
			if d.Turn != lastTurn+1 {
				t.Fatalf("turn %d follows turn %d", d.Turn, lastTurn)
			}
			cur = &turnState{turn: d.Turn, blocks: map[string]bool{}, calls: map[string]int{}}
			lastTurn = d.Turn
		case event.TypeAssistantMessage:
			if !ev.IsAppend() {
				continue
			}
			d, err := event.Decode[event.AssistantMessage](ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range d.Message.Content {
				if b.Type != event.BlockToolCall {
					continue
				}
				if cur == nil || cur.blocks[b.ID] {
					t.Fatalf("seq %d: call %s outside a turn or made twice", i, b.ID)
				}
				cur.blocks[b.ID] = true
			}
		case event.TypeToolCall:
			d, _ := event.Decode[event.ToolCall](ev)
			if cur == nil {
				t.Fatalf("tool call %s outside a turn", d.CallID)
			}
			if !cur.blocks[d.CallID] {
				t.Fatalf("seq %d: tool/call %s that no assistant message of the turn made", i, d.CallID)
			}
			if _, dup := cur.calls[d.CallID]; dup {
				t.Fatalf("seq %d: tool/call %s announced twice", i, d.CallID)
			}
			cur.calls[d.CallID] = 0
		case event.TypeToolResult:
			d, err := event.Decode[event.ToolResult](ev)
			if err != nil {
				t.Fatal(err)
			}
			if cur == nil {
				t.Fatalf("tool result at seq %d outside a turn", i)
			}
			callID := d.Result().ToolCallID
			if _, ok := cur.calls[callID]; !ok {
				t.Fatalf("seq %d: result for call %q that no tool/call of the turn announced", i, callID)
			}
			cur.calls[callID]++
			if d.Error != nil && d.Error.Code == event.ToolOutcomeUnknown {
				cur.unknown++
				if i >= resumeAt {
					t.Fatalf("an outcome-unknown result after the resume (seq %d)", i)
				}
			}
		case event.TypeTurnEnd:
			d, _ := event.Decode[event.TurnEnd](ev)
			if cur == nil || d.Turn != cur.turn {
				t.Fatalf("turn/end of turn %d at seq %d does not close the open turn", d.Turn, i)
			}
			for callID := range cur.blocks {
				if n, ok := cur.calls[callID]; !ok || n != 1 {
					t.Fatalf("turn %d: call %s was announced %v and has %d results", cur.turn, callID, ok, n)
				}
			}
			switch d.Reason.Kind {
			case event.ReasonCompleted:
				if cur.unknown > 0 {
					t.Fatalf("completed turn %d has %d outcome-unknown results", cur.turn, cur.unknown)
				}
			case event.ReasonInterrupted:
				if i >= resumeAt {
					t.Fatalf("turn %d after the resume ended interrupted", cur.turn)
				}
				out.interrupted++
				out.unknown += cur.unknown
			default:
				t.Fatalf("turn %d ended %q", cur.turn, d.Reason.Kind)
			}
			cur = nil
		}
		if i == resumeAt-1 && cur != nil {
			t.Fatalf("turn %d is still open when the session is resumed", cur.turn)
		}
	}
	if cur != nil {
		t.Fatalf("turn %d never ended", cur.turn)
	}
	ends := pxTurnEnds(t, log[resumeAt:])
	if len(ends) == 0 || ends[len(ends)-1] != event.ReasonCompleted {
		t.Fatalf("the resumed session's turns ended %v", ends)
	}
	for _, m := range receipted {
		if !claimed[m] {
			out.orphans++
		}
	}
	dir, err := store.New(w.Root).Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	broken, _ := filepath.Glob(filepath.Join(dir, "session.jsonl.broken*"))
	out.torn = len(broken)
}

// TestCrashQueuedPrompt kills `dsh sdk` while a second prompt waits in the
// session's inbox behind a running turn: its receipt was committed and
// published (the host holds its messageId), so after the resume it must
// still be answered, not silently dropped.
// The resumed session puts the unclaimed prompt back in its inbox, and
// the next prompt's turn claims it first.
func TestCrashQueuedPrompt(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(crashScript)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := pxStartSDK(t, w, "scripted")
	id := c.NewSession().ID()
	sub := c.SubscribeSessionTree(id)
	defer sub.Close()
	if _, err := c.Session(id).Prompt(ctx, client.Text("first task")); err != nil {
		t.Fatal(err)
	}
	second, err := c.Session(id).Prompt(ctx, client.Text("second task"))
	if err != nil {
		t.Fatal(err)
	}
	// Kill once the first turn runs its tools.
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pe, err := n.Event(); err == nil && pe.Event.Type == event.TypeToolCall {
			break
		}
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pxClose(t, c)
	c2 := pxStartSDK(t, w, "scripted")
	res, err := c2.Session(id).Run(ctx, "third task")
	if err != nil || res.FinishReason != event.ReasonCompleted {
		t.Fatalf("after the crash: %v (%q)", err, res.FinishReason)
	}
	pxClose(t, c2)
	log := pxRead(t, w, id)
	for _, ev := range log {
		if ev.Type == event.TypeUserMessage {
			if d, _ := event.Decode[event.Message](ev); d.ID == second {
				return
			}
		}
	}
	var types []string
	for _, ev := range log {
		types = append(types, ev.Type)
	}
	t.Fatalf("the queued prompt %s was receipted before the crash but never reached a turn after the resume:\n%s", second, strings.Join(types, "\n"))
}
