package e2e

// MCP through the built binary: servers passed by an ACP client in
// session/new (the Go SDK test server on stdio and streamable HTTP, and
// @modelcontextprotocol/server-everything from npm, which nobody here
// wrote, in both modes), a permission round-trip for an MCP call, /mcp,
// and a server that cannot start told to the user.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/mcp/mcptest"
	"github.com/dsh-dev/dsh/core/model/modeltest"
)

var (
	mcptestOnce sync.Once
	mcptestPath string
	mcptestErr  error
)

// mcptestServer builds the Go SDK test server once per test binary.
func mcptestServer(t testing.TB) string {
	t.Helper()
	mcptestOnce.Do(func() {
		// Next to the dsh binary, in the folder TestMain removes.
		mcptestPath = filepath.Join(filepath.Dir(dshBin), "mcptestserver")
		if out, err := exec.Command("go", "build", "-o", mcptestPath, "../core/mcp/mcptest/mcptestserver").CombinedOutput(); err != nil {
			mcptestErr = fmt.Errorf("building the MCP test server: %v\n%s", err, out)
		}
	})
	if mcptestErr != nil {
		t.Fatal(mcptestErr)
	}
	return mcptestPath
}

var (
	everythingOnce sync.Once
	everythingJS   string
	everythingErr  error
)

// needEverything returns the entry script of the pinned
// @modelcontextprotocol/server-everything, installing it with npm ci the
// first time (scripts/test-deps.sh does the same for CI). Skipped only
// when node or npm is missing.
func needEverything(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: the server-everything MCP tests need %s on PATH (the server is an npm package; scripts/test-deps.sh installs it): %v", bin, err)
		}
	}
	everythingOnce.Do(func() {
		dir, err := filepath.Abs(filepath.Join("testdata", "mcp-everything"))
		if err != nil {
			everythingErr = err
			return
		}
		js := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
		if _, err := os.Stat(js); err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				everythingErr = fmt.Errorf("installing server-everything: npm ci in %s: %w\n%s", dir, err, out)
				return
			}
		}
		everythingJS = js
	})
	if everythingErr != nil {
		t.Fatal(everythingErr)
	}
	return everythingJS
}

// startEverythingHTTP runs server-everything in its streamable-HTTP mode on
// a free port and returns its /mcp URL once it says it listens.
func startEverythingHTTP(t *testing.T, js string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", js, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "listening on port") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("server-everything exited before it listened")
		}
	case <-time.After(acpTimeout):
		t.Fatal("server-everything did not start listening")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// mcpCase is one MCP tool call through dsh acp.
type mcpCase struct {
	servers   []any // the session/new mcpServers
	call      modeltest.Call
	title     string // the tool call's title in the permission request
	result    string // text the model must see in the call's result
	mcpListed string // text /mcp must show
}

// runMCPOverACP opens a session with the client's servers in ask mode,
// lets the model call the tool, answers the permission request, and checks
// what the model saw and what /mcp says.
func runMCPOverACP(t *testing.T, c mcpCase) {
	srv := modeltest.New(t)
	w := newWorld(t, append(srv.Env(), "DSH_MCP_START_WAIT=60s")...)
	p := startACP(t, w, "--permission-mode", "ask")
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range p.all() {
				t.Logf("frame: %s", acpShort(f.Raw, 600))
			}
			t.Logf("stderr: %s", p.stderr.String())
		}
	})
	init := p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	var caps struct {
		AgentCapabilities struct {
			McpCapabilities struct{ HTTP, SSE bool } `json:"mcpCapabilities"`
		} `json:"agentCapabilities"`
	}
	_ = json.Unmarshal(init.Result, &caps)
	if mc := caps.AgentCapabilities.McpCapabilities; !mc.HTTP || !mc.SSE {
		t.Errorf("initialize must advertise MCP over http and sse: %s", init.Raw)
	}
	ns := p.call("session/new", map[string]any{"cwd": w.Cwd, "mcpServers": c.servers})
	p.wantResult(ns)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(ns.Result, &r)
	sid := r.SessionID

	srv.Enqueue(modeltest.ToolCallsReply("", c.call), modeltest.TextReply("done"))
	id := p.request("session/prompt", textPrompt(sid, "use the tool"))
	ask := p.waitFor("the MCP call's permission request", func(f acpFrame) bool { return f.Method == "session/request_permission" })
	var req struct {
		ToolCall struct {
			Title    string         `json:"title"`
			RawInput map[string]any `json:"rawInput"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(ask.Params, &req); err != nil {
		t.Fatal(err)
	}
	if req.ToolCall.Title != c.title || len(req.ToolCall.RawInput) == 0 {
		t.Errorf("permission request names %q with input %v, want %q and the raw input", req.ToolCall.Title, req.ToolCall.RawInput, c.title)
	}
	allow := ""
	for _, o := range req.Options {
		if o.Kind == "allow_once" {
			allow = o.OptionID
		}
	}
	p.send(mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": ask.ID, "result": map[string]any{
		"outcome": map[string]any{"outcome": "selected", "optionId": allow}}}))
	if f := p.response(id); f.stopReason() != "end_turn" {
		t.Fatalf("prompt answered %s", f.Raw)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if msg, ok := toolMessage(reqs[1], c.call.ID); !ok || !strings.Contains(msg, c.result) {
		t.Errorf("the model saw %q for the MCP call, want %q", msg, c.result)
	}

	id = p.request("session/prompt", textPrompt(sid, "/mcp"))
	if f := p.response(id); f.stopReason() != "end_turn" {
		t.Fatalf("/mcp answered %s", f.Raw)
	}
	listed := false
	for _, f := range p.all() {
		if u := f.update(); u != nil && u["sessionUpdate"] == "agent_message_chunk" {
			if b, _ := json.Marshal(u["content"]); strings.Contains(string(b), c.mcpListed) {
				listed = true
			}
		}
	}
	if !listed {
		t.Errorf("/mcp did not list %q", c.mcpListed)
	}
	if len(srv.Requests()) != 2 {
		t.Error("/mcp must be answered by dsh, not the model")
	}
}

func TestMCPOverACPStdioAndHTTP(t *testing.T) {
	t.Parallel()
	bin := mcptestServer(t)
	web := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(web.Close)
	runMCPOverACP(t, mcpCase{
		servers: []any{
			map[string]any{"name": "t", "command": bin, "args": []any{}, "env": []any{}},
			map[string]any{"type": "http", "name": "web", "url": web.URL, "headers": []any{}},
			map[string]any{"name": "gone", "command": "dsh-no-such-mcp-server", "args": []any{}, "env": []any{}},
		},
		call:      modeltest.Call{ID: "c1", Name: "mcp__web__add", Args: `{"a":2,"b":40}`},
		title:     "web: add",
		result:    `"sum":42`,
		mcpListed: "t (stdio: " + bin + "",
	})
}

func TestMCPOverACPFailedServerIsTold(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	p := startACP(t, w)
	p.initialize()
	ns := p.call("session/new", map[string]any{"cwd": w.Cwd, "mcpServers": []any{
		map[string]any{"name": "gone", "command": "dsh-no-such-mcp-server", "args": []any{}, "env": []any{}}}})
	p.wantResult(ns)
	p.waitFor("a chat message about the failed server", func(f acpFrame) bool {
		u := f.update()
		b, _ := json.Marshal(u["content"])
		return u != nil && u["sessionUpdate"] == "agent_message_chunk" && strings.Contains(string(b), `MCP server \"gone\" is not available`)
	})
	// Every stderr line is in once the process has exited.
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(acpTimeout):
		t.Fatal("dsh acp did not exit after its stdin closed")
	}
	if !strings.Contains(p.stderr.String(), "dsh-no-such-mcp-server") {
		t.Errorf("the failure must be on stderr too:\n%s", p.stderr.String())
	}
}

func TestMCPEverythingOverACPStdio(t *testing.T) {
	t.Parallel()
	js := needEverything(t)
	runMCPOverACP(t, mcpCase{
		servers: []any{map[string]any{"name": "everything", "command": "node", "args": []any{js, "stdio"}, "env": []any{}}},
		call:    modeltest.Call{ID: "c1", Name: "mcp__everything__echo", Args: `{"message":"from dsh"}`},
		title:   "everything: Echo Tool", result: "Echo: from dsh", mcpListed: "everything (stdio: node",
	})
}

func TestMCPEverythingOverACPStreamableHTTP(t *testing.T) {
	t.Parallel()
	js := needEverything(t)
	url := startEverythingHTTP(t, js)
	runMCPOverACP(t, mcpCase{
		servers: []any{map[string]any{"type": "http", "name": "everything", "url": url, "headers": []any{}}},
		call:    modeltest.Call{ID: "c1", Name: "mcp__everything__get-sum", Args: `{"a":2,"b":3}`},
		title:   "everything: Get Sum Tool", result: "5", mcpListed: "everything (http: " + url,
	})
}

// dsh run with server-everything from the config file: auto mode runs its
// readOnlyHint echo without asking.
func TestMCPEverythingHeadlessConfig(t *testing.T) {
	t.Parallel()
	js := needEverything(t)
	seen, stderr := runHeadlessMCP(t, map[string]any{"everything": map[string]any{"command": "node", "args": []any{js}}},
		modeltest.Call{ID: "c1", Name: "mcp__everything__echo", Args: `{"message":"hi"}`})
	if seen != "Echo: hi" {
		t.Errorf("the model saw %q\nstderr:\n%s", seen, stderr)
	}
}
