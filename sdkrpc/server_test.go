package sdkrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp/mcptest"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// frame is one decoded line from the server.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw   string
	taken bool
}

// peer drives a Server over pipes as a host would, line by line.
type peer struct {
	t      *testing.T
	rt     *core.Runtime
	cwd    string
	in     *io.PipeWriter
	frames chan frame
	exit   chan int
	mu     sync.Mutex
	seen   []frame
}

const helloScript = `{"steps":[{"reasoning":"r","text":"hello there"}],"repeat":"last"}`

func newPeer(t *testing.T, script string) *peer {
	t.Helper()
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "script.json")
	os.WriteFile(scriptPath, []byte(script), 0o644)
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
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{t: t, rt: rt, cwd: t.TempDir(), in: inW, frames: make(chan frame, 4096), exit: make(chan int, 1)}
	go func() {
		p.exit <- Serve(context.Background(), rt, inR, outW, Options{Version: "test"})
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var f frame
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				t.Errorf("server wrote a non-JSON line: %q", sc.Text())
				continue
			}
			f.raw = sc.Text()
			p.frames <- f
		}
		close(p.frames)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-p.exit:
		case <-time.After(10 * time.Second):
			t.Error("server did not exit")
		}
		for range p.frames {
		}
		rt.Close(context.Background())
	})
	return p
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next frame that matches: one seen before and not yet
// taken, else a new one. Every frame is recorded in seen.
func (p *peer) next(match func(frame) bool) frame {
	p.t.Helper()
	p.mu.Lock()
	for i := range p.seen {
		if !p.seen[i].taken && match(p.seen[i]) {
			p.seen[i].taken = true
			f := p.seen[i]
			p.mu.Unlock()
			return f
		}
	}
	p.mu.Unlock()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-p.frames:
			if !ok {
				p.t.Fatal("server output closed")
			}
			ok = match(f)
			f.taken = ok
			p.mu.Lock()
			p.seen = append(p.seen, f)
			p.mu.Unlock()
			if ok {
				return f
			}
		case <-timeout:
			p.t.Fatal("timed out waiting for a frame")
		}
	}
}

func (p *peer) response(id string) frame {
	p.t.Helper()
	return p.next(func(f frame) bool { return string(f.ID) == id && f.Method == "" })
}

func (p *peer) initialize(extra string) frame {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"cwd":%q,"provider":"scripted","model":"scripted-model"%s}}`, p.cwd, extra))
	return p.response(`"init"`)
}

func (p *peer) wantError(id, msg string) {
	p.t.Helper()
	f := p.response(id)
	if f.Error == nil || f.Error.Code != -32603 || f.Error.Message != msg {
		p.t.Fatalf("response %s = %s, want -32603 %q", id, f.raw, msg)
	}
}

func TestServer_InitializeFrame(t *testing.T) {
	p := newPeer(t, helloScript)
	f := p.initialize("")
	var res struct {
		ServerInfo struct{ Name, Version string } `json:"serverInfo"`
	}
	json.Unmarshal(f.Result, &res)
	if res.ServerInfo.Name != "deepseek-harness-sdk-runtime" || res.ServerInfo.Version != "test" {
		t.Fatalf("initialize result %s", f.raw)
	}
	p.wantErrorAfterSend(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`, "2", "SDK server is already initialized")
}

func (p *peer) wantErrorAfterSend(line, id, msg string) {
	p.t.Helper()
	p.send(line)
	p.wantError(id, msg)
}

func TestServer_InitializeValidation(t *testing.T) {
	p := newPeer(t, helloScript)
	p.wantErrorAfterSend(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","contentBlocks":[{"type":"text","text":"x"}]}}`,
		"1", "SDK server is not initialized")
	for i, mt := range []string{`0`, `-1`, `1.5`, `"10"`, `9007199254740992`, `null`} {
		p.wantErrorAfterSend(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"provider":"scripted","maxTokens":%s}}`, 10+i, mt),
			fmt.Sprint(10+i), "initialize maxTokens must be a positive safe integer")
	}
	p.wantErrorAfterSend(`{"jsonrpc":"2.0","id":20,"method":"initialize","params":{"provider":"scripted","reasoningEffort":""}}`,
		"20", "initialize reasoningEffort must be a non-empty string")
	p.wantErrorAfterSend(`{"jsonrpc":"2.0","id":21,"method":"initialize","params":{"provider":"nope"}}`,
		"21", `no adapter registered for provider "nope"`)
	p.wantErrorAfterSend(`{"jsonrpc":"2.0","id":22,"method":"initialize","params":{"provider":"deepseek-official","model":"deepseek-flash"}}`,
		"22", "MISSING_CREDENTIAL: deepseek-official needs an API key: set DEEPSEEK_API_KEY; to run offline use --provider scripted --script FILE")
	p.wantErrorAfterSend(`{"jsonrpc":"2.0","id":23,"method":"bogus/method","params":{}}`,
		"23", "unknown DeepSeek Harness SDK runtime method: bogus/method")
	// None of those initialized the server.
	p.wantErrorAfterSend(`{"jsonrpc":"2.0","id":24,"method":"session/prompt","params":{"sessionId":"s","contentBlocks":[{"type":"text","text":"x"}]}}`,
		"24", "SDK server is not initialized")
}

func TestServer_ReceiptBeforeResponseAndTurn(t *testing.T) {
	p := newPeer(t, helloScript)
	p.initialize("")
	p.send(`garbage that is not json`)
	p.send(`[1,2,3]`)
	p.send(``)
	p.send(`{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"sess-a","contentBlocks":[{"type":"text","text":"hi"}]}}`)
	resp := p.response(`"p1"`)
	var res struct{ MessageID string }
	json.Unmarshal(resp.Result, &res)
	receipt := false
	p.mu.Lock()
	for _, f := range p.seen {
		if f.Method == "session.event" && strings.Contains(f.raw, `"agent/inbox/spliced"`) && strings.Contains(f.raw, res.MessageID) {
			receipt = true
		}
	}
	p.mu.Unlock()
	if res.MessageID == "" || !receipt {
		t.Fatalf("receipt before response: %v (response %s)", receipt, resp.raw)
	}
	idle := p.next(func(f frame) bool { return f.Method == "session.status" && strings.Contains(f.raw, `"idle"`) })
	_ = idle
	// Events arrived in seq order with the assistant message.
	var seqs []int64
	var sawAnswer bool
	p.mu.Lock()
	for _, f := range p.seen {
		if f.Method != "session.event" {
			continue
		}
		var pe struct {
			SessionID string      `json:"sessionId"`
			Event     event.Event `json:"event"`
		}
		json.Unmarshal(f.Params, &pe)
		seqs = append(seqs, pe.Event.Seq)
		if pe.Event.Type == event.TypeAssistantMessage && strings.Contains(string(pe.Event.Data), "hello there") {
			sawAnswer = true
		}
	}
	p.mu.Unlock()
	for i, s := range seqs {
		if s != int64(i) {
			t.Fatalf("seqs %v", seqs)
		}
	}
	if !sawAnswer {
		t.Fatal("no assistant/message with the answer")
	}
	// A relative cwd is made absolute in the session header.
	h, err := p.rt.Store().ReadHeader("sess-a")
	if err != nil || h.Cwd != p.cwd || h.Origin != "sdk" {
		t.Fatalf("header %+v %v", h, err)
	}
}

func TestServer_RelativeCwdMadeAbsolute(t *testing.T) {
	p := newPeer(t, helloScript)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"cwd":"some/rel","provider":"scripted"}}`)
	p.response("1")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"rel","contentBlocks":[{"type":"text","text":"x"}]}}`)
	p.response("2")
	h, err := p.rt.Store().ReadHeader("rel")
	wd, _ := os.Getwd()
	if err != nil || h.Cwd != filepath.Join(wd, "some/rel") {
		t.Fatalf("cwd %q %v", h.Cwd, err)
	}
}

func TestServer_OverlappingPromptsQueueAndCoalesce(t *testing.T) {
	p := newPeer(t, `{"steps":[{"text":"one","delayMs":100},{"text":"two"}],"repeat":"last"}`)
	p.initialize("")
	for i := 0; i < 3; i++ {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"q","contentBlocks":[{"type":"text","text":"m%d"}]}}`, i, i))
	}
	for i := 0; i < 3; i++ {
		if f := p.response(fmt.Sprint(i)); f.Error != nil {
			t.Fatalf("prompt %d: %s", i, f.raw)
		}
	}
	s := p.rt.Get("q")
	if s == nil {
		t.Fatal("session not live")
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, e := range s.Events() {
		if e.Type == event.TypeUserMessage {
			users++
		}
	}
	if users != 3 {
		t.Fatalf("%d user messages recorded, want 3", users)
	}
}

func TestServer_RacingShutdownsExitOnce(t *testing.T) {
	p := newPeer(t, helloScript)
	p.initialize("")
	p.send(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"z","contentBlocks":[{"type":"text","text":"hi"}]}}`)
	p.response(`"p"`)
	p.send(`{"jsonrpc":"2.0","id":"s1","method":"shutdown"}` + "\n" + `{"jsonrpc":"2.0","id":"s2","method":"shutdown","params":null}`)
	a := p.response(`"s1"`)
	b := p.response(`"s2"`)
	if string(a.Result) != "{}" || string(b.Result) != "{}" {
		t.Fatalf("shutdown results %s %s", a.raw, b.raw)
	}
	select {
	case code := <-p.exit:
		if code != 0 {
			t.Fatalf("exit code %d", code)
		}
		p.exit <- code // for cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after shutdown")
	}
	// The session was disposed and its log closed with every event
	// flushed: the turn ended, or (when disposal came before the turn
	// claimed the prompt) the dropped prompt is recorded as canceled.
	_, evs, err := p.rt.Store().Read("z")
	if err != nil || len(evs) == 0 {
		t.Fatalf("log after shutdown: %d events, err %v", len(evs), err)
	}
	last := evs[len(evs)-1]
	if d, _ := event.Decode[event.InboxSpliced](last); last.Type != event.TypeTurnEnd && d.Outcome != event.InboxCanceled {
		t.Fatalf("log after shutdown ends with %s %s", last.Type, last.Data)
	}
	if leased, _ := p.rt.Store().Leased("z"); leased {
		t.Fatal("lease still held after shutdown")
	}
}

func TestServer_InputEOFDisposes(t *testing.T) {
	p := newPeer(t, helloScript)
	p.initialize("")
	p.send(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"e","contentBlocks":[{"type":"text","text":"hi"}]}}`)
	p.response(`"p"`)
	p.in.Close()
	select {
	case code := <-p.exit:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		p.exit <- code
	case <-time.After(10 * time.Second):
		t.Fatal("no exit on EOF")
	}
	if leased, _ := p.rt.Store().Leased("e"); leased {
		t.Fatal("lease still held after EOF")
	}
}

func TestServer_CancelAndClose(t *testing.T) {
	p := newPeer(t, `{"steps":[{"text":"slow","delayMs":30000}],"repeat":"last"}`)
	p.initialize("")
	p.send(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"c","contentBlocks":[{"type":"text","text":"hi"}]}}`)
	p.response(`"p"`)
	p.send(`{"jsonrpc":"2.0","id":"x","method":"session/cancel","params":{"sessionId":"c"}}`)
	if f := p.response(`"x"`); string(f.Result) != "{}" {
		t.Fatalf("cancel: %s", f.raw)
	}
	end := p.next(func(f frame) bool { return f.Method == "session.event" && strings.Contains(f.raw, `"turn/end"`) })
	if !strings.Contains(end.raw, `"aborted"`) {
		t.Fatalf("turn end %s", end.raw)
	}
	p.send(`{"jsonrpc":"2.0","id":"y","method":"session/cancel","params":{"sessionId":"unknown"}}`)
	p.wantError(`"y"`, "unknown session: unknown")
	p.send(`{"jsonrpc":"2.0","id":"z","method":"session/close","params":{"sessionId":"c"}}`)
	if f := p.response(`"z"`); string(f.Result) != "{}" {
		t.Fatalf("close: %s", f.raw)
	}
	if p.rt.Get("c") != nil {
		t.Fatal("closed session still live")
	}
}

func TestServer_SubagentNotifications(t *testing.T) {
	p := newPeer(t, helloScript)
	p.initialize("")
	parent, err := p.rt.Create(context.Background(), core.SessionOptions{ID: "parent", Cwd: p.cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.rt.Create(context.Background(), core.SessionOptions{ID: "child", Cwd: p.cwd, ParentSession: "parent", Depth: 1}); err != nil {
		t.Fatal(err)
	}
	st := p.next(func(f frame) bool { return f.Method == "subagent.started" })
	if !strings.Contains(st.raw, `"parentSessionId":"parent"`) || !strings.Contains(st.raw, `"childSessionId":"child"`) {
		t.Fatalf("started %s", st.raw)
	}
	parent.Record(event.New(event.TypeSubagentEnd, event.SubagentEnd{CallID: "c", Provider: "inproc", ChildSessionID: "child", StopReason: "completed", Local: true, Output: "result"}))
	parent.Record(event.New(event.TypeSubagentEnd, event.SubagentEnd{CallID: "d", Provider: "dsh-sdk", ChildSessionID: "remote", StopReason: "completed", Local: false}))
	parent.Record(event.New(event.TypeSubagentEnd, event.SubagentEnd{CallID: "e", Provider: "inproc", ChildSessionID: "child2", StopReason: "max-tokens", Local: true}))
	fin := p.next(func(f frame) bool { return f.Method == "subagent.finished" })
	want := `{"provider":"inproc","agentId":"child","parentSessionId":"parent","childSessionId":"child","status":"ok","stopReason":"completed","lastAssistantMessage":[{"type":"text","text":"result"}]}`
	if string(fin.Params) != want {
		t.Fatalf("finished\n got %s\nwant %s", fin.Params, want)
	}
	fin2 := p.next(func(f frame) bool { return f.Method == "subagent.finished" })
	if !strings.Contains(string(fin2.Params), `"childSessionId":"child2","status":"error","stopReason":"max-tokens"}`) {
		t.Fatalf("remote run reported, or max-tokens not error: %s", fin2.Params)
	}
}

// A session whose parent lives in another process (a dsh started by
// another's gateway records it) is not announced as subagent.started: the
// notification is for this runtime's own children.
func TestServer_NoSubagentStartedForARemoteParent(t *testing.T) {
	p := newPeer(t, helloScript)
	p.initialize("")
	if _, err := p.rt.Create(context.Background(), core.SessionOptions{ID: "delegated", Cwd: p.cwd, ParentSession: "in-another-process", Depth: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.rt.Create(context.Background(), core.SessionOptions{ID: "parent", Cwd: p.cwd}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.rt.Create(context.Background(), core.SessionOptions{ID: "child", Cwd: p.cwd, ParentSession: "parent", Depth: 1}); err != nil {
		t.Fatal(err)
	}
	st := p.next(func(f frame) bool { return f.Method == "subagent.started" })
	if !strings.Contains(st.raw, `"childSessionId":"child"`) {
		t.Fatalf("the first subagent.started is %s, want the in-process child's", st.raw)
	}
}

func TestServer_HostAnswersPermission(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	script := fmt.Sprintf(`{"steps":[{"toolCalls":[{"name":"write","arguments":{"file_path":%q,"content":"hi"}}]},{"text":"done"}]}`, outside)
	p := newPeer(t, script)
	p.initialize(`,"capabilities":{"permissions":true}`)
	p.send(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"perm","contentBlocks":[{"type":"text","text":"write it"}]}}`)
	req := p.next(func(f frame) bool { return f.Method == "session/request_permission" && len(f.ID) > 0 })
	if !strings.Contains(req.raw, outside) {
		t.Fatalf("permission request lacks the path: %s", req.raw)
	}
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`, req.ID))
	p.next(func(f frame) bool { return f.Method == "session.status" && strings.Contains(f.raw, `"idle"`) })
	if data, err := os.ReadFile(outside); err != nil || string(data) != "hi" {
		t.Fatalf("allowed write not done: %v", err)
	}
}

// TestServer_PromptAfterShutdownInSameWrite: a prompt read after a
// shutdown is refused even when its handler would run first.
func TestServer_PromptAfterShutdownInSameWrite(t *testing.T) {
	for i := 0; i < 20; i++ {
		p := newPeer(t, helloScript)
		p.initialize("")
		p.send(`{"jsonrpc":"2.0","id":"sd","method":"shutdown"}` + "\n" +
			`{"jsonrpc":"2.0","id":"late","method":"session/prompt","params":{"sessionId":"late-session","contentBlocks":[{"type":"text","text":"x"}]}}`)
		p.response(`"sd"`)
		select {
		case code := <-p.exit:
			p.exit <- code
		case <-time.After(10 * time.Second):
			t.Fatal("no exit")
		}
		if _, err := p.rt.Store().Dir("late-session"); err == nil {
			t.Fatalf("run %d: a prompt read after shutdown created a session", i)
		}
	}
}

// An SDK host's initialize may name MCP servers (ours, optional): the
// sessions of that connection get their tools, through the same loop.
func TestServer_InitializeMCPServers(t *testing.T) {
	web := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(web.Close)
	p := newPeer(t, `{"steps":[
		{"toolCalls":[{"name":"mcp__web__echo","arguments":{"text":"from the host's server"}}]},
		{"text":"done"}]}`)
	if f := p.initialize(fmt.Sprintf(`,"mcpServers":{"web":{"type":"http","url":%q}}`, web.URL)); f.Error != nil {
		t.Fatalf("initialize: %s", f.raw)
	}
	p.send(`{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"sess-mcp","contentBlocks":[{"type":"text","text":"go"}]}}`)
	p.response(`"p1"`)
	res := p.next(func(f frame) bool { return f.Method == "session.event" && strings.Contains(f.raw, `"tool/result"`) })
	if !strings.Contains(res.raw, "from the host's server") || strings.Contains(res.raw, `"isError":true`) {
		t.Fatalf("the MCP call did not run: %s", res.raw)
	}
}

func TestServer_InitializeMCPServersMustBeAnObject(t *testing.T) {
	p := newPeer(t, helloScript)
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"cwd":%q,"mcpServers":[1]}}`, p.cwd))
	p.wantError(`"init"`, "initialize mcpServers must be an object of servers by name")
}

func TestServer_SlashCommands(t *testing.T) {
	p := newPeer(t, helloScript)
	os.MkdirAll(filepath.Join(p.cwd, ".dsh", "commands"), 0o755)
	os.WriteFile(filepath.Join(p.cwd, ".dsh", "commands", "greet.md"),
		[]byte("---\ndescription: Greet someone\nargument-hint: NAME\n---\nSay hello to $ARGUMENTS.\n"), 0o644)
	init := p.initialize("")
	if !strings.Contains(string(init.Result), `"commands":true`) {
		t.Fatalf("initialize does not announce commands: %s", init.raw)
	}

	// The menu, before the session's first prompt.
	p.send(`{"jsonrpc":"2.0","id":"l","method":"session/commands","params":{"sessionId":"k"}}`)
	var list protocol.SessionCommandsResult
	if err := json.Unmarshal(p.response(`"l"`).Result, &list); err != nil {
		t.Fatal(err)
	}
	byName := map[string]protocol.CommandInfo{}
	for _, c := range list.Commands {
		byName[c.Name] = c
	}
	if c := byName["greet"]; c.Description != "Greet someone (project)" || c.Hint != "NAME" {
		t.Fatalf("greet: %+v in %+v", c, list.Commands)
	}
	if _, ok := byName["compact"]; !ok || list.Commands[0].Name != "init" {
		t.Fatalf("built-ins missing or not first: %+v", list.Commands)
	}

	// A command dsh answers itself: no message is queued, no turn runs.
	p.send(`{"jsonrpc":"2.0","id":"m","method":"session/prompt","params":{"sessionId":"k","contentBlocks":[{"type":"text","text":"/permissions"}]}}`)
	var res protocol.SessionPromptResult
	if err := json.Unmarshal(p.response(`"m"`).Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.MessageID != "" || res.Command == nil || res.Command.Name != "permissions" || !strings.Contains(res.Command.Reply, "permission rules") {
		t.Fatalf("/permissions answered %+v", res)
	}

	// A command file expands to the prompt the model reads.
	p.send(`{"jsonrpc":"2.0","id":"g","method":"session/prompt","params":{"sessionId":"k","contentBlocks":[{"type":"text","text":"/greet bob"}]}}`)
	res = protocol.SessionPromptResult{}
	if err := json.Unmarshal(p.response(`"g"`).Result, &res); err != nil || res.MessageID == "" || res.Command != nil {
		t.Fatalf("/greet answered %+v (%v)", res, err)
	}
	user := p.next(func(f frame) bool {
		return f.Method == "session.event" && strings.Contains(f.raw, `"user/message"`)
	})
	if !strings.Contains(user.raw, `Say hello to bob.`) {
		t.Fatalf("the expanded prompt is not the user message: %s", user.raw)
	}
	if strings.Contains(user.raw, "/permissions") {
		t.Fatalf("the answered command was queued: %s", user.raw)
	}

	// Text that is no command goes to the model as typed.
	p.send(`{"jsonrpc":"2.0","id":"u","method":"session/prompt","params":{"sessionId":"k","contentBlocks":[{"type":"text","text":"/nosuch thing"}]}}`)
	res = protocol.SessionPromptResult{}
	if err := json.Unmarshal(p.response(`"u"`).Result, &res); err != nil || res.MessageID == "" || res.Command != nil {
		t.Fatalf("/nosuch answered %+v (%v)", res, err)
	}
	p.send(`{"jsonrpc":"2.0","id":"x","method":"session/commands","params":{}}`)
	p.wantError(`"x"`, "session/commands sessionId must be a non-empty string")
}
