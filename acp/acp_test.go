package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/proc"
	"github.com/dsh-dev/dsh/core/sandbox"
)

func TestMain(m *testing.M) {
	// This binary is the reaper an editor's terminal runs a contained
	// command under (Options.ContainTerminal), as the dsh binary is.
	if len(os.Args) > 1 && os.Args[1] == proc.ReaperArg {
		syscall.Exit(proc.ReaperMain(os.Args[2:], os.Stderr, sandbox.Setup))
	}
	goleak.VerifyTestMain(m)
}

func step(fields ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i].(string)] = fields[i+1]
	}
	return m
}

func call(name string, args any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

func calls(cs ...map[string]any) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

func script(steps ...map[string]any) map[string]any {
	s := make([]any, len(steps))
	for i, x := range steps {
		s[i] = x
	}
	return map[string]any{"steps": s, "repeat": "last"}
}

func TestInitialize(t *testing.T) {
	h := start(t, hopts{})
	for _, tc := range []struct{ ask, want int }{{1, 1}, {7, 1}, {0, 1}} {
		resp, err := h.conn.Initialize(h.ctx(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersion(tc.ask)})
		if err != nil {
			t.Fatal(err)
		}
		if int(resp.ProtocolVersion) != tc.want {
			t.Errorf("asked %d: got version %d, want %d", tc.ask, resp.ProtocolVersion, tc.want)
		}
		if resp.AgentInfo == nil || resp.AgentInfo.Name != "dsh" || resp.AgentInfo.Version != "test" {
			t.Errorf("agentInfo = %+v", resp.AgentInfo)
		}
		c := resp.AgentCapabilities
		if !c.LoadSession || !c.PromptCapabilities.Image || c.PromptCapabilities.Audio || !c.PromptCapabilities.EmbeddedContext {
			t.Errorf("capabilities = %+v", c)
		}
		sc := c.SessionCapabilities
		if sc.List == nil || sc.Resume == nil || sc.Close == nil || sc.Delete == nil || sc.Fork == nil || sc.AdditionalDirectories == nil {
			t.Errorf("session capabilities = %+v", sc)
		}
		if !c.McpCapabilities.Http || !c.McpCapabilities.Sse || c.McpCapabilities.Acp {
			t.Errorf("mcp capabilities: %+v, want http and sse (they work), not acp", c.McpCapabilities)
		}
	}
	h.waitLine(`"authMethods":[]`)
	if _, err := h.conn.Authenticate(h.ctx(), sdk.AuthenticateRequest{MethodId: "none"}); err != nil {
		t.Errorf("authenticate: %v", err)
	}
}

func TestNewSessionBadCwd(t *testing.T) {
	h := start(t, hopts{})
	h.initialize(sdk.ClientCapabilities{})
	file := filepath.Join(h.cwd, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cwd, msg string }{
		{"relative/dir", "cwd must be an absolute path"},
		{filepath.Join(h.cwd, "missing"), "no such file"},
		{file, "is not a directory"},
	} {
		_, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: tc.cwd, McpServers: []sdk.McpServer{}})
		wantCode(t, err, -32602, tc.msg)
	}
	// MCP servers are accepted and ignored.
	resp, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "x", Command: "/bin/true", Args: []string{}, Env: []sdk.EnvVariable{}}}}})
	if err != nil {
		t.Fatalf("session/new with MCP servers: %v", err)
	}
	if !strings.HasPrefix(string(resp.SessionId), "session-") {
		t.Errorf("session id %q", resp.SessionId)
	}
}

func TestPromptText(t *testing.T) {
	h := start(t, hopts{script: script(step("reasoning", "Thinking hard.", "text", "Hello there.",
		"usage", map[string]any{"inputTokens": 100, "outputTokens": 20}))})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	if ns.Modes == nil || ns.Modes.CurrentModeId != "auto" || len(ns.Modes.AvailableModes) != 4 {
		t.Fatalf("modes = %+v", ns.Modes)
	}
	ids := []string{}
	for _, o := range ns.ConfigOptions {
		ids = append(ids, string(o.Select.Id))
	}
	if strings.Join(ids, ",") != "mode,model,thought_level" {
		t.Fatalf("config options %v", ids)
	}
	// The slash commands come after the session/new response.
	h.cl.waitFor(t, "available commands", func() bool { return len(h.cl.updates[ns.SessionId]) > 0 })
	respLine := h.waitLine(`"sessionId":"`+string(ns.SessionId)+`"`, `"result"`)
	cmdLine := h.waitLine(`available_commands_update`)
	lines := h.out.lines()
	if indexOfLine(lines, respLine) > indexOfLine(lines, cmdLine) {
		t.Errorf("available_commands_update went out before the session/new response")
	}
	cmds := h.cl.got(ns.SessionId)[0].AvailableCommandsUpdate
	if cmds == nil || len(cmds.AvailableCommands) != 5 || cmds.AvailableCommands[0].Name != "init" || cmds.AvailableCommands[1].Name != "mcp" ||
		cmds.AvailableCommands[2].Name != "permissions" || cmds.AvailableCommands[3].Name != "compact" {
		t.Fatalf("commands = %+v", cmds)
	}
	h.cl.reset(ns.SessionId)

	resp := h.promptText(ns.SessionId, "say hello")
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", resp.StopReason)
	}
	// Prompt returned: every update is already here (the SDK's barrier).
	us := h.cl.got(ns.SessionId)
	ks := kinds(us)
	ti, mi := indexOf(ks, "agent_thought_chunk"), indexOf(ks, "agent_message_chunk")
	if ti < 0 || mi < 0 || ti > mi {
		t.Fatalf("updates %v", ks)
	}
	if chunkText(us[ti]) != "Thinking hard." || chunkText(us[mi]) != "Hello there." {
		t.Errorf("chunks %q %q", chunkText(us[ti]), chunkText(us[mi]))
	}
	if i := indexOf(ks, "usage_update"); i < 0 || us[i].UsageUpdate.Used != 120 || us[i].UsageUpdate.Size != 1_000_000 {
		t.Errorf("usage update missing or wrong: %v", ks)
	}
	if i := indexOf(ks, "session_info_update"); i < 0 || *us[i].SessionInfoUpdate.Title != "say hello" {
		t.Errorf("session_info_update missing: %v", ks)
	}
	if indexOf(ks, "user_message_chunk") >= 0 {
		t.Errorf("the user's own message was echoed: %v", ks)
	}
	// The session is usable again at once.
	if resp := h.promptText(ns.SessionId, "again"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("second prompt: %q", resp.StopReason)
	}
}

func indexOfLine(lines []string, l string) int {
	for i, x := range lines {
		if x == l {
			return i
		}
	}
	return -1
}

func TestWriteAndEditDiffs(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeAuto, script: script(
		step("toolCalls", calls(call("write", map[string]any{"file_path": "hello.txt", "content": "one\ntwo\n"}))),
		step("toolCalls", calls(call("edit", map[string]any{"file_path": "hello.txt", "old_string": "two", "new_string": "three"}))),
		step("toolCalls", calls(call("todo_write", map[string]any{"todos": []any{
			map[string]any{"content": "write", "status": "completed"},
			map[string]any{"content": "test", "status": "in_progress"}}}))),
		step("text", "done"),
	)})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	h.cl.waitFor(t, "commands", func() bool { return len(h.cl.updates[ns.SessionId]) > 0 })
	if resp := h.promptText(ns.SessionId, "write a file"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop %q", resp.StopReason)
	}
	data, err := os.ReadFile(filepath.Join(h.cwd, "hello.txt"))
	if err != nil || string(data) != "one\nthree\n" {
		t.Fatalf("file = %q, %v", data, err)
	}
	us := h.cl.got(ns.SessionId)
	var starts []*sdk.SessionUpdateToolCall
	var diffs []*sdk.ToolCallContentDiff
	var plan *sdk.SessionUpdatePlan
	inProgress := 0
	for _, u := range us {
		switch {
		case u.ToolCall != nil:
			starts = append(starts, u.ToolCall)
		case u.ToolCallUpdate != nil:
			if s := u.ToolCallUpdate.Status; s != nil && *s == sdk.ToolCallStatusInProgress {
				inProgress++
			}
			if s := u.ToolCallUpdate.Status; s != nil && *s == sdk.ToolCallStatusCompleted {
				for _, c := range u.ToolCallUpdate.Content {
					if c.Diff != nil {
						diffs = append(diffs, c.Diff)
					}
				}
			}
		case u.Plan != nil:
			plan = u.Plan
		}
	}
	if len(starts) != 3 {
		t.Fatalf("tool calls: %v", kinds(us))
	}
	w := starts[0]
	wantPath := filepath.Join(h.cwd, "hello.txt")
	if w.Kind != sdk.ToolKindEdit || w.Status != sdk.ToolCallStatusPending || w.Title != "Write hello.txt" ||
		len(w.Locations) != 1 || w.Locations[0].Path != wantPath {
		t.Errorf("write tool_call = %+v", w)
	}
	if raw, _ := json.Marshal(w.RawInput); !strings.Contains(string(raw), `"file_path":"hello.txt"`) {
		t.Errorf("rawInput = %s", raw)
	}
	if starts[2].Kind != sdk.ToolKindThink {
		t.Errorf("todo_write kind %q", starts[2].Kind)
	}
	if inProgress != 3 {
		t.Errorf("%d in_progress updates, want 3", inProgress)
	}
	if len(diffs) != 2 {
		t.Fatalf("diffs: %d", len(diffs))
	}
	if diffs[0].OldText != nil || diffs[0].NewText != "one\ntwo\n" || diffs[0].Path != wantPath {
		t.Errorf("creation diff = %+v", diffs[0])
	}
	if diffs[1].OldText == nil || *diffs[1].OldText != "one\ntwo\n" || diffs[1].NewText != "one\nthree\n" {
		t.Errorf("edit diff = %+v", diffs[1])
	}
	if plan == nil || len(plan.Entries) != 2 || plan.Entries[0].Status != sdk.PlanEntryStatusCompleted ||
		plan.Entries[1].Status != sdk.PlanEntryStatusInProgress || plan.Entries[1].Content != "test" {
		t.Errorf("plan = %+v", plan)
	}
}

func TestPermissionOptions(t *testing.T) {
	write := func(name string) map[string]any {
		return step("toolCalls", calls(call("write", map[string]any{"file_path": name, "content": "x\n"})))
	}
	conv := func(match string, steps ...map[string]any) map[string]any {
		s := make([]any, len(steps))
		for i, x := range steps {
			s[i] = x
		}
		return map[string]any{"match": match, "steps": s, "repeat": "last"}
	}
	sc := map[string]any{
		"steps": []any{step("text", "?")},
		"conversations": []any{
			conv("allow-once", write("a.txt"), step("text", "ok")),
			conv("reject-once", write("b.txt"), step("text", "ok")),
			conv("allow-always", write("c.txt"), write("c.txt"), step("text", "ok")),
			conv("reject-always", write("d.txt"), write("d.txt"), step("text", "ok")),
			conv("cancel-outcome", write("e.txt"), step("text", "carried on")),
			conv("client-error", write("f.txt"), step("text", "refused")),
		},
	}
	h := start(t, hopts{mode: permission.ModeAsk, script: sc})
	h.initialize(sdk.ClientCapabilities{})

	for _, tc := range []struct {
		option   string
		asks     int
		file     string
		exists   bool
		statuses []sdk.ToolCallStatus
	}{
		{"allow-once", 1, "a.txt", true, []sdk.ToolCallStatus{sdk.ToolCallStatusCompleted}},
		{"reject-once", 1, "b.txt", false, []sdk.ToolCallStatus{sdk.ToolCallStatusFailed}},
		{"allow-always", 1, "c.txt", true, []sdk.ToolCallStatus{sdk.ToolCallStatusCompleted, sdk.ToolCallStatusCompleted}},
		{"reject-always", 1, "d.txt", false, []sdk.ToolCallStatus{sdk.ToolCallStatusFailed, sdk.ToolCallStatusFailed}},
		{"cancel-outcome", 1, "e.txt", false, []sdk.ToolCallStatus{sdk.ToolCallStatusFailed}},
		// A client that fails the request: nobody could be asked, refused.
		{"client-error", 1, "f.txt", false, []sdk.ToolCallStatus{sdk.ToolCallStatusFailed}},
	} {
		t.Run(tc.option, func(t *testing.T) {
			h.cl.mu.Lock()
			h.cl.asked = nil
			h.cl.answer = func(p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
				if tc.option == "cancel-outcome" {
					return sdk.NewRequestPermissionOutcomeCancelled()
				}
				return sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(strings.ReplaceAll(tc.option, "-", "_")))
			}
			if tc.option == "client-error" {
				h.cl.answer = nil
			}
			h.cl.mu.Unlock()
			// A workspace each: "always" answers are rules of the project.
			cwd := t.TempDir()
			ns, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			resp := h.promptText(ns.SessionId, tc.option)
			if resp.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("stop %q", resp.StopReason)
			}
			h.cl.mu.Lock()
			asked := h.cl.asked
			h.cl.mu.Unlock()
			if len(asked) != tc.asks {
				t.Fatalf("asked %d times, want %d", len(asked), tc.asks)
			}
			req := asked[0]
			if len(req.Options) != 4 || req.ToolCall.ToolCallId == "" || req.ToolCall.Title == nil || *req.ToolCall.Title != "Write "+tc.file {
				t.Errorf("permission request = %+v", req)
			}
			var kinds []string
			for _, o := range req.Options {
				kinds = append(kinds, string(o.Kind))
			}
			if strings.Join(kinds, ",") != "allow_once,allow_always,reject_once,reject_always" {
				t.Errorf("option kinds %v", kinds)
			}
			// The tool_call went out before the permission request.
			var sawCall bool
			for _, u := range h.cl.got(ns.SessionId) {
				if u.ToolCall != nil && u.ToolCall.ToolCallId == req.ToolCall.ToolCallId {
					sawCall = true
				}
			}
			if !sawCall {
				t.Errorf("no tool_call for the asked call")
			}
			_, err = os.Stat(filepath.Join(cwd, tc.file))
			if exists := err == nil; exists != tc.exists {
				t.Errorf("file exists = %v, want %v", exists, tc.exists)
			}
			var got []sdk.ToolCallStatus
			for _, u := range h.cl.got(ns.SessionId) {
				if u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil {
					if s := *u.ToolCallUpdate.Status; s == sdk.ToolCallStatusCompleted || s == sdk.ToolCallStatusFailed {
						got = append(got, s)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.statuses) {
				t.Errorf("final statuses %v, want %v", got, tc.statuses)
			}
		})
	}
}

// pidGone reports whether pid has exited (reaped or a zombie).
func pidGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func testCancelBash(t *testing.T, caps sdk.ClientCapabilities) {
	pids := t.TempDir()
	cmd := fmt.Sprintf("echo $$ > %s/bash.tmp && mv %s/bash.tmp %s/bash; sleep 30 & echo $! > %s/sleep.tmp && mv %s/sleep.tmp %s/sleep; wait",
		pids, pids, pids, pids, pids, pids)
	h := start(t, hopts{mode: permission.ModeFull, script: script(
		step("toolCalls", calls(call("bash", map[string]any{"command": cmd, "description": "sleep a while"}))),
		step("text", "after the cancel"),
	)})
	h.initialize(caps)
	ns := h.newSession()

	type result struct {
		resp sdk.PromptResponse
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := h.prompt(ns.SessionId, sdk.TextBlock("run it"))
		got <- result{resp, err}
	}()
	bashPid := readPid(t, filepath.Join(pids, "bash"))
	sleepPid := readPid(t, filepath.Join(pids, "sleep"))
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("the prompt did not end after session/cancel")
	}
	if r.err != nil || r.resp.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("prompt = %+v, %v; want cancelled", r.resp, r.err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !(pidGone(bashPid) && pidGone(sleepPid)) {
		if time.Now().After(deadline) {
			t.Fatalf("a process survived the cancel: bash %d gone=%v, sleep %d gone=%v", bashPid, pidGone(bashPid), sleepPid, pidGone(sleepPid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The bash call ended failed, and the session works right after.
	var failed bool
	for _, u := range h.cl.got(ns.SessionId) {
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == sdk.ToolCallStatusFailed {
			failed = true
		}
	}
	if !failed {
		t.Errorf("the cancelled bash call was not marked failed: %v", kinds(h.cl.got(ns.SessionId)))
	}
	if resp := h.promptText(ns.SessionId, "next"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("after cancel: %q", resp.StopReason)
	}
}

func TestCancelBashLocal(t *testing.T) { testCancelBash(t, sdk.ClientCapabilities{}) }

func TestCancelBashClientTerminal(t *testing.T) {
	testCancelBash(t, sdk.ClientCapabilities{Terminal: true})
}

func TestBashInClientTerminal(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeFull, script: script(
		step("toolCalls", calls(call("bash", map[string]any{"command": "echo out-$FOO; echo err >&2; exit 3", "description": "echo"}))),
		step("text", "ran"),
	)})
	h.initialize(sdk.ClientCapabilities{Terminal: true})
	ns := h.newSession()
	if resp := h.promptText(ns.SessionId, "run"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop %q", resp.StopReason)
	}
	var embedded, final string
	for _, u := range h.cl.got(ns.SessionId) {
		if u.ToolCallUpdate == nil {
			continue
		}
		for _, c := range u.ToolCallUpdate.Content {
			if c.Terminal != nil {
				if u.ToolCallUpdate.Status == nil {
					embedded = c.Terminal.TerminalId
				} else {
					final = c.Terminal.TerminalId
				}
			}
		}
	}
	if embedded == "" || final != embedded {
		t.Errorf("terminal embedded live %q, in the result %q", embedded, final)
	}
	// The model saw the output and the exit code.
	var res event.ToolResult
	for _, ev := range h.sessionEvents(ns.SessionId) {
		if ev.Type == event.TypeToolResult {
			res, _ = event.Decode[event.ToolResult](ev)
		}
	}
	var meta event.ToolMeta
	_ = json.Unmarshal(res.Meta, &meta)
	text := event.JoinText(res.Result().Content)
	if !strings.Contains(text, "out-") || !strings.Contains(text, "err") || meta.ExitCode == nil || *meta.ExitCode != 3 || meta.Terminal != embedded {
		t.Errorf("result %q meta %+v", text, meta)
	}
	h.cl.mu.Lock()
	n := len(h.cl.terms)
	h.cl.mu.Unlock()
	if n != 0 {
		t.Errorf("%d terminals not released", n)
	}
}

func TestBashTimeoutInClientTerminal(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeFull, script: script(
		step("toolCalls", calls(call("bash", map[string]any{"command": "echo started; sleep 20", "description": "slow", "timeout_ms": 300}))),
		step("text", "timed out"),
	)})
	h.initialize(sdk.ClientCapabilities{Terminal: true})
	ns := h.newSession()
	began := time.Now()
	if r := h.promptText(ns.SessionId, "run"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop %q", r.StopReason)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("the timeout did not stop the command (%v)", d)
	}
	var res event.ToolResult
	for _, ev := range h.sessionEvents(ns.SessionId) {
		if ev.Type == event.TypeToolResult {
			res, _ = event.Decode[event.ToolResult](ev)
		}
	}
	if text := event.JoinText(res.Result().Content); !strings.Contains(text, "started") || !strings.Contains(strings.ToLower(text), "timed out") {
		t.Errorf("result %q", text)
	}
	h.cl.mu.Lock()
	n := len(h.cl.terms)
	h.cl.mu.Unlock()
	if n != 0 {
		t.Errorf("%d terminals not released", n)
	}
}

func TestClientFileSystem(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeFull, script: script(
		step("toolCalls", calls(call("write", map[string]any{"file_path": "new.txt", "content": "fresh\n"}))),
		step("toolCalls", calls(call("read", map[string]any{"file_path": "new.txt"}))),
		step("text", "ok"),
	)})
	h.initialize(sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
	ns := h.newSession()
	if resp := h.promptText(ns.SessionId, "files"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop %q", resp.StopReason)
	}
	p := filepath.Join(h.cwd, "new.txt")
	h.cl.mu.Lock()
	writes, reads := h.cl.writes, h.cl.reads
	h.cl.mu.Unlock()
	if len(writes) != 1 || writes[0] != p {
		t.Errorf("client writes %v", writes)
	}
	if len(reads) == 0 || reads[len(reads)-1] != p {
		t.Errorf("client reads %v", reads)
	}
	if b, _ := os.ReadFile(p); string(b) != "fresh\n" {
		t.Errorf("file %q", b)
	}
}

func TestOversizedClientResponse(t *testing.T) {
	// The client's answer to fs/read_text_file is larger than the frame
	// cap: the read fails over to the disk and the connection lives on.
	h := start(t, hopts{maxFrame: 64 << 10, mode: permission.ModeFull, script: script(
		step("toolCalls", calls(call("read", map[string]any{"file_path": "big.txt"}))),
		step("text", "read it"),
	)})
	big := strings.Repeat("line of text\n", 10000)
	if err := os.WriteFile(filepath.Join(h.cwd, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	h.initialize(sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true}})
	ns := h.newSession()
	if r := h.promptText(ns.SessionId, "read"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("%+v", r)
	}
	h.cl.mu.Lock()
	reads := len(h.cl.reads)
	h.cl.mu.Unlock()
	if reads != 1 {
		t.Errorf("client reads: %d", reads)
	}
	var res event.ToolResult
	for _, ev := range h.sessionEvents(ns.SessionId) {
		if ev.Type == event.TypeToolResult {
			res, _ = event.Decode[event.ToolResult](ev)
		}
	}
	if r := res.Result(); r.IsError || !strings.Contains(event.JoinText(r.Content), "line of text") {
		t.Errorf("read result %+v", r)
	}
	if r := h.promptText(ns.SessionId, "again"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("%+v", r)
	}
}

func TestLoadSessionFromAnotherRuntime(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	sc := script(
		step("reasoning", "plan it", "toolCalls", calls(
			call("todo_write", map[string]any{"todos": []any{map[string]any{"content": "write it", "status": "in_progress"}}}),
			call("write", map[string]any{"file_path": "x.txt", "content": "x\n"}))),
		step("text", "wrote x"),
	)
	// A headless run in the same cwd, in another runtime (another process).
	other := newRuntime(t, root, sc, permission.ModeFull)
	s, err := other.Create(context.Background(), core.SessionOptions{Cwd: cwd, Origin: "run"})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("make x")})
	if err != nil {
		t.Fatal(err)
	}
	<-tk.Done()
	if tk.Result().Reason.Kind != event.ReasonCompleted {
		t.Fatalf("run: %+v", tk.Result().Reason)
	}
	if err := s.SetMode(permission.ModeReadOnly); err != nil {
		t.Fatal(err)
	}
	id := sdk.SessionId(s.ID())
	if err := other.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	h := start(t, hopts{root: root, cwd: cwd, script: sc})
	h.initialize(sdk.ClientCapabilities{})
	list, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(cwd)})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionId != id || list.Sessions[0].Title == nil ||
		*list.Sessions[0].Title != "make x" || list.Sessions[0].UpdatedAt == nil {
		t.Fatalf("list = %+v, %v", list, err)
	}

	_, err = h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	wantCode(t, err, -32602, "belongs to")
	_, err = h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: "session-nope", Cwd: cwd, McpServers: []sdk.McpServer{}})
	wantCode(t, err, -32602, "unknown session: session-nope")

	resp, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Modes == nil || resp.Modes.CurrentModeId != "read-only" {
		t.Errorf("mode not restored: %+v", resp.Modes)
	}
	// Everything was replayed before the response.
	us := h.cl.got(id)
	ks := kinds(us)
	// Coalesced at the source: each finished call is one tool_call in its
	// final state.
	want := []string{"user_message_chunk", "session_info_update", "agent_thought_chunk", "tool_call", "tool_call",
		"plan", "agent_message_chunk", "usage_update", "available_commands_update"}
	if strings.Join(ks, ",") != strings.Join(want, ",") {
		t.Fatalf("replay\n got %v\nwant %v", ks, want)
	}
	if chunkText(us[0]) != "make x" || chunkText(us[2]) != "plan it" || chunkText(us[6]) != "wrote x" {
		t.Errorf("replayed text: %q %q %q", chunkText(us[0]), chunkText(us[2]), chunkText(us[6]))
	}
	for _, u := range us[3:5] {
		if u.ToolCall.Status != sdk.ToolCallStatusCompleted || len(u.ToolCall.Content) == 0 {
			t.Errorf("replayed call %s: status %q, %d contents; want its final state", u.ToolCall.ToolCallId, u.ToolCall.Status, len(u.ToolCall.Content))
		}
	}
	var diff *sdk.ToolCallContentDiff
	for _, u := range us {
		if u.ToolCall != nil {
			for _, c := range u.ToolCall.Content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		}
	}
	if diff == nil || diff.OldText != nil || diff.NewText != "x\n" {
		t.Errorf("replayed diff %+v", diff)
	}
	// Loading it again on the same connection replays again.
	h.cl.reset(id)
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := kinds(h.cl.got(id)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("second load replayed %v", got)
	}
	// And it continues.
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: id, ModeId: "full"}); err != nil {
		t.Fatal(err)
	}
	if r := h.promptText(id, "more"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt after load: %q", r.StopReason)
	}
}

func TestResumeAndClose(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	other := newRuntime(t, root, script(step("text", "hi")), permission.ModeAuto)
	s, err := other.Create(context.Background(), core.SessionOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := s.Prompt(context.Background(), []event.ContentBlock{event.Text("first")})
	<-tk.Done()
	_ = other.Close(context.Background())
	id := sdk.SessionId(s.ID())

	h := start(t, hopts{root: root, cwd: cwd, script: script(step("text", "hi"),
		step("text", "slow", "delayMs", 20000))})
	h.initialize(sdk.ClientCapabilities{})
	if _, err := h.conn.ResumeSession(h.ctx(), sdk.ResumeSessionRequest{SessionId: id, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if ks := kinds(h.cl.got(id)); strings.Join(ks, ",") != "available_commands_update" {
		t.Errorf("resume sent %v", ks)
	}
	// The next step is slow: close the session while it runs.
	got := make(chan error, 1)
	go func() {
		resp, err := h.prompt(id, sdk.TextBlock("second"))
		if err == nil && resp.StopReason != sdk.StopReasonCancelled {
			err = fmt.Errorf("stop reason %q", resp.StopReason)
		}
		got <- err
	}()
	waitRunning(t, h, id)
	if _, err := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("prompt during close: %v", err)
	}
	_, err = h.prompt(id, sdk.TextBlock("third"))
	wantCode(t, err, -32602, "unknown session")
	_, err = h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id})
	wantCode(t, err, -32602, "unknown session")
	// Closed sessions can be loaded again.
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
}

// waitRunning waits until the session's turn has started a step.
func waitRunning(t *testing.T, h *harness, id sdk.SessionId) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s := h.rt.Get(string(id)); s != nil {
			evs := s.Events()
			if n := len(evs); n > 0 && s.Running() {
				switch evs[n-1].Type {
				case event.TypeUserMessage, event.TypeSessionTitle, event.TypeRequestHeader, event.TypeRequestContext, event.TypeStepStart:
					return
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the turn did not start")
}

func TestListPaging(t *testing.T) {
	root, cwd, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	rt := newRuntime(t, root, script(step("text", "x")), permission.ModeAuto)
	for i := 0; i < 53; i++ {
		s, err := rt.Create(context.Background(), core.SessionOptions{Cwd: cwd})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close(context.Background())
	}
	for _, c := range []struct {
		cwd    string
		parent string
	}{{elsewhere, ""}, {cwd, "session-parent"}, {cwd, ""}} { // the last: a delegated session of an older log, depth only
		s, err := rt.Create(context.Background(), core.SessionOptions{Cwd: c.cwd, ParentSession: c.parent, Depth: 1})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close(context.Background())
	}
	_ = rt.Close(context.Background())

	h := start(t, hopts{root: root, cwd: cwd})
	h.initialize(sdk.ClientCapabilities{})
	page1, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(cwd)})
	if err != nil || len(page1.Sessions) != 50 || page1.NextCursor == nil {
		t.Fatalf("page 1: %d sessions, cursor %v, %v", len(page1.Sessions), page1.NextCursor, err)
	}
	page2, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(cwd), Cursor: page1.NextCursor})
	if err != nil || len(page2.Sessions) != 3 || page2.NextCursor != nil {
		t.Fatalf("page 2: %d sessions, cursor %v, %v", len(page2.Sessions), page2.NextCursor, err)
	}
	seen := map[sdk.SessionId]bool{}
	for _, s := range append(page1.Sessions, page2.Sessions...) {
		if seen[s.SessionId] || s.Cwd != cwd {
			t.Errorf("session %+v repeated or in the wrong cwd", s)
		}
		seen[s.SessionId] = true
	}
	all, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{})
	if err != nil || len(all.Sessions) != 50 {
		t.Fatalf("unfiltered: %d, %v", len(all.Sessions), err)
	}
	_, err = h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cursor: sdk.Ptr("%%%")})
	wantCode(t, err, -32602, "invalid cursor")
	_, err = h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: sdk.Ptr("rel")})
	wantCode(t, err, -32602, "absolute")
}

func TestSetConfigOption(t *testing.T) {
	h := start(t, hopts{models: []string{"other-model"}})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	id := ns.SessionId
	h.cl.waitFor(t, "commands", func() bool { return len(h.cl.updates[id]) > 0 })
	h.cl.reset(id)
	set := func(opt, val string) (sdk.SetSessionConfigOptionResponse, error) {
		return h.conn.SetSessionConfigOption(h.ctx(), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
			SessionId: id, ConfigId: sdk.SessionConfigId(opt), Value: sdk.SessionConfigValueId(val)}})
	}
	current := func(opts []sdk.SessionConfigOption, id string) string {
		for _, o := range opts {
			if string(o.Select.Id) == id {
				return string(o.Select.CurrentValue)
			}
		}
		return ""
	}
	resp, err := set("model", "other-model")
	if err != nil || current(resp.ConfigOptions, "model") != "other-model" {
		t.Fatalf("set model: %+v %v", resp, err)
	}
	if got := h.rt.Get(string(id)).Config().Model; got != "other-model" {
		t.Errorf("session model %q", got)
	}
	resp, err = set("thought_level", "low")
	if err != nil || current(resp.ConfigOptions, "thought_level") != "low" || h.rt.Get(string(id)).Config().ReasoningEffort != "low" {
		t.Fatalf("set effort: %+v %v", resp, err)
	}
	resp, err = set("mode", "ask")
	if err != nil || current(resp.ConfigOptions, "mode") != "ask" || h.rt.Get(string(id)).Mode() != permission.ModeAsk {
		t.Fatalf("set mode: %+v %v", resp, err)
	}
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: id, ModeId: "read-only"}); err != nil {
		t.Fatal(err)
	}
	h.cl.waitFor(t, "notifications", func() bool { return len(h.cl.updates[id]) >= 6 })
	ks := kinds(h.cl.got(id))
	if strings.Join(ks, ",") != "config_option_update,config_option_update,current_mode_update,config_option_update,current_mode_update,config_option_update" {
		t.Errorf("notifications %v", ks)
	}
	for _, tc := range []struct{ opt, val, msg string }{
		{"model", "nope", "unknown model"},
		{"thought_level", "extreme", "unknown reasoning effort"},
		{"mode", "yolo", "unknown mode"},
		{"color", "red", "unknown config option"},
	} {
		_, err := set(tc.opt, tc.val)
		wantCode(t, err, -32602, tc.msg)
	}
	_, err = h.conn.SetSessionConfigOption(h.ctx(), sdk.SetSessionConfigOptionRequest{Boolean: &sdk.SetSessionConfigOptionBoolean{
		SessionId: id, ConfigId: "mode", Type: "boolean", Value: true}})
	wantCode(t, err, -32602, "not a boolean")
	_, err = h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: id, ModeId: "yolo"})
	wantCode(t, err, -32602, "unknown mode")
	_, err = h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: "session-x", ModeId: "ask"})
	wantCode(t, err, -32602, "unknown session")
}

func pngData(t *testing.T) string {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.White)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestPromptContent(t *testing.T) {
	h := start(t, hopts{})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	id := ns.SessionId
	good := pngData(t)

	bad := []struct {
		name   string
		blocks []sdk.ContentBlock
		msg    string
	}{
		{"empty", nil, "empty prompt"},
		{"blank", []sdk.ContentBlock{sdk.TextBlock("  \n")}, "empty prompt"},
		{"audio", []sdk.ContentBlock{sdk.TextBlock("hear"), sdk.AudioBlock("AAAA", "audio/wav")}, "audio content is not supported"},
		{"bad base64", []sdk.ContentBlock{sdk.ImageBlock(good, "image/png"), sdk.ImageBlock("!!!", "image/png")}, "not valid base64"},
		{"wrong type", []sdk.ContentBlock{sdk.ImageBlock(good, "image/jpeg")}, "is image/png, not image/jpeg"},
		{"bmp", []sdk.ContentBlock{sdk.ImageBlock(good, "image/bmp")}, "not supported"},
		{"blob", []sdk.ContentBlock{sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{Uri: "file:///a.zip", Blob: "AAAA", MimeType: sdk.Ptr("application/zip")}})}, "binary resource"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.conn.Prompt(h.ctx(), sdk.PromptRequest{SessionId: id, Prompt: append([]sdk.ContentBlock{}, tc.blocks...)})
			wantCode(t, err, -32602, tc.msg)
		})
	}
	// Nothing was saved by the refused batches.
	if entries, _ := os.ReadDir(filepath.Join(h.rt.Get(string(id)).Dir(), "attachments")); len(entries) != 0 {
		t.Errorf("a refused prompt saved %d attachments", len(entries))
	}
	_, err := h.prompt("session-unknown", sdk.TextBlock("hi"))
	wantCode(t, err, -32602, "unknown session: session-unknown")

	blocks := []sdk.ContentBlock{
		sdk.TextBlock("look at "),
		sdk.ResourceLinkBlock("main.go", "file:///w/main.go"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///w/a.txt", Text: "alpha"}}),
		sdk.ImageBlock(good, "image/png"),
	}
	if r, err := h.prompt(id, blocks...); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", r, err)
	}
	var msg event.Message
	for _, ev := range h.sessionEvents(id) {
		if ev.Type == event.TypeUserMessage {
			msg, _ = event.Decode[event.Message](ev)
		}
	}
	wantText := "look at \n[resource_link name=\"main.go\" uri=\"file:///w/main.go\"]\n\n[resource uri=\"file:///w/a.txt\"]\nalpha\n[/resource]\n"
	if len(msg.Content) != 2 || msg.Content[0].Text != wantText || msg.Content[1].Type != event.BlockImage ||
		msg.Content[1].Attachment == nil || msg.Content[1].Attachment.MediaType != "image/png" {
		t.Fatalf("user message = %+v", msg.Content)
	}

	// /init expands to its instruction.
	if _, err := h.prompt(id, sdk.TextBlock("/init tests")); err != nil {
		t.Fatal(err)
	}
	for _, ev := range h.sessionEvents(id) {
		if ev.Type == event.TypeUserMessage {
			msg, _ = event.Decode[event.Message](ev)
		}
	}
	if !strings.HasPrefix(msg.Content[0].Text, "Write an AGENTS.md file") || !strings.HasSuffix(msg.Content[0].Text, "focus on: tests") {
		t.Errorf("/init became %q", msg.Content[0].Text)
	}
}

func TestStopReasons(t *testing.T) {
	conv := func(match string, st map[string]any) map[string]any {
		return map[string]any{"match": match, "steps": []any{st}, "repeat": "last"}
	}
	sc := map[string]any{"steps": []any{step("text", "?")}, "conversations": []any{
		conv("length", step("text", "cut", "finishReason", "length")),
		conv("filter", step("text", "no", "finishReason", "content_filter")),
		conv("fail", step("text", "x", "errors", []any{map[string]any{"class": "AUTH", "status": 401, "message": "bad key"}})),
		conv("loop", step("toolCalls", calls(call("glob", map[string]any{"pattern": "*.none"})))),
	}}
	h := start(t, hopts{script: sc})
	h.initialize(sdk.ClientCapabilities{})
	for _, tc := range []struct {
		prompt string
		want   sdk.StopReason
		err    string
	}{
		{"length", sdk.StopReasonMaxTokens, ""},
		{"filter", sdk.StopReasonRefusal, ""},
		{"loop", sdk.StopReasonMaxTurnRequests, ""},
		{"fail", "", "turn failed: bad key"},
	} {
		ns := h.newSession()
		resp, err := h.prompt(ns.SessionId, sdk.TextBlock(tc.prompt))
		if tc.err != "" {
			wantCode(t, err, -32603, tc.err)
			continue
		}
		if err != nil || resp.StopReason != tc.want {
			t.Errorf("%s: %+v %v, want %s", tc.prompt, resp, err, tc.want)
		}
	}
}

func TestSecondPromptInFlight(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeFull, script: script(
		step("toolCalls", calls(call("bash", map[string]any{"command": "sleep 30", "description": "slow"}))),
		step("text", "fast"))})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	first := make(chan sdk.PromptResponse, 1)
	go func() {
		resp, _ := h.prompt(ns.SessionId, sdk.TextBlock("first"))
		first <- resp
	}()
	h.cl.waitFor(t, "the bash call", func() bool {
		for _, u := range h.cl.updates[ns.SessionId] {
			if u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == sdk.ToolCallStatusInProgress {
				return true
			}
		}
		return false
	})
	_, err := h.prompt(ns.SessionId, sdk.TextBlock("second"))
	wantCode(t, err, -32602, "a prompt is already in flight for this session")
	// The first prompt was not disturbed by the second: it still runs
	// until cancelled.
	select {
	case r := <-first:
		t.Fatalf("first prompt ended early: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("first prompt: %+v", r)
	}
	if r := h.promptText(ns.SessionId, "third"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("third: %+v", r)
	}
}

func TestCancelPendingPermission(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeAsk, script: script(
		step("toolCalls", calls(call("write", map[string]any{"file_path": "p.txt", "content": "p"}))),
		step("text", "ok"))})
	h.initialize(sdk.ClientCapabilities{})
	h.cl.answer = func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome { return sdk.RequestPermissionOutcome{} } // hold
	ns := h.newSession()
	got := make(chan sdk.PromptResponse, 1)
	go func() {
		r, _ := h.prompt(ns.SessionId, sdk.TextBlock("go"))
		got <- r
	}()
	h.cl.waitFor(t, "permission request", func() bool { return len(h.cl.asked) == 1 })
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.StopReason != sdk.StopReasonCancelled {
			t.Fatalf("stop %q", r.StopReason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("prompt did not end")
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "p.txt")); err == nil {
		t.Error("the write ran after its permission request was cancelled")
	}
}

func TestMalformedFrame(t *testing.T) {
	h := start(t, hopts{})
	h.initialize(sdk.ClientCapabilities{})
	h.raw([]byte("this is not json\n"))
	h.raw([]byte(`{"jsonrpc":"2.0","id":"raw-1","method":"session/new","params":{"cwd":` + "\n"))
	// JSON-RPC 2.0: a frame that does not parse is answered with id null
	// (its id cannot be known), once per frame, in order: by the time the
	// next request is answered, both answers are out.
	ns := h.newSession()
	out := strings.Join(h.out.lines(), "\n")
	if n := strings.Count(out, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700`); n != 2 {
		t.Errorf("want 2 parse errors with id null, got %d:\n%s", n, out)
	}
	if strings.Contains(out, `"id":"raw-1"`) {
		t.Errorf("a frame that does not parse was answered with the id it seemed to have:\n%s", out)
	}
	// The connection keeps serving.
	if r := h.promptText(ns.SessionId, "still here"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("%+v", r)
	}
}

func TestOversizedFrame(t *testing.T) {
	h := start(t, hopts{maxFrame: 64 << 10})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	big := strings.Repeat("a", 100<<10)
	// id first, as most clients write it.
	frame := fmt.Sprintf(`{"jsonrpc":"2.0","id":"big-1","method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`+"\n", ns.SessionId, big)
	h.raw([]byte(frame))
	line := h.waitLine(`"id":"big-1"`)
	want := fmt.Sprintf(`"code":-32600,"message":"frame of %d bytes exceeds the %d-byte limit"`, len(frame)-1, 64<<10)
	if !strings.Contains(line, want) {
		t.Errorf("answer %s, want %s", line, want)
	}
	// id last.
	frame = fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]},"id":77}`+"\n", ns.SessionId, big)
	h.raw([]byte(frame))
	line = h.waitLine(`"id":77`)
	if !strings.Contains(line, `-32600`) {
		t.Errorf("answer %s", line)
	}
	// A prompt just under the cap goes through, and the connection keeps
	// serving.
	if r := h.promptText(ns.SessionId, strings.Repeat("b", 60<<10)); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("%+v", r)
	}
}

func TestServeEndsWithContext(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), script(step("text", "slow", "delayMs", 20000)), permission.ModeAuto)
	defer rt.Close(context.Background())
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, rt, agentIn, agentOut, Options{}) }()
	conn := sdk.NewClientSideConnection(newTestClient(), clientOut, clientIn)
	conn.SetLogger(testLogger(t))
	if _, err := conn.Initialize(context.Background(), sdk.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("x")}})
	}()
	for rt.Get(string(ns.SessionId)) == nil || !rt.Get(string(ns.SessionId)).Running() {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if rt.Get(string(ns.SessionId)) != nil {
		t.Error("the session is still open")
	}
	_ = clientOut.Close()
	_ = agentOut.Close()
	<-conn.Done()
}

func TestReloadLiveSession(t *testing.T) {
	h := start(t, hopts{mode: permission.ModeFull, script: script(
		step("text", "first answer"),
		step("toolCalls", calls(call("bash", map[string]any{"command": "sleep 30", "description": "slow"}))),
		step("text", "after"))})
	h.initialize(sdk.ClientCapabilities{})
	// A session live in the runtime but opened by someone else (another
	// door of this process): loading it takes it over.
	s, err := h.rt.Create(context.Background(), core.SessionOptions{Cwd: h.cwd, Origin: "sdk"})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("hello")})
	if err != nil {
		t.Fatal(err)
	}
	<-tk.Done()
	id := sdk.SessionId(s.ID())
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if ks := kinds(h.cl.got(id)); strings.Join(ks, ",") != "user_message_chunk,session_info_update,agent_message_chunk,usage_update,available_commands_update" {
		t.Fatalf("takeover replay %v", ks)
	}
	done := make(chan sdk.PromptResponse, 1)
	go func() {
		r, _ := h.prompt(id, sdk.TextBlock("run"))
		done <- r
	}()
	inProgress := func() bool {
		for _, u := range h.cl.updates[id] {
			if u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == sdk.ToolCallStatusInProgress {
				return true
			}
		}
		return false
	}
	h.cl.waitFor(t, "bash running", inProgress)
	// Load it again mid-turn: the whole history once, then live updates.
	h.cl.reset(id)
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("stop %q", r.StopReason)
	}
	ks := kinds(h.cl.got(id))
	want := "user_message_chunk,session_info_update,agent_message_chunk,user_message_chunk,tool_call,usage_update,available_commands_update,tool_call_update"
	if strings.Join(ks, ",") != want {
		t.Fatalf("re-load mid-turn\n got %v\nwant %v", strings.Join(ks, ","), want)
	}
}

// /permissions lists the project's remembered rules, numbered, with where
// they came from, and removes one by number; dsh answers, not the model.
func TestPermissionsCommand(t *testing.T) {
	h := start(t, hopts{script: script(step("text", "the model was asked"))})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	reply := func(text string) string {
		t.Helper()
		h.cl.reset(ns.SessionId)
		if r := h.promptText(ns.SessionId, text); r.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("%s: %+v", text, r)
		}
		var out strings.Builder
		for _, u := range h.cl.got(ns.SessionId) {
			out.WriteString(chunkText(u))
		}
		if strings.Contains(out.String(), "the model was asked") {
			t.Fatalf("%s went to the model", text)
		}
		return out.String()
	}
	if got := reply("/permissions"); !strings.Contains(got, "No remembered permission rules") {
		t.Fatalf("empty list: %q", got)
	}
	rs := h.rt.Get(string(ns.SessionId)).Rules()
	for _, r := range []permission.Rule{{Tool: "bash", Pattern: "git status", Allow: true}, {Tool: "bash", Pattern: "rm", Allow: false}} {
		if err := rs.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	got := reply("/permissions")
	for _, want := range []string{"1. allow bash(git status) — from an \"Always allow\" answer", "2. deny  bash(rm) — from an \"Always reject\" answer", rs.Path()} {
		if !strings.Contains(got, want) {
			t.Fatalf("list %q lacks %q", got, want)
		}
	}
	if got := reply("/permissions remove 9"); !strings.Contains(got, "There is no rule 9") {
		t.Fatalf("remove 9: %q", got)
	}
	if got := reply("/permissions remove x"); !strings.Contains(got, "not a rule number") {
		t.Fatalf("remove x: %q", got)
	}
	if got := reply("/permissions remove 1"); !strings.Contains(got, "Removed rule 1: allow bash(git status)") || !strings.Contains(got, "1. deny  bash(rm)") {
		t.Fatalf("remove 1: %q", got)
	}
	// Forgotten on disk too: a fresh load of the rules file has the deny only.
	again, err := permission.LoadRules(rs.Path())
	if err != nil {
		t.Fatal(err)
	}
	if l := again.List(); len(l) != 1 || l[0].Pattern != "rm" || l[0].Allow {
		t.Fatalf("rules on disk: %+v", l)
	}
}

// With prices configured, usage_update carries the session's running cost;
// session/load restores the usage (and the cost) after its replay.
func TestUsageCostAndRestore(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	prices := map[string]core.Price{testModel: {Currency: "USD", InputCacheHit: 0.07, InputCacheMiss: 0.27, Output: 1.10}}
	h := start(t, hopts{root: root, cwd: cwd, prices: prices})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	lastCost := func(us []sdk.SessionUpdate) *sdk.SessionUsageUpdate {
		var u *sdk.SessionUsageUpdate
		for _, x := range us {
			if x.UsageUpdate != nil {
				u = x.UsageUpdate
			}
		}
		return u
	}
	h.promptText(ns.SessionId, "one")
	first := lastCost(h.cl.got(ns.SessionId))
	if first == nil || first.Cost == nil || first.Cost.Currency != "USD" || first.Cost.Amount <= 0 {
		t.Fatalf("usage after one prompt: %+v", first)
	}
	h.promptText(ns.SessionId, "two")
	second := lastCost(h.cl.got(ns.SessionId))
	if second == nil || second.Cost == nil || second.Cost.Amount <= first.Cost.Amount {
		t.Fatalf("cost did not grow: %+v then %+v", first.Cost, second.Cost)
	}

	// Another connection loads it: the usage comes back after the replay.
	h2 := start(t, hopts{root: root, cwd: cwd, prices: prices})
	h2.initialize(sdk.ClientCapabilities{})
	if err := h.rt.Close(context.Background()); err != nil { // release the session's lease
		t.Fatal(err)
	}
	if _, err := h2.conn.LoadSession(h2.ctx(), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	restored := lastCost(h2.cl.got(ns.SessionId))
	if restored == nil || restored.Used != second.Used || restored.Size != second.Size || restored.Cost == nil ||
		math.Abs(restored.Cost.Amount-second.Cost.Amount) > 1e-9 {
		t.Fatalf("restored usage %+v, want %+v", restored, second)
	}
}

// additionalDirectories are workspace roots: in auto mode a write under one
// needs no question, the same write in a session without it is asked
// about; a directory that does not exist is refused.
func TestAdditionalDirectories(t *testing.T) {
	extra := t.TempDir()
	if r, err := filepath.EvalSymlinks(extra); err == nil {
		extra = r
	}
	target := filepath.Join(extra, "x.txt")
	h := start(t, hopts{mode: permission.ModeAuto, script: script(
		step("toolCalls", calls(call("write", map[string]any{"file_path": target, "content": "x\n"}))), step("text", "ok"))})
	init := h.initialize(sdk.ClientCapabilities{})
	if init.AgentCapabilities.SessionCapabilities.AdditionalDirectories == nil {
		t.Fatal("additionalDirectories not advertised")
	}
	_, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{}, AdditionalDirectories: []string{filepath.Join(extra, "nope")}})
	wantCode(t, err, -32602, "additionalDirectories[0]")

	h.cl.mu.Lock()
	h.cl.answer = func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected("reject_once")
	}
	h.cl.mu.Unlock()
	plain := h.newSession()
	h.promptText(plain.SessionId, "write outside")
	h.cl.mu.Lock()
	asked := len(h.cl.asked)
	h.cl.mu.Unlock()
	if _, err := os.Stat(target); asked != 1 || err == nil {
		t.Fatalf("without the root: %d questions, file written: %v", asked, err == nil)
	}

	ns, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.cwd, McpServers: []sdk.McpServer{}, AdditionalDirectories: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	h.promptText(ns.SessionId, "write in the extra root")
	h.cl.mu.Lock()
	asked = len(h.cl.asked)
	h.cl.mu.Unlock()
	if b, err := os.ReadFile(target); asked != 1 || err != nil || string(b) != "x\n" {
		t.Fatalf("with the root: %d questions in all, file %q %v", asked, b, err)
	}
}

// session/fork makes a session whose history is the source's so far; both
// go on independently.
func TestForkSession(t *testing.T) {
	h := start(t, hopts{script: script(step("text", "answer"))})
	init := h.initialize(sdk.ClientCapabilities{})
	if init.AgentCapabilities.SessionCapabilities.Fork == nil {
		t.Fatal("fork not advertised")
	}
	src := h.newSession()
	h.promptText(src.SessionId, "before the fork")
	fork, err := h.conn.UnstableForkSession(h.ctx(), sdk.UnstableForkSessionRequest{SessionId: src.SessionId, Cwd: h.cwd})
	if err != nil || fork.SessionId == "" || fork.SessionId == src.SessionId {
		t.Fatalf("fork: %+v %v", fork, err)
	}
	_, err = h.conn.UnstableForkSession(h.ctx(), sdk.UnstableForkSessionRequest{SessionId: "session-nope", Cwd: h.cwd})
	wantCode(t, err, -32602, "unknown session")

	h.promptText(fork.SessionId, "only in the fork")
	h.promptText(src.SessionId, "only in the source")
	texts := func(id sdk.SessionId) string {
		var out []string
		for _, ev := range h.sessionEvents(id) {
			if ev.Type == event.TypeUserMessage {
				m, _ := event.Decode[event.Message](ev)
				out = append(out, m.Content[0].Text)
			}
		}
		return strings.Join(out, "|")
	}
	if got := texts(fork.SessionId); !strings.HasPrefix(got, "before the fork|") || !strings.Contains(got, "only in the fork") || strings.Contains(got, "only in the source") {
		t.Fatalf("fork's user messages: %s", got)
	}
	if got := texts(src.SessionId); strings.Contains(got, "only in the fork") || !strings.Contains(got, "only in the source") {
		t.Fatalf("source's user messages: %s", got)
	}
}
