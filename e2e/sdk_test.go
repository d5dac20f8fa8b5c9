package e2e

// End-to-end tests of the SDK door: the built binary, `dsh sdk`, driven by
// the Go client (sdkrpc/client) or by raw NDJSON lines, against the fake
// DeepSeek server. They check what a host sees on the wire and what is left
// on disk: the session logs, the files a tool touched, the exit code.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model/modeltest"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// sdkTimeout bounds every wait of these tests; a healthy run is far below.
const sdkTimeout = 20 * time.Second

// sdkConfig is the client's spawn config for dsh with args (default "sdk")
// in w, with a short close ladder so a misbehaving runtime fails fast.
func sdkConfig(w *world, args ...string) client.Config {
	if len(args) == 0 {
		args = []string{"sdk"}
	}
	return client.Config{
		Command:   append([]string{dshBin}, args...),
		Env:       w.Env,
		Dir:       w.Cwd,
		EOFGrace:  5 * time.Second,
		TermGrace: 2 * time.Second,
		KillGrace: 2 * time.Second,
		Options:   client.Options{RequestTimeout: sdkTimeout},
	}
}

// startSDK spawns and initializes the runtime with cwd w.Cwd; it is closed
// at cleanup (Close is idempotent, so a test may close it earlier).
func startSDK(t *testing.T, w *world, cfg client.Config) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	c, res, err := client.Start(ctx, cfg, protocol.InitializeParams{Cwd: w.Cwd})
	if err != nil {
		t.Fatalf("start %v: %v", cfg.Command, err)
	}
	if res.ServerInfo.Name != protocol.ServerName {
		t.Fatalf("serverInfo.name = %q, want %q", res.ServerInfo.Name, protocol.ServerName)
	}
	t.Cleanup(func() { closeSDK(t, c) })
	return c
}

func closeSDK(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Errorf("close: %v\nstderr: %s", err, strings.Join(c.StderrTail(), "\n"))
	}
}

func sdkCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), sdkTimeout)
	t.Cleanup(cancel)
	return ctx
}

// sdkGatedText is a text answer the fake server holds back until gate closes.
func sdkGatedText(gate <-chan struct{}, reasoning, text string) modeltest.Reply {
	return modeltest.NewStream().Role().Gate(gate).Reasoning(reasoning).Text(text).
		Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply()
}

// sdkCheckRun checks the owned-run invariants every turn must satisfy: the
// events start at the receipt of our message and their seqs are contiguous,
// the collection ends with the root's idle, and the turn completed.
func sdkCheckRun(t *testing.T, res *client.RunResult, wantText string) {
	t.Helper()
	if res.FinishReason != event.ReasonCompleted {
		t.Errorf("FinishReason = %q, want completed", res.FinishReason)
	}
	if res.FinalResponse != wantText {
		t.Errorf("FinalResponse = %q, want %q", res.FinalResponse, wantText)
	}
	if len(res.Events) == 0 {
		t.Fatal("no events")
	}
	if !protocol.IsReceipt(res.Events[0], res.MessageID) {
		t.Errorf("first event is %s, want the agent/inbox/spliced receipt of %s", res.Events[0].Type, res.MessageID)
	}
	for i, ev := range res.Events {
		if want := res.Events[0].Seq + int64(i); ev.Seq != want {
			t.Fatalf("event %d (%s) has seq %d, want %d: seqs are not contiguous", i, ev.Type, ev.Seq, want)
		}
	}
	last := res.Notifications[len(res.Notifications)-1]
	if st, err := last.Status(); last.Method != protocol.NotifySessionStatus || err != nil || st.Status != protocol.StatusIdle {
		t.Errorf("last notification is %s %s, want session.status idle", last.Method, last.Params)
	}
	if !slices.ContainsFunc(res.Events, func(e event.Event) bool { return e.Type == event.TypeTurnEnd }) {
		t.Error("no turn/end among the events")
	}
}

// sdkEventsOf returns the events of the given type.
func sdkEventsOf(evs []event.Event, typ string) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// sdkLog is a session log read back from disk.
type sdkLog struct {
	Path   string
	Header struct {
		ID     string        `json:"id"`
		Cwd    string        `json:"cwd"`
		Origin string        `json:"origin"`
		Config *event.Config `json:"config"`
	}
	Events []event.Event
}

// sdkReadLog finds the log of id under root and reads it.
func sdkReadLog(t *testing.T, root, id string) *sdkLog {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "session.jsonl" {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	for _, path := range found {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		l := &sdkLog{Path: path}
		if err := json.Unmarshal([]byte(lines[0]), &l.Header); err != nil {
			t.Fatalf("%s: header: %v", path, err)
		}
		if l.Header.ID != id {
			continue
		}
		for i, line := range lines[1:] {
			var ev event.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s line %d: %v: %q", path, i+2, err, line)
			}
			if ev.Seq != int64(i) {
				t.Fatalf("%s line %d: seq %d, want %d", path, i+2, ev.Seq, i)
			}
			l.Events = append(l.Events, ev)
		}
		return l
	}
	t.Fatalf("no session log of %q under %s (found %v)", id, root, found)
	return nil
}

// lastTurnEnd is the reason kind of the log's last turn/end, "" if none.
func (l *sdkLog) lastTurnEnd(t *testing.T) string {
	t.Helper()
	ends := sdkEventsOf(l.Events, event.TypeTurnEnd)
	if len(ends) == 0 {
		return ""
	}
	d, err := event.Decode[event.TurnEnd](ends[len(ends)-1])
	if err != nil {
		t.Fatal(err)
	}
	return d.Reason.Kind
}

func TestSDKTextTurn(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.ReasoningReply("The user greets me.", "Hello from the fake model."))
	w := newWorld(t, srv.Env()...)
	c := startSDK(t, w, sdkConfig(w))

	res, err := c.Session("sdk-text").Run(sdkCtx(t), "say hello")
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, strings.Join(c.StderrTail(), "\n"))
	}
	sdkCheckRun(t, res, "Hello from the fake model.")
	if res.SessionID != "sdk-text" {
		t.Errorf("SessionID = %q", res.SessionID)
	}
	// The typical turn: the receipt, then the turn's events in order.
	var types []string
	for _, e := range res.Events {
		types = append(types, e.Type)
	}
	for _, want := range []string{event.TypeTurnStart, event.TypeUserMessage, event.TypeAssistantMessage, event.TypeTurnEnd} {
		if !slices.Contains(types, want) {
			t.Errorf("events %v lack %s", types, want)
		}
	}
	if i, j := slices.Index(types, event.TypeAssistantMessage), slices.Index(types, event.TypeTurnEnd); i > j {
		t.Errorf("assistant/message after turn/end: %v", types)
	}
	if got := srv.Count(); got != 1 {
		t.Errorf("model requests = %d, want 1", got)
	}
	if r := srv.Last(); r == nil || r.FirstUser != "say hello" {
		t.Errorf("model saw first user %q, want %q", r.FirstUser, "say hello")
	}

	// The log on disk holds the same turn, from seq 0, under the SDK's
	// session id and cwd; the run's events are exactly its tail.
	closeSDK(t, c)
	l := sdkReadLog(t, w.Root, "sdk-text")
	if l.Header.Cwd != w.Cwd || l.Header.Origin != "sdk" {
		t.Errorf("log header cwd %q origin %q, want %q sdk", l.Header.Cwd, l.Header.Origin, w.Cwd)
	}
	if got := l.lastTurnEnd(t); got != event.ReasonCompleted {
		t.Errorf("log's last turn/end = %q, want completed", got)
	}
	first := res.Events[0].Seq
	if int(first)+len(res.Events) > len(l.Events) {
		t.Fatalf("log has %d events, run saw seq %d..%d", len(l.Events), first, int(first)+len(res.Events)-1)
	}
	for i, ev := range res.Events {
		if got := l.Events[first+int64(i)]; got.Type != ev.Type || string(got.Data) != string(ev.Data) {
			t.Errorf("wire event seq %d %s differs from the log's %s", ev.Seq, ev.Type, got.Type)
		}
	}
}

func TestSDKBashTurn(t *testing.T) {
	srv := modeltest.New(t)
	args := `{"command":"echo ran > marker.txt && echo out-4711","description":"write a marker"}`
	srv.Enqueue(
		modeltest.ToolCallsReply("Run it.", modeltest.Call{ID: "call_bash", Name: "bash", Args: args, Fragments: 3}),
		modeltest.ReasoningReply("It ran.", "The command printed out-4711."),
	)
	w := newWorld(t, srv.Env()...)
	c := startSDK(t, w, sdkConfig(w))

	res, err := c.Session("sdk-bash").Run(sdkCtx(t), "run the marker command")
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, strings.Join(c.StderrTail(), "\n"))
	}
	sdkCheckRun(t, res, "The command printed out-4711.")

	calls := sdkEventsOf(res.Events, event.TypeToolCall)
	if len(calls) != 1 {
		t.Fatalf("tool/call events = %d, want 1", len(calls))
	}
	call, err := event.Decode[event.ToolCall](calls[0])
	if err != nil {
		t.Fatal(err)
	}
	if call.Name != "bash" || call.CallID != "call_bash" || call.Arguments != args {
		t.Errorf("tool/call = %+v", call)
	}
	results := sdkEventsOf(res.Events, event.TypeToolResult)
	if len(results) != 1 {
		t.Fatalf("tool/result events = %d, want 1", len(results))
	}
	tr, err := event.Decode[event.ToolResult](results[0])
	if err != nil {
		t.Fatal(err)
	}
	block := tr.Result()
	if block.ToolCallID != "call_bash" || block.IsError || tr.Error != nil {
		t.Errorf("tool/result = %s", results[0].Data)
	}
	if out := event.JoinText(block.Content); !strings.Contains(out, "out-4711") {
		t.Errorf("tool output %q lacks out-4711", out)
	}
	if results[0].Seq < calls[0].Seq {
		t.Error("tool/result before tool/call")
	}
	// The command really ran, in the session's cwd.
	if data, err := os.ReadFile(filepath.Join(w.Cwd, "marker.txt")); err != nil || string(data) != "ran\n" {
		t.Errorf("marker.txt = %q, %v", data, err)
	}
	// The second model call carried the tool's output back.
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	msgs := reqs[1].Body.Messages
	if m := msgs[len(msgs)-1]; m.Role != "tool" || m.ToolCallID != "call_bash" || !strings.Contains(m.Text(), "out-4711") {
		t.Errorf("last message of request 2 = %s", m.Raw)
	}
}

func TestSDKTwoSessionsAtOnce(t *testing.T) {
	srv := modeltest.New(t)
	gate := make(chan struct{})
	srv.EnqueueFor("alpha question", sdkGatedText(gate, "Alpha.", "alpha answer"))
	srv.EnqueueFor("beta question", sdkGatedText(gate, "Beta.", "beta answer"))
	w := newWorld(t, srv.Env()...)
	c := startSDK(t, w, sdkConfig(w))

	type out struct {
		res *client.RunResult
		err error
	}
	ctx := sdkCtx(t)
	var wg sync.WaitGroup
	results := map[string]*out{"sdk-alpha": {}, "sdk-beta": {}}
	for id, o := range results {
		wg.Go(func() {
			o.res, o.err = c.Session(id).Run(ctx, strings.TrimPrefix(id, "sdk-")+" question")
		})
	}
	// Both turns are in flight at the model before either is answered.
	if !srv.WaitCount(2, sdkTimeout) {
		t.Error("the two sessions' model calls did not overlap")
	}
	close(gate)
	wg.Wait()
	for id, o := range results {
		if o.err != nil {
			t.Fatalf("%s: %v", id, o.err)
		}
		sdkCheckRun(t, o.res, strings.TrimPrefix(id, "sdk-")+" answer")
		for _, n := range o.res.Notifications {
			if n.SessionID() != id {
				t.Errorf("%s's run collected a notification of %q", id, n.SessionID())
			}
		}
	}
	closeSDK(t, c)
	for id := range results {
		l := sdkReadLog(t, w.Root, id)
		if got := l.lastTurnEnd(t); got != event.ReasonCompleted {
			t.Errorf("%s: log's last turn/end = %q", id, got)
		}
	}
}

// sdkRawPipes is the client's transport over a spawned runtime's stdio, with
// a way to write raw bytes between the client's frames: writes are whole
// lines (the stream writes each frame with one Write) under one lock.
type sdkRawPipes struct {
	mu     sync.Mutex
	stdin  *os.File
	stdout *os.File
	tee    *syncBuffer // everything the runtime wrote
}

func (p *sdkRawPipes) Read(b []byte) (int, error) {
	n, err := p.stdout.Read(b)
	p.tee.Write(b[:n])
	return n, err
}

func (p *sdkRawPipes) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdin.Write(b)
}

// Close closes stdin only: the runtime's remaining output is drained by
// the owner until EOF, so the runtime never writes into a closed pipe.
func (p *sdkRawPipes) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdin.Close()
}

func (p *sdkRawPipes) inject(t *testing.T, raw string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.stdin, raw); err != nil {
		t.Fatalf("inject: %v", err)
	}
}

func TestSDKMalformedLinesMidTraffic(t *testing.T) {
	srv := modeltest.New(t)
	gate := make(chan struct{})
	srv.Enqueue(sdkGatedText(gate, "First.", "first answer"), modeltest.ReasoningReply("Second.", "second answer"))
	w := newWorld(t, srv.Env()...)

	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dshBin, "sdk")
	cmd.Dir, cmd.Env = w.Cwd, w.Env
	stderr := &syncBuffer{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pipes := &sdkRawPipes{stdin: inW, stdout: outR, tee: &syncBuffer{}}
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		outR.Close()
	}()

	// A runtime that hung would hang Close (it waits for stdout's end).
	watchdog := time.AfterFunc(3*sdkTimeout, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()

	c := client.NewClient(pipes, client.Options{RequestTimeout: sdkTimeout})
	defer c.Close(context.Background()) // on failure paths; idempotent
	ctx := sdkCtx(t)
	garbage := "this is not json\n" +
		"[1,2,3]\n" +
		"\n" +
		"   \n" +
		`{"jsonrpc":"2.0","id":77,"method":"initialize",` + "\n" + // cut short
		"\"a string\"\n" +
		"42\n" +
		"\xff\xfe not utf-8 \xc3\n" +
		"{}\n"
	pipes.inject(t, garbage) // before the first request
	if _, err := c.Initialize(ctx, protocol.InitializeParams{Cwd: w.Cwd}); err != nil {
		t.Fatalf("initialize after garbage: %v\nstderr: %s", err, stderr)
	}

	// Garbage while a turn is running: the turn and the connection go on.
	sub := c.SubscribeSessionTree("sdk-garbage")
	defer sub.Close()
	type out struct {
		res *client.RunResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := c.Session("sdk-garbage").Run(ctx, "first question")
		done <- out{res, err}
	}()
	if !srv.WaitCount(1, sdkTimeout) {
		t.Fatal("the turn never reached the model")
	}
	pipes.inject(t, garbage)
	close(gate)
	o := <-done
	if o.err != nil {
		t.Fatalf("run with garbage mid-turn: %v\nstderr: %s", o.err, stderr)
	}
	sdkCheckRun(t, o.res, "first answer")

	// And between requests.
	pipes.inject(t, garbage)
	res, err := c.Session("sdk-garbage").Run(ctx, "second question")
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	sdkCheckRun(t, res, "second answer")

	if err := c.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	// Drain the rest of the runtime's output, then it exits 0.
	_, _ = io.Copy(io.Discard, pipes)
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("exit: %v\nstderr: %s", err, stderr)
		}
	case <-time.After(sdkTimeout):
		t.Fatal("runtime did not exit after shutdown")
	}
	// Malformed lines were skipped silently: nothing answered them (an
	// answer to a frame without an id would carry "id":null).
	for _, line := range strings.Split(pipes.tee.String(), "\n") {
		if strings.Contains(line, `"id":null`) || strings.Contains(line, `"id":77`) {
			t.Errorf("the runtime answered garbage: %s", line)
		}
	}
}

// rawSDK is `dsh sdk` driven line by line, for what a client library would
// hide: exact frames, racing requests, signals and exit codes.
type rawSDK struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	frames chan sdkFrame
	seen   []sdkFrame
	taken  []bool
	exited chan struct{}
	code   int
}

type sdkFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Raw string `json:"-"`
}

func startRawSDK(t *testing.T, w *world, args ...string) *rawSDK {
	t.Helper()
	if len(args) == 0 {
		args = []string{"sdk"}
	}
	cmd, stdin, stdout, stderr := w.start(args...)
	r := &rawSDK{t: t, cmd: cmd, stdin: stdin, stderr: stderr, frames: make(chan sdkFrame, 1<<14), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			f := sdkFrame{Raw: sc.Text()}
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				t.Errorf("stdout line is not JSON: %q", sc.Text())
				continue
			}
			r.frames <- f
		}
		close(r.frames)
		// Wait only once stdout is drained (exec closes the pipe on exit).
		err := cmd.Wait()
		r.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.code = 128 + int(ws.Signal())
			}
		} else if err != nil {
			r.code = -1
		}
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

func (r *rawSDK) send(lines ...string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, strings.Join(lines, "\n")+"\n"); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// next returns the first frame matching match that no earlier call
// returned: one already read, else the next one read. Every frame read is
// recorded in seen.
func (r *rawSDK) next(what string, match func(sdkFrame) bool) sdkFrame {
	r.t.Helper()
	for i, f := range r.seen {
		if !r.taken[i] && match(f) {
			r.taken[i] = true
			return f
		}
	}
	timeout := time.After(sdkTimeout)
	for {
		select {
		case f, ok := <-r.frames:
			if !ok {
				r.t.Fatalf("stdout ended waiting for %s\nstderr: %s", what, r.stderr)
			}
			r.seen = append(r.seen, f)
			r.taken = append(r.taken, match(f))
			if r.taken[len(r.taken)-1] {
				return f
			}
		case <-timeout:
			r.t.Fatalf("timed out waiting for %s\nstderr: %s", what, r.stderr)
		}
	}
}

// rest reads every remaining frame until stdout ends.
func (r *rawSDK) rest() []sdkFrame {
	r.t.Helper()
	var out []sdkFrame
	timeout := time.After(sdkTimeout)
	for {
		select {
		case f, ok := <-r.frames:
			if !ok {
				return out
			}
			r.seen = append(r.seen, f)
			r.taken = append(r.taken, false)
			out = append(out, f)
		case <-timeout:
			r.t.Fatalf("stdout did not end\nstderr: %s", r.stderr)
		}
	}
}

func (r *rawSDK) response(id string) sdkFrame {
	r.t.Helper()
	return r.next("response "+id, func(f sdkFrame) bool { return string(f.ID) == id && f.Method == "" })
}

// waitExit waits for the process and returns its exit code (128+signal
// when a signal killed it).
func (r *rawSDK) waitExit() int {
	r.t.Helper()
	r.rest()
	select {
	case <-r.exited:
		return r.code
	case <-time.After(sdkTimeout):
		r.t.Fatalf("process did not exit\nstderr: %s", r.stderr)
		return -1
	}
}

func (r *rawSDK) initialize(cwd string) {
	r.t.Helper()
	params := map[string]any{"provider": "deepseek-official", "model": "deepseek-flash"}
	if cwd != "" {
		params["cwd"] = cwd
	}
	p, _ := json.Marshal(params)
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":%s}`, p))
	if f := r.response(`"init"`); f.Error != nil {
		r.t.Fatalf("initialize: %s", f.Raw)
	}
}

// prompt sends session/prompt and returns the messageId.
func (r *rawSDK) prompt(id, sessionID, text string) string {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"session/prompt","params":{"sessionId":%q,"contentBlocks":[{"type":"text","text":%q}]}}`, id, sessionID, text))
	f := r.response(fmt.Sprintf("%q", id))
	var res protocol.SessionPromptResult
	if f.Error != nil || json.Unmarshal(f.Result, &res) != nil || res.MessageID == "" {
		r.t.Fatalf("session/prompt: %s", f.Raw)
	}
	return res.MessageID
}

func (r *rawSDK) waitStatus(sessionID, status string) {
	r.t.Helper()
	r.next(sessionID+" "+status, func(f sdkFrame) bool {
		var p protocol.SessionStatusParams
		return f.Method == protocol.NotifySessionStatus && json.Unmarshal(f.Params, &p) == nil &&
			p.SessionID == sessionID && p.Status == status
	})
}

// TestSDKRacingShutdowns sends two shutdowns back to back, with the session
// idle and with a turn hanging at the model: both are answered {}, the
// process exits once with 0, and the log ends with the turn's turn/end.
func TestSDKRacingShutdowns(t *testing.T) {
	for _, midTurn := range []bool{false, true} {
		t.Run(map[bool]string{false: "idle", true: "mid-turn"}[midTurn], func(t *testing.T) {
			t.Parallel()
			srv := modeltest.New(t)
			srv.Enqueue(modeltest.ReasoningReply("Hi.", "hi"), modeltest.NewStream().Role().Reasoning("Thinking...").Stall().Reply())
			w := newWorld(t, srv.Env()...)
			r := startRawSDK(t, w)
			r.initialize(w.Cwd)
			r.prompt("p1", "sdk-race", "hello")
			r.waitStatus("sdk-race", protocol.StatusIdle)
			want := event.ReasonCompleted
			if midTurn {
				r.prompt("p2", "sdk-race", "and now wait")
				if !srv.WaitCount(2, sdkTimeout) {
					t.Fatal("the second turn never reached the model")
				}
				want = event.ReasonAborted
			}

			// Two shutdowns back to back, in one write.
			r.send(`{"jsonrpc":"2.0","id":"s1","method":"shutdown"}`, `{"jsonrpc":"2.0","id":"s2","method":"shutdown","params":{}}`)
			code := r.waitExit()
			if code != 0 {
				t.Errorf("exit code %d, want 0\nstderr: %s", code, r.stderr)
			}
			answers := map[string]int{}
			for _, f := range r.seen {
				if f.Method == "" && (string(f.ID) == `"s1"` || string(f.ID) == `"s2"`) {
					answers[string(f.ID)]++
					if f.Error != nil || string(f.Result) != "{}" {
						t.Errorf("shutdown answered %s, want result {}", f.Raw)
					}
				}
			}
			if answers[`"s1"`] != 1 || answers[`"s2"`] != 1 {
				t.Errorf("shutdown answers %v, want each exactly once", answers)
			}
			if s := r.stderr.String(); strings.Contains(s, "panic") {
				t.Errorf("stderr: %s", s)
			}
			if got := sdkReadLog(t, w.Root, "sdk-race").lastTurnEnd(t); got != want {
				t.Errorf("log's last turn/end = %q, want %q", got, want)
			}
		})
	}
}

// TestSDKProcessEnds covers the other ways the runtime ends: stdin EOF and
// SIGTERM exit 0 (a running turn is ended and its log flushed first), SIGINT
// exits 130.
func TestSDKProcessEnds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(r *rawSDK)
		wantCode int
	}{
		{"stdin EOF", func(r *rawSDK) { r.stdin.Close() }, 0},
		{"SIGTERM", func(r *rawSDK) { _ = r.cmd.Process.Signal(syscall.SIGTERM) }, 0},
		{"SIGINT", func(r *rawSDK) { _ = r.cmd.Process.Signal(syscall.SIGINT) }, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.New(t)
			// The first turn completes; the second hangs at the model
			// until the process is told to end.
			srv.Enqueue(modeltest.ReasoningReply("Hi.", "hi"), modeltest.NewStream().Role().Reasoning("Thinking...").Stall().Reply())
			w := newWorld(t, srv.Env()...)
			r := startRawSDK(t, w)
			r.initialize(w.Cwd)
			r.prompt("p1", "sdk-end", "hello")
			r.waitStatus("sdk-end", protocol.StatusIdle)
			r.prompt("p2", "sdk-end", "and now wait")
			if !srv.WaitCount(2, sdkTimeout) {
				t.Fatal("the second turn never reached the model")
			}
			tc.end(r)
			if code := r.waitExit(); code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.wantCode, r.stderr)
			}
			l := sdkReadLog(t, w.Root, "sdk-end")
			if n := len(sdkEventsOf(l.Events, event.TypeTurnEnd)); n != 2 {
				t.Errorf("log has %d turn/end events, want 2 (the interrupted turn ended)", n)
			}
			if got := l.lastTurnEnd(t); got != event.ReasonAborted {
				t.Errorf("interrupted turn ended %q, want aborted", got)
			}
		})
	}
}

func TestSDKProfileAlias(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.ReasoningReply("Hi.", "hello via the profile"))
	w := newWorld(t, srv.Env()...)
	for _, args := range [][]string{{"--profile", "sdk"}, {"--profile=sdk"}} {
		c := startSDK(t, w, sdkConfig(w, args...))
		if args[0] == "--profile" {
			res, err := c.Session("sdk-profile").Run(sdkCtx(t), "hello")
			if err != nil {
				t.Fatalf("%v: run: %v", args, err)
			}
			sdkCheckRun(t, res, "hello via the profile")
		}
		closeSDK(t, c)
	}
	sdkReadLog(t, w.Root, "sdk-profile")
}

// TestSDKLaunchEnv launches the runtime as the original's launchers do:
// only DSH_SESSION_ROOT, DSH_CWD, DEEPSEEK_BASE_URL and DEEPSEEK_API_KEY
// (no DSH_PROVIDER), and an initialize without cwd.
func TestSDKLaunchEnv(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(
		modeltest.ToolCallsReply("Where am I?", modeltest.Call{Name: "bash", Args: `{"command":"pwd","description":"print the cwd"}`}),
		modeltest.ReasoningReply("Done.", "I know where I am."),
	)
	w := newWorld(t)
	base := filepath.Dir(w.Root)
	launchCwd := filepath.Join(base, "launch-cwd")
	root := filepath.Join(base, "launch-sessions")
	if err := os.MkdirAll(launchCwd, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + w.Home, "TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(w.Home, ".config"), "XDG_STATE_HOME=" + filepath.Join(w.Home, ".state"),
		"DSH_SESSION_ROOT=" + root, "DSH_CWD=" + launchCwd,
		"DEEPSEEK_BASE_URL=" + srv.URL, "DEEPSEEK_API_KEY=" + modeltest.TestKey,
	}
	cfg := sdkConfig(w)
	cfg.Env = env // the process's own cwd stays w.Cwd: DSH_CWD must win
	ctx := sdkCtx(t)
	c, err := client.Spawn(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSDK(t, c) })
	// Client.Initialize always sends a cwd; the original's Python launcher
	// may not, so send the bare params.
	var init protocol.InitializeResult
	if err := c.Request(ctx, protocol.MethodInitialize, map[string]any{"provider": "deepseek-official", "model": "deepseek-flash"}, &init); err != nil {
		t.Fatalf("initialize without cwd: %v\nstderr: %s", err, strings.Join(c.StderrTail(), "\n"))
	}
	if init.ServerInfo.Name != protocol.ServerName {
		t.Errorf("initialize result %+v", init)
	}
	res, err := c.Session("sdk-env").Run(ctx, "where are you?")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sdkCheckRun(t, res, "I know where I am.")
	tr, err := event.Decode[event.ToolResult](sdkEventsOf(res.Events, event.TypeToolResult)[0])
	if err != nil {
		t.Fatal(err)
	}
	if out := strings.TrimSpace(event.JoinText(tr.Result().Content)); !strings.Contains(out, launchCwd) {
		t.Errorf("pwd printed %q, want %s", out, launchCwd)
	}
	closeSDK(t, c)
	l := sdkReadLog(t, root, "sdk-env")
	if l.Header.Cwd != launchCwd {
		t.Errorf("session cwd %q, want DSH_CWD %q", l.Header.Cwd, launchCwd)
	}
	if l.Header.Config == nil || l.Header.Config.Provider != "deepseek-official" {
		t.Errorf("session config %+v", l.Header.Config)
	}
	if _, err := os.Stat(w.Root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("something was written under the default session root %s: %v", w.Root, err)
	}
}

// TestSDKResumeAcrossProcesses continues one session id in a second
// runtime: the history is read back and the model sees the first turn
// byte for byte (the fake server's prefix check passes).
func TestSDKResumeAcrossProcesses(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(
		modeltest.ReasoningReply("First.", "the first answer"),
		modeltest.ReasoningReply("Second.", "the second answer"),
	)
	w := newWorld(t, srv.Env()...)

	c1 := startSDK(t, w, sdkConfig(w))
	res1, err := c1.Session("sdk-resume").Run(sdkCtx(t), "first question")
	if err != nil {
		t.Fatal(err)
	}
	sdkCheckRun(t, res1, "the first answer")
	closeSDK(t, c1)

	c2 := startSDK(t, w, sdkConfig(w))
	res2, err := c2.Session("sdk-resume").Run(sdkCtx(t), "second question")
	if err != nil {
		t.Fatalf("resumed run: %v\nstderr: %s", err, strings.Join(c2.StderrTail(), "\n"))
	}
	sdkCheckRun(t, res2, "the second answer")
	if res2.Events[0].Seq <= res1.Events[len(res1.Events)-1].Seq {
		t.Errorf("resumed seqs restart: first run ended at %d, second starts at %d",
			res1.Events[len(res1.Events)-1].Seq, res2.Events[0].Seq)
	}
	starts := sdkEventsOf(res2.Events, event.TypeTurnStart)
	if len(starts) != 1 {
		t.Fatalf("turn/start events = %d", len(starts))
	}
	if d, _ := event.Decode[event.TurnStart](starts[0]); d.Turn != 2 {
		t.Errorf("resumed turn number %d, want 2", d.Turn)
	}
	closeSDK(t, c2)

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	if reqs[0].Conversation != reqs[1].Conversation {
		t.Error("the resumed request is not the same conversation")
	}
	var texts []string
	for _, m := range reqs[1].Body.Messages {
		texts = append(texts, m.Role+": "+m.Text())
	}
	joined := strings.Join(texts, "\n")
	for _, want := range []string{"user: first question", "assistant: the first answer", "user: second question"} {
		if !strings.Contains(joined, want) {
			t.Errorf("resumed request lacks %q:\n%s", want, joined)
		}
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("fake server invariant violations: %v", v)
	}
	l := sdkReadLog(t, w.Root, "sdk-resume")
	if n := len(sdkEventsOf(l.Events, event.TypeTurnEnd)); n != 2 {
		t.Errorf("log has %d turn/end events, want 2", n)
	}
}

// TestSDKBadInputs checks the original's error answers (all -32603) through
// the binary, and that the runtime keeps serving after each.
func TestSDKBadInputs(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.ReasoningReply("Hi.", "still serving"))
	w := newWorld(t, srv.Env()...)
	r := startRawSDK(t, w)
	prompt := `{"jsonrpc":"2.0","id":%q,"method":"session/prompt","params":{"sessionId":"sdk-bad","contentBlocks":[{"type":"text","text":"hi"}]}}`
	for _, tc := range []struct{ id, line, want string }{
		{"p0", fmt.Sprintf(prompt, "p0"), "SDK server is not initialized"},
		{"u1", `{"jsonrpc":"2.0","id":"u1","method":"session/frobnicate","params":{}}`, "unknown DeepSeek Harness SDK runtime method: session/frobnicate"},
		{"i1", `{"jsonrpc":"2.0","id":"i1","method":"initialize","params":{"cwd":"/","provider":"deepseek-official","model":"deepseek-flash","maxTokens":0}}`, "initialize maxTokens must be a positive safe integer"},
		{"i2", `{"jsonrpc":"2.0","id":"i2","method":"initialize","params":{"cwd":"/","provider":"deepseek-official","model":"deepseek-flash","maxTokens":1.5}}`, "initialize maxTokens must be a positive safe integer"},
		{"i3", `{"jsonrpc":"2.0","id":"i3","method":"initialize","params":{"cwd":"/","provider":"nope","model":"m"}}`, `no adapter registered for provider "nope"`},
		{"i4", `{"jsonrpc":"2.0","id":"i4","method":"initialize","params":{"cwd":"/","provider":"deepseek-official","model":"deepseek-flash","reasoningEffort":""}}`, "initialize reasoningEffort must be a non-empty string"},
		{"p1", fmt.Sprintf(prompt, "p1"), "SDK server is not initialized"}, // failed initializes left it uninitialized
	} {
		r.send(tc.line)
		f := r.response(fmt.Sprintf("%q", tc.id))
		if f.Error == nil || f.Error.Code != -32603 || f.Error.Message != tc.want {
			t.Errorf("%s answered %s, want -32603 %q", tc.id, f.Raw, tc.want)
		}
	}
	r.initialize(w.Cwd)
	msgID := r.prompt("p2", "sdk-bad", "hello")
	if msgID == "" {
		t.Fatal("no message id")
	}
	r.waitStatus("sdk-bad", protocol.StatusIdle)
	r.send(`{"jsonrpc":"2.0","id":"s","method":"shutdown"}`)
	if code := r.waitExit(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestSDKCancelAndCloseSession drives our extensions through the binary:
// session/cancel ends a turn hanging at the model `aborted`, the model
// request is abandoned, and session/close flushes the session's log.
func TestSDKCancelAndCloseSession(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.NewStream().Role().Reasoning("Thinking...").Stall().Reply())
	w := newWorld(t, srv.Env()...)
	c := startSDK(t, w, sdkConfig(w))
	ctx := sdkCtx(t)
	type out struct {
		res *client.RunResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := c.Session("sdk-cancel").Run(ctx, "wait forever")
		done <- out{res, err}
	}()
	if !srv.WaitCount(1, sdkTimeout) {
		t.Fatal("the turn never reached the model")
	}
	if err := c.Session("sdk-cancel").Cancel(ctx); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("run: %v", o.err)
	}
	if o.res.FinishReason != event.ReasonAborted {
		t.Errorf("FinishReason = %q, want aborted", o.res.FinishReason)
	}
	select {
	case <-srv.Last().Disconnected():
	case <-time.After(sdkTimeout):
		t.Error("the model request was not abandoned")
	}
	if err := c.Session("sdk-cancel").Close(ctx); err != nil {
		t.Fatalf("close session: %v", err)
	}
	var re *client.ResponseError
	if err := c.Session("sdk-unknown").Cancel(ctx); !errors.As(err, &re) || re.Code != -32603 {
		t.Errorf("cancel of an unknown session: %v", err)
	}
	// Closed before the runtime ends: the log is complete already.
	if got := sdkReadLog(t, w.Root, "sdk-cancel").lastTurnEnd(t); got != event.ReasonAborted {
		t.Errorf("log's last turn/end = %q, want aborted", got)
	}
}

// TestSDKSplitWrites sends frames in pieces, one cut inside a UTF-8
// sequence, and two frames in one write: the runtime reassembles lines as
// a pipe delivers them.
func TestSDKSplitWrites(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(modeltest.ReasoningReply("Hi.", "got it"))
	w := newWorld(t, srv.Env()...)
	r := startRawSDK(t, w)
	r.initialize(w.Cwd)
	text := "héllo wörld — 你好 🙂"
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"sdk-split","contentBlocks":[{"type":"text","text":%q}]}}`, text)
	cut := strings.Index(line, "你") + 1 // inside the 3-byte sequence
	for _, piece := range []string{line[:10], line[10:cut], line[cut:] + "\n"} {
		if _, err := io.WriteString(r.stdin, piece); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.send(`{"jsonrpc":"2.0","id":"u","method":"nope"}` + "\n" + `{"jsonrpc":"2.0","id":"v","method":"nope2"}`)
	if f := r.response(`"p"`); f.Error != nil {
		t.Fatalf("prompt: %s", f.Raw)
	}
	r.response(`"u"`)
	r.response(`"v"`)
	r.waitStatus("sdk-split", protocol.StatusIdle)
	if got := srv.Last().FirstUser; got != text {
		t.Errorf("model saw %q, want %q", got, text)
	}
	r.stdin.Close()
	if code := r.waitExit(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestSDKStartFailures: a runtime that cannot start, or refuses initialize,
// fails client.Start with a typed error that says why, and is reaped.
func TestSDKStartFailures(t *testing.T) {
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	ctx := sdkCtx(t)

	cfg := sdkConfig(w, "sdk", "--permission-mode", "sometimes")
	_, _, err := client.Start(ctx, cfg, protocol.InitializeParams{Cwd: w.Cwd})
	var tce *client.TransportClosedError
	if !errors.As(err, &tce) {
		t.Fatalf("start of a runtime that exits at once: %T %v", err, err)
	}
	if !tce.Exited || tce.ExitCode != 2 || !strings.Contains(strings.Join(tce.StderrTail, "\n"), `unknown permission mode "sometimes"`) {
		t.Errorf("error lacks the exit code or stderr: %v", err)
	}

	_, _, err = client.Start(ctx, sdkConfig(w), protocol.InitializeParams{Cwd: w.Cwd, Provider: "nope", Model: "m"})
	var re *client.ResponseError
	if !errors.As(err, &re) || re.Code != -32603 || re.Message != `no adapter registered for provider "nope"` {
		t.Errorf("start with an unknown provider: %T %v", err, err)
	}
}

// TestSDKHostPermission: a host that declared permissions in initialize
// answers session/request_permission; its answers decide which commands run.
func TestSDKHostPermission(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(
		modeltest.ToolCallsReply("Two writes.",
			modeltest.Call{ID: "call_yes", Name: "bash", Args: `{"command":"echo yes > allowed.txt","description":"allowed write"}`},
			modeltest.Call{ID: "call_no", Name: "bash", Args: `{"command":"echo no > denied.txt","description":"denied write"}`}),
		modeltest.ReasoningReply("Done.", "one of two"),
	)
	w := newWorld(t, append(srv.Env(), "DSH_PERMISSION_MODE=ask")...)
	ctx := sdkCtx(t)
	c, err := client.Spawn(ctx, sdkConfig(w))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSDK(t, c) })
	var mu sync.Mutex
	var asked []protocol.RequestPermissionParams
	c.OnPermissionRequest(func(_ context.Context, p protocol.RequestPermissionParams) (protocol.RequestPermissionResult, error) {
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
		if p.ToolCall.CallID == "call_yes" {
			return protocol.Select("allow_once"), nil
		}
		return protocol.Select("reject_once"), nil
	})
	if _, err := c.Initialize(ctx, protocol.InitializeParams{Cwd: w.Cwd, Capabilities: &protocol.ClientCapabilities{Permissions: true}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Session("sdk-perm").Run(ctx, "write two files")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sdkCheckRun(t, res, "one of two")
	mu.Lock()
	if len(asked) != 2 || asked[0].SessionID != "sdk-perm" || asked[0].ToolCall.Tool != "bash" || asked[0].Workspace != w.Cwd {
		t.Errorf("asked %+v", asked)
	}
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(w.Cwd, "allowed.txt")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Cwd, "denied.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the denied command ran: %v", err)
	}
	for _, ev := range sdkEventsOf(res.Events, event.TypeToolResult) {
		tr, _ := event.Decode[event.ToolResult](ev)
		denied := tr.Error != nil && tr.Error.Code == event.ToolPermissionDenied
		if id := tr.Result().ToolCallID; denied != (id == "call_no") {
			t.Errorf("tool/result of %s: %s", id, ev.Data)
		}
	}
}
