package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// envFakeACP makes the test binary run as the fake ACP agent.
const envFakeACP = "SUBAGENT_TEST_FAKE_ACP"

var (
	// dshBin is the dsh binary built for out-of-process tests, "" if the
	// build failed (buildErr says why).
	dshBin   string
	buildErr error
	// testBin is this test binary (the fake ACP agent).
	testBin string
)

func TestMain(m *testing.M) {
	if os.Getenv(envFakeACP) == "1" {
		os.Exit(runFakeAgent())
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "subagent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// Children must not read the user's config or state.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "DSH_") {
			os.Unsetenv(k)
		}
	}
	if testBin, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dshBin = filepath.Join(tmp, "dsh")
	cmd := exec.Command("go", "build", "-o", dshBin, "./cmd/dsh")
	cmd.Dir = ".."
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		buildErr = fmt.Errorf("go build ./cmd/dsh: %v\n%s", err, out.String())
		dshBin = ""
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	return code
}

// needDsh skips a test that needs the dsh binary when it could not be
// built (other packages mid-edit).
func needDsh(t testing.TB) {
	t.Helper()
	if dshBin == "" {
		t.Skipf("the dsh binary could not be built, skipping the out-of-process test: %v", buildErr)
	}
}

// script is the scripted model shared by parents and children: the
// first user message picks the conversation.
func script(dir string) string {
	conv := func(match string, repeat string, steps ...any) map[string]any {
		return map[string]any{"match": match, "repeat": repeat, "steps": steps}
	}
	text := func(s string) map[string]any { return map[string]any{"text": s} }
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}
	sub := func(desc, prompt string) map[string]any {
		return call("subagent", map[string]any{"description": desc, "prompt": prompt})
	}
	s := map[string]any{
		"repeat": "last",
		"steps":  []any{text("default answer")},
		"conversations": []any{
			conv("CHILD-OK", "last", text("child result: 42")),
			conv("CHILD-ERR", "last", map[string]any{"errors": []any{map[string]any{"class": "AUTH", "status": 401, "message": "bad key"}}}),
			conv("CHILD-MAX", "last", map[string]any{"text": "partial answ", "finishReason": "length"}),
			conv("CHILD-REFUSE", "last", map[string]any{"text": "no", "finishReason": "content_filter"}),
			conv("CHILD-SLOW", "last", map[string]any{"text": "one two three four five six seven eight nine ten", "chunkRunes": 4, "deltaDelayMs": 150}),
			conv("CHILD-HANG", "last", map[string]any{"text": "never", "delayMs": 60000}),
			conv("CHILD-WRITE", "last",
				map[string]any{"toolCalls": []any{call("write", map[string]any{"file_path": filepath.Join(dir, "out.txt"), "content": "x"})}},
				text("write attempted")),
			conv("CHILD-NEST", "last",
				map[string]any{"toolCalls": []any{sub("nested", "CHILD-OK nested")}},
				text("nested done")),
			conv("CHILD-BIG", "last", text(bigAnswer)),
			conv("CHILD-COMPACT", "last",
				map[string]any{"reasoning": "look", "toolCalls": []any{call("bash", map[string]any{"command": "yes 'output line of the command' | head -c 8000", "description": "print"})}},
				map[string]any{"reasoning": "look", "toolCalls": []any{call("bash", map[string]any{"command": "yes 'output line of the command' | head -c 8000", "description": "print"})}},
				map[string]any{"reasoning": "look", "toolCalls": []any{call("bash", map[string]any{"command": "yes 'output line of the command' | head -c 8000", "description": "print"})}},
				map[string]any{"reasoning": "look", "toolCalls": []any{call("bash", map[string]any{"command": "yes 'output line of the command' | head -c 8000", "description": "print"})}},
				text("child compacted answer")),
			conv("CHILD-MCP", "last",
				map[string]any{"toolCalls": []any{call("mcp__web__echo", map[string]any{"text": "through the parent's server"})}},
				text("mcp done")),
			conv("CHILD-GATE", "last",
				map[string]any{"text": "looking at the gate", "toolCalls": []any{call("bash", map[string]any{
					"command": "cat " + filepath.Join(dir, gateName), "description": "wait at the gate"})}},
				text("through the gate")),
			conv("CHILD-BRISK", "last", map[string]any{"text": "brisk answer", "chunkRunes": 3, "deltaDelayMs": 60}),
			conv("PARENT-PAR", "last",
				map[string]any{"toolCalls": []any{sub("first", "CHILD-BRISK a"), sub("second", "CHILD-BRISK b")}},
				text("parent done")),
			conv("PARENT-ONE", "last",
				map[string]any{"toolCalls": []any{sub("one", "CHILD-OK from parent")}},
				text("parent done")),
		},
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	path := filepath.Join(dir, "script.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		panic(err)
	}
	return path
}

// harness is a runtime with the subagent tool over a scripted model.
type harness struct {
	t      testing.TB
	rt     *core.Runtime
	reg    *Registry
	tool   tool.Tool
	root   string
	cwd    string
	script string
	asker  permission.Asker
}

type hopts struct {
	config   string // raw "subagents" JSON
	mode     permission.Mode
	asker    permission.Asker
	maxDepth int
	def      string // default provider
	window   int64  // contextWindow setting (0: the model's)
}

func newHarness(t testing.TB, o hopts) *harness {
	t.Helper()
	h := &harness{t: t, root: t.TempDir(), cwd: t.TempDir()}
	h.script = script(h.cwd)
	if o.mode == "" {
		o.mode = permission.ModeFull
	}
	rt, err := core.New(core.Config{
		Store: store.New(h.root),
		NewProvider: func(name string) (model.Provider, error) {
			return model.New(name, model.Options{ScriptPath: h.script})
		},
		Defaults:       event.Config{Provider: model.ProviderScripted, Model: "scripted-model"},
		PermissionMode: o.mode,
		Tools:          tool.Builtins(),
		MaxDepth:       o.maxDepth,
		ContextWindow:  o.window,
		Backoff:        func(int, time.Duration) time.Duration { return time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	if o.config != "" {
		raw = json.RawMessage(o.config)
	}
	self := []string(nil)
	if dshBin != "" {
		self = []string{dshBin}
	}
	reg, err := NewRegistry(raw, self, o.def)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetDshEnv(map[string]string{"DSH_SCRIPT": h.script, "DSH_SESSION_ROOT": h.root})
	h.rt, h.reg = rt, reg
	h.tool = NewTool(rt, reg)
	rt.RegisterTool(h.tool)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := reg.Close(ctx); err != nil {
			t.Errorf("registry close: %v", err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Errorf("runtime close: %v", err)
		}
	})
	h.asker = o.asker
	return h
}

// parent creates a parent session (at depth).
func (h *harness) parent(depth int) *core.Session {
	h.t.Helper()
	s, err := h.rt.Create(context.Background(), core.SessionOptions{Cwd: h.cwd, Depth: depth, Asker: h.asker})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// recorder wraps a parent's Record, signalling subagent/start.
type recorder struct {
	mu      sync.Mutex
	events  []event.Event
	started chan string
	rec     func(event.Event) error
}

func (r *recorder) record(ev event.Event) error {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	if ev.Type == event.TypeSubagentStart {
		d, _ := event.Decode[event.SubagentStart](ev)
		select {
		case r.started <- d.ChildSessionID:
		default:
		}
	}
	return r.rec(ev)
}

func (r *recorder) of(typ string) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, ev := range r.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// call runs the tool directly as the parent's loop would.
func (h *harness) call(ctx context.Context, parent *core.Session, rec *recorder, args map[string]any) tool.Result {
	h.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	env := &tool.Env{SessionID: parent.ID(), CallID: "call_test", Cwd: parent.Cwd(), Record: parent.Record}
	if rec != nil {
		rec.rec = parent.Record
		env.Record = rec.record
	}
	if _, err := h.tool.Inspect(raw, env); err != nil {
		h.t.Fatalf("inspect: %v", err)
	}
	return h.tool.Run(ctx, raw, env)
}

func toolEnv(p *core.Session) *tool.Env {
	return &tool.Env{SessionID: p.ID(), CallID: "call_test", Cwd: p.Cwd(), Record: p.Record}
}

func newRecorder() *recorder { return &recorder{started: make(chan string, 8)} }

func resultText(r tool.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// pidAlive reports whether pid is a live (not zombie) process.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// state is the field after the parenthesised command
	if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) {
		return data[i+2] != 'Z'
	}
	return true
}

// waitGone waits up to d for pid to be gone.
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !pidAlive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return !pidAlive(pid)
}

// childEvents reads a finished child session's log from the store.
func (h *harness) childEvents(id string) (store.Header, []event.Event) {
	h.t.Helper()
	hd, evs, err := h.rt.Store().Read(id)
	if err != nil {
		h.t.Fatalf("read child %s: %v", id, err)
	}
	return hd, evs
}

func lastTurnEnd(evs []event.Event) event.TurnEndReason {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == event.TypeTurnEnd {
			d, _ := event.Decode[event.TurnEnd](evs[i])
			return d.Reason
		}
	}
	return event.TurnEndReason{}
}
