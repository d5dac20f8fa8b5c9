package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/permission"
)

// rawClient speaks to Serve in bytes, as a hostile or unusual client does:
// it writes frames as given and reads every line the agent writes.
type rawClient struct {
	t       *testing.T
	rt      *core.Runtime
	gate    *gatedReader
	w       io.WriteCloser
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
	next    int // lines before next are consumed by await
}

func startRaw(t *testing.T, o hopts) *rawClient {
	t.Helper()
	o = o.withDefaults(t)
	rt := newRuntime(t, o.root, o.script, o.mode)
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), rt, agentIn, agentOut, Options{Logger: testLogger(t), MaxFrameBytes: o.maxFrame, Version: "test",
			UpdatesPerSecond: o.updatesPerSecond, onOutboxFull: o.onOutboxFull, onForget: o.onForget})
		_ = agentOut.Close()
	}()
	gate := &gatedReader{r: clientIn, open: make(chan struct{})}
	close(gate.open)
	c := &rawClient{t: t, rt: rt, gate: gate, w: clientOut, changed: make(chan struct{})}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(gate)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, clientIn)
	}()
	t.Cleanup(func() {
		_ = clientOut.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("Serve did not return after the client disconnected")
			_ = clientIn.Close()
		}
		<-readDone
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("runtime close: %v", err)
		}
	})
	return c
}

func (c *rawClient) send(frames ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, strings.Join(frames, "")); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// await returns the first line not yet consumed that satisfies match,
// waiting up to 15 s for it.
func (c *rawClient) await(what string, match func(line string) bool) string {
	c.t.Helper()
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	c.mu.Lock()
	from := c.next
	c.mu.Unlock()
	for {
		c.mu.Lock()
		for i := from; i < len(c.lines); i++ {
			if match(c.lines[i]) {
				l := c.lines[i]
				c.mu.Unlock()
				return l
			}
		}
		from = len(c.lines) // each line is looked at once
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-timeout.C:
			c.mu.Lock()
			out := strings.Join(c.lines, "\n")
			c.mu.Unlock()
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			c.t.Logf("goroutines:\n%s", buf[:n])
			c.t.Fatalf("no line: %s; output:\n%s", what, out)
		}
	}
}

// gatedReader stops reading while closed: a client that does not read.
type gatedReader struct {
	r    io.Reader
	mu   sync.Mutex
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	<-ch
	return g.r.Read(p)
}

func (g *gatedReader) stop() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedReader) resume() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

// response waits for the response with the given raw id.
func (c *rawClient) response(id string) map[string]any {
	c.t.Helper()
	l := c.await("response "+id, func(l string) bool { return responseID(l) == id })
	var m map[string]any
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		c.t.Fatalf("response %s: %v", l, err)
	}
	return m
}

func (c *rawClient) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// responseID is the compact id of a response line, or "" for any other.
func responseID(l string) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(l), &m) != nil || m.Method != nil || m.ID == nil || (m.Result == nil && m.Error == nil) {
		return ""
	}
	return string(m.ID)
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	f, _ := e["code"].(float64)
	return int(f)
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func stopReason(m map[string]any) string {
	r, _ := m["result"].(map[string]any)
	s, _ := r["stopReason"].(string)
	return s
}

const rawInit = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"

// newRawSession opens a session with request id and returns its id.
func (c *rawClient) newRawSession(id, cwd string) string {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`+"\n", id, cwd))
	m := c.response(id)
	r, _ := m["result"].(map[string]any)
	sid, _ := r["sessionId"].(string)
	if sid == "" {
		c.t.Fatalf("session/new: %v", m)
	}
	return sid
}

func promptFrame(id, method, sid, text string) string {
	idPart := ""
	if id != "" {
		idPart = `"id":` + id + `,`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0",%s"method":"%s","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`+"\n", idPart, method, sid, text)
}

// slowScript runs one bash call of the given length, then answers.
func slowScript(sleep string) map[string]any {
	return script(
		step("toolCalls", calls(call("bash", map[string]any{"command": "sleep " + sleep, "description": "slow"}))),
		step("text", "fast"))
}

func (c *rawClient) awaitRunning(sid string) {
	c.t.Helper()
	c.await("the bash call running", func(l string) bool {
		return strings.Contains(l, `"sessionUpdate":"tool_call`) && strings.Contains(l, `"status":"in_progress"`) && strings.Contains(l, sid)
	})
}

// awaitRunningAgain waits for the n-th bash call of the session to run.
func (c *rawClient) awaitRunningAgain(sid string, n int) {
	c.t.Helper()
	c.awaitN("bash call running", n, func(l string) bool {
		return strings.Contains(l, `"sessionUpdate":"tool_call`) && strings.Contains(l, `"status":"in_progress"`) && strings.Contains(l, sid)
	})
}

// awaitN waits until n lines satisfy match and returns them.
func (c *rawClient) awaitN(what string, n int, match func(string) bool) []string {
	c.t.Helper()
	var got []string
	c.await(what, func(l string) bool {
		if match(l) {
			got = append(got, l)
		}
		return len(got) >= n
	})
	return got
}

// A .NET StreamWriter starts its output with a UTF-8 BOM, and Windows
// clients end lines with CRLF: both are the same frame.
func TestRawBOMAndCRLF(t *testing.T) {
	c := startRaw(t, hopts{})
	c.send("\xef\xbb\xbf" + strings.TrimSuffix(rawInit, "\n") + "\r\n")
	if m := c.response(`"init"`); m["result"] == nil {
		t.Fatalf("initialize after a BOM: %v", m)
	}
	c.send("\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}` + "\r\n")
	if m := c.response(`2`); m["result"] == nil {
		t.Fatalf("session/list after a BOM and CRLF: %v", m)
	}
}

// PHP's json_encode writes "session\/prompt": it is session/prompt, so
// the one-prompt-in-flight rule holds for it, and neither it nor the same
// frame sent as a notification disturbs the running prompt.
func TestRawEscapedMethodName(t *testing.T) {
	cwd := t.TempDir()
	c := startRaw(t, hopts{cwd: cwd, mode: permission.ModeFull, script: script(
		step("toolCalls", calls(call("bash", map[string]any{"command": "sleep 2", "description": "slow"}))),
		step("text", "fast"),
		step("toolCalls", calls(call("bash", map[string]any{"command": "sleep 30", "description": "slower"}))),
		step("text", "done"))})
	c.send(rawInit)
	c.response(`"init"`)
	sid := c.newRawSession("1", cwd)
	c.send(promptFrame("10", `session\/prompt`, sid, "first"))
	c.awaitRunning(sid)
	c.send(promptFrame("11", `session\/prompt`, sid, "second"))
	if m := c.response("11"); errCode(m) != -32602 || !strings.Contains(errMessage(m), msgPromptInFlight) {
		t.Fatalf("escaped second prompt: %v", m)
	}
	c.send(promptFrame("", `session\/prompt`, sid, "as a notification"))
	// A round trip after both: by its answer they have been handled.
	c.send(`{"jsonrpc":"2.0","id":12,"method":"session\/list","params":{}}` + "\n")
	c.response("12")
	for _, l := range c.all() {
		if responseID(l) == "10" {
			t.Fatalf("the running prompt ended: %s", l)
		}
	}
	// Undisturbed, the first prompt runs its command to the end.
	if m := c.response("10"); stopReason(m) != "end_turn" {
		t.Fatalf("first prompt: %v", m)
	}
	// An escaped session/cancel is session/cancel.
	c.send(promptFrame("13", "session/prompt", sid, "third"))
	c.awaitRunningAgain(sid, 2)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session\/cancel","params":{"sessionId":%q}}`+"\n", sid))
	if m := c.response("13"); stopReason(m) != "cancelled" {
		t.Fatalf("third prompt: %v", m)
	}
}

// The same request id in flight on two sessions answers each session's
// prompt, and leaves neither session busy afterwards.
func TestRawSameIDOnTwoSessions(t *testing.T) {
	cwd := t.TempDir()
	c := startRaw(t, hopts{cwd: cwd})
	c.send(rawInit)
	c.response(`"init"`)
	s1, s2 := c.newRawSession("1", cwd), c.newRawSession("2", cwd)
	c.send(promptFrame(`"p"`, "session/prompt", s1, "one") + promptFrame(`"p"`, "session/prompt", s2, "two"))
	for _, l := range c.awaitN("two answers to id p", 2, func(l string) bool { return responseID(l) == `"p"` }) {
		var m map[string]any
		_ = json.Unmarshal([]byte(l), &m)
		if stopReason(m) != "end_turn" {
			t.Errorf("prompt answered %s", l)
		}
	}
	for i, sid := range []string{s1, s2} {
		id := fmt.Sprintf(`"again-%d"`, i)
		c.send(promptFrame(id, "session/prompt", sid, "again"))
		if m := c.response(id); stopReason(m) != "end_turn" {
			t.Fatalf("session %d after the shared id: %v", i+1, m)
		}
	}
}

// Reusing a running prompt's id for another method neither cancels the
// prompt nor frees its session for a second prompt.
func TestRawRunningPromptIDReused(t *testing.T) {
	cwd := t.TempDir()
	c := startRaw(t, hopts{cwd: cwd, mode: permission.ModeFull, script: slowScript("2")})
	c.send(rawInit)
	c.response(`"init"`)
	sid := c.newRawSession("1", cwd)
	c.send(promptFrame("9", "session/prompt", sid, "first"))
	c.awaitRunning(sid)
	c.send(`{"jsonrpc":"2.0","id":9,"method":"session/list","params":{}}` + "\n")
	c.await("the list answer", func(l string) bool { return responseID(l) == "9" && strings.Contains(l, `"sessions"`) })
	c.send(promptFrame("10", "session/prompt", sid, "second"))
	if m := c.response("10"); errCode(m) != -32602 {
		t.Fatalf("second prompt while the first runs: %v", m)
	}
	for _, l := range c.all() {
		if responseID(l) == "9" && strings.Contains(l, "stopReason") {
			t.Fatalf("the running prompt ended: %s", l)
		}
	}
	// Undisturbed, the prompt runs its command to the end.
	c.await("the prompt's answer", func(l string) bool { return responseID(l) == "9" && strings.Contains(l, `"stopReason"`) })
	for _, l := range c.all() {
		if responseID(l) == "9" && strings.Contains(l, `"stopReason"`) && !strings.Contains(l, `"stopReason":"end_turn"`) {
			t.Fatalf("the prompt was disturbed: %s", l)
		}
	}
}

// One write of 50,000 notifications neither closes the connection nor
// loses the request that follows it.
func TestRawNotificationFlood(t *testing.T) {
	c := startRaw(t, hopts{})
	c.send(rawInit)
	c.response(`"init"`)
	var b strings.Builder
	for i := 0; i < 50000; i++ {
		if i%2 == 0 {
			b.WriteString(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}` + "\n")
		} else {
			b.WriteString(`{"jsonrpc":"2.0","method":"_vendor/ping","params":{}}` + "\n")
		}
	}
	b.WriteString(`{"jsonrpc":"2.0","id":"after","method":"session/list","params":{}}` + "\n")
	c.send(b.String())
	if m := c.response(`"after"`); m["result"] == nil {
		t.Fatalf("request after the flood: %v", m)
	}
}

// JSON-RPC 2.0's error cases, each answered as the spec says.
func TestRawJSONRPCErrors(t *testing.T) {
	c := startRaw(t, hopts{})
	c.send(rawInit)
	c.response(`"init"`)
	for _, tc := range []struct {
		frame string
		id    string
		code  int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}`, "null", -32700},
		{`42`, "null", -32600},
		{`"just a string"`, "null", -32600},
		{`{"jsonrpc":"1.0","id":"v1","method":"session/list","params":{}}`, `"v1"`, -32600},
		{`{"id":"nover","method":"session/list","params":{}}`, `"nover"`, -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"session/list","params":{}}`, "null", -32600},
		{`{"jsonrpc":"2.0","id":"m","method":7}`, `"m"`, -32600},
		{`{"jsonrpc":"2.0","id":"pa","method":"session/list","params":"x"}`, `"pa"`, -32600},
		{`{"jsonrpc":"2.0","id":"unk","method":"no/such/method","params":{}}`, `"unk"`, -32601},
		{`{"jsonrpc":"2.0","id":"badp","method":"session/new","params":{"cwd":5}}`, `"badp"`, -32602},
	} {
		c.send(tc.frame + "\n")
		l := c.await(tc.frame, func(l string) bool {
			return responseID(l) == tc.id && strings.Contains(l, fmt.Sprintf(`"code":%d`, tc.code))
		})
		c.mu.Lock()
		for i, x := range c.lines {
			if x == l {
				c.next = i + 1 // the next case must find its own answer
			}
		}
		c.mu.Unlock()
	}
	// Ids of every legal type come back exactly as sent.
	for _, id := range []string{`-3`, `1.5`, `1e3`, `"with \"quotes\""`, `null`, `18446744073709551616`} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/list","params":{}}` + "\n")
		c.await("id "+id, func(l string) bool { return responseID(l) == id && strings.Contains(l, `"sessions"`) })
	}
}

// A batch is answered with one array holding the answers of its requests
// (and of its invalid elements); an empty batch is one error.
func TestRawBatch(t *testing.T) {
	c := startRaw(t, hopts{})
	c.send("[]\n")
	c.await("empty batch", func(l string) bool {
		return responseID(l) == "null" && strings.Contains(l, `"code":-32600`)
	})
	c.send(`[` + strings.TrimSuffix(rawInit, "\n") + `,{"jsonrpc":"2.0","id":"b","method":"session/list","params":{}},{"jsonrpc":"2.0","method":"_vendor/note"},7]` + "\n")
	l := c.await("batch answer", func(l string) bool { return strings.HasPrefix(l, "[") })
	var got []map[string]any
	if err := json.Unmarshal([]byte(l), &got); err != nil {
		t.Fatalf("batch answer %s: %v", l, err)
	}
	ids := map[string]bool{}
	for _, m := range got {
		b, _ := json.Marshal(m["id"])
		ids[string(b)] = true
		if string(b) == "null" && errCode(m) != -32600 {
			t.Errorf("invalid element answered %v", m)
		}
	}
	if len(got) != 3 || !ids[`"init"`] || !ids[`"b"`] || !ids["null"] {
		t.Fatalf("batch answer %s", l)
	}
	// A batch of notifications only is not answered; the next request is.
	c.send(`[{"jsonrpc":"2.0","method":"_vendor/a"},{"jsonrpc":"2.0","method":"_vendor/b"}]` + "\n" + `{"jsonrpc":"2.0","id":"z","method":"session/list","params":{}}` + "\n")
	c.response(`"z"`)
	n := 0
	for _, l := range c.all() {
		if strings.HasPrefix(l, "[") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d batch answers, want 1", n)
	}
}

// manySteps is a turn of n distinct todo_write calls, ten a step, then a
// text.
func manySteps(n int) map[string]any {
	steps := make([]map[string]any, 0, n/10+1)
	for i := 0; i < n; i += 10 {
		var cs []map[string]any
		for j := i; j < i+10 && j < n; j++ {
			cs = append(cs, call("todo_write", map[string]any{
				"todos": []any{map[string]any{"content": fmt.Sprintf("step %d", j), "status": "in_progress"}}}))
		}
		steps = append(steps, step("toolCalls", calls(cs...)))
	}
	steps = append(steps, step("text", "all done"))
	return script(steps...)
}

// A client that stops reading does not hold the turn: the door reads the
// session's history at the client's pace (its outbox fills and waits, and
// nothing queues without end), while the session commits on. Once the
// client reads again, every update arrives and the prompt is answered.
func TestRawStuckClientDoesNotHoldTheTurn(t *testing.T) {
	cwd := t.TempDir()
	full := make(chan struct{})
	var once sync.Once
	c := startRaw(t, hopts{cwd: cwd, mode: permission.ModeFull, script: manySteps(1000), updatesPerSecond: -1,
		onOutboxFull: func() { once.Do(func() { close(full) }) }})
	c.send(rawInit)
	c.response(`"init"`)
	sid := c.newRawSession("1", cwd)
	c.gate.stop()
	c.send(promptFrame("2", "session/prompt", sid, "go"))
	<-full
	s := c.rt.Get(sid)
	if s == nil {
		t.Fatal("no session")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("the turn waits for a client that does not read: %v", err)
	}
	c.gate.resume()
	if m := c.response("2"); stopReason(m) != "end_turn" {
		t.Fatalf("prompt: %v", m)
	}
	if n := len(c.awaitN("the last call's plan", 1, func(l string) bool { return strings.Contains(l, `step 999`) })); n == 0 {
		t.Fatal("the last call never reached the client")
	}
}
