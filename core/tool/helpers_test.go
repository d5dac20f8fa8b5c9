package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/proc"
	"github.com/dsh-dev/dsh/core/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// This binary is the reaper of the commands it runs, as dsh is.
	if len(os.Args) > 1 && os.Args[1] == proc.ReaperArg {
		syscall.Exit(proc.ReaperMain(os.Args[2:], os.Stderr, sandbox.Setup))
	}
	// Orphaned grandchildren of killed commands come back to the test
	// process, so the group-kill tests can prove the group is gone.
	if err := proc.BecomeSubreaper(); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m)
}

// testEnv is a workspace in a temp folder with real local files and
// processes.
type testEnv struct {
	*Env
	ws     string
	mu     sync.Mutex
	events []event.Event
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(ws, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	te := &testEnv{ws: ws}
	te.Env = &Env{
		SessionID: "s1", CallID: "c1", Turn: 3, Cwd: ws,
		Files: LocalFS(), Exec: testExec(), Reads: NewReadTracker(),
		Record: func(ev event.Event) error {
			te.mu.Lock()
			defer te.mu.Unlock()
			te.events = append(te.events, ev)
			return nil
		},
	}
	return te
}

// file writes a file under the workspace (parents created) and returns its
// absolute path.
func (te *testEnv) file(t *testing.T, rel, content string) string {
	t.Helper()
	p := filepath.Join(te.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func args(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type obj = map[string]any

// call inspects then runs a tool like the loop does; an Inspect error is
// returned as an error result.
func call(t testing.TB, tl Tool, env *Env, a any) Result {
	t.Helper()
	raw := args(t, a)
	if _, err := tl.Inspect(raw, env); err != nil {
		return ErrorResult("INSPECT: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return tl.Run(ctx, raw, env)
}

func text(r Result) string { return event.JoinText(r.Content) }

func mustOK(t testing.TB, r Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", text(r))
	}
	return text(r)
}

func mustErr(t testing.TB, r Result, wants ...string) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("expected an error result, got: %s", text(r))
	}
	s := text(r)
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Fatalf("error %q does not contain %q", s, w)
		}
	}
	return s
}

func contains(t testing.TB, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Fatalf("output does not contain %q:\n%s", w, s)
		}
	}
}

var (
	tRead  = readTool{}
	tWrite = writeTool{}
	tEdit  = editTool{}
	tGlob  = globTool{}
	tGrep  = grepTool{}
	tBash  = bashTool{}
	tTodo  = todoTool{}
	tMulti = multiEditTool{}
)
