package subagent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
)

// fakeConfig configures the fake ACP agent as "fake" (pooled) and
// "fake-cold" (not pooled).
func fakeConfig() string {
	cmd := jsonString(testBin)
	return fmt.Sprintf(`{
	  "fake": {"protocol": "acp", "command": [%s], "env": {%q: "1", "FAKE_GIVEN": "yes", "GORACE": "atexit_sleep_ms=0"}},
	  "fake-cold": {"protocol": "acp", "command": [%s], "env": {%q: "1", "GORACE": "atexit_sleep_ms=0"}, "pool": false}
	}`, cmd, envFakeACP, cmd, envFakeACP)
}

func acpArgs(agent, prompt string) map[string]any {
	return map[string]any{"description": "fake task", "prompt": prompt, "agent": agent}
}

func TestACPOutcomes(t *testing.T) {
	h := newHarness(t, hopts{config: fakeConfig()})
	p := h.parent(0)
	cases := []struct {
		prompt string
		err    bool
		want   string
	}{
		{"ACP-OK", false, "Hello from fake"},
		{"ACP-ERR", true, "subagent run failed\nDiagnostic: the ACP agent failed the prompt: turn failed: boom (code -32603)"},
		{"ACP-MAX", true, "subagent run hit its token limit before finishing\nDiagnostic: the child's turn ended max-tokens\nPartial output before the run ended:\npartial"},
		{"ACP-REFUSE", true, "subagent declined the task\nDiagnostic: the child's turn ended refusal"},
		{"ACP-TURNS", true, "subagent run failed\nDiagnostic: blocked: the agent hit its limit of model requests for one turn (max_turn_requests)"},
		{"ACP-ENV FAKE_GIVEN", false, "FAKE_GIVEN=yes"},
		{"ACP-ENV " + EnvDelegationDepth, false, EnvDelegationDepth + "=1"},
		{"ACP-ENV DSH_SCRIPT", false, "DSH_SCRIPT=<unset>"},
	}
	for _, c := range cases {
		rec := newRecorder()
		r := h.call(context.Background(), p, rec, acpArgs("fake", c.prompt))
		if r.IsError != c.err || resultText(r) != c.want {
			t.Errorf("%s: %v %q, want %v %q", c.prompt, r.IsError, resultText(r), c.err, c.want)
		}
		st, _ := event.Decode[event.SubagentStart](rec.of(event.TypeSubagentStart)[0])
		en, _ := event.Decode[event.SubagentEnd](rec.of(event.TypeSubagentEnd)[0])
		if st.Provider != "fake" || !strings.HasPrefix(st.ChildSessionID, "fake-") || en.ChildSessionID != st.ChildSessionID || en.Local {
			t.Errorf("%s: start %+v end %+v", c.prompt, st, en)
		}
	}
	// One pooled child served every call: each got a fresh session/new.
	if pids := h.reg.livePids(); len(pids) != 1 {
		t.Fatalf("live children %v, want one pooled child", pids)
	}
}

// The SDK's notification queue closes the connection when a handler falls
// 1024 behind; ours only appends, so a flood arrives whole.
func TestACPFloodOfChunks(t *testing.T) {
	h := newHarness(t, hopts{config: fakeConfig()})
	p := h.parent(0)
	r := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-MANY 5000"))
	if r.IsError || resultText(r) != strings.Repeat("x", 5000) {
		t.Fatalf("result %v, %d bytes", r.IsError, len(resultText(r)))
	}
}

func TestACPPooledReuse(t *testing.T) {
	h := newHarness(t, hopts{config: fakeConfig()})
	p := h.parent(0)
	first := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-PID"))
	second := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-PID"))
	if first.IsError || resultText(first) != resultText(second) {
		t.Fatalf("pids %q and %q: the child was not reused", resultText(first), resultText(second))
	}
	if h.reg.idleCount() != 1 {
		t.Fatalf("idle children %d", h.reg.idleCount())
	}
	// Another parent session gets its own child.
	other := h.call(context.Background(), h.parent(0), nil, acpArgs("fake", "ACP-PID"))
	if resultText(other) == resultText(first) {
		t.Fatal("a child was shared across parent sessions")
	}
	// Not pooled: a new process per call, gone after it.
	cold1 := h.call(context.Background(), p, nil, acpArgs("fake-cold", "ACP-PID"))
	cold2 := h.call(context.Background(), p, nil, acpArgs("fake-cold", "ACP-PID"))
	if resultText(cold1) == resultText(cold2) {
		t.Fatal("an unpooled child was reused")
	}
	pid, _ := strconv.Atoi(resultText(cold1))
	if !waitGone(pid, 10*time.Second) {
		t.Fatalf("unpooled child %d still runs", pid)
	}
	// Close reaps the pooled ones.
	pooled, _ := strconv.Atoi(resultText(first))
	if err := h.reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !waitGone(pooled, time.Second) {
		t.Fatalf("pooled child %d survived Close", pooled)
	}
	if r := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-OK")); !r.IsError || !strings.Contains(resultText(r), "gateway is closed") {
		t.Fatalf("after Close: %q", resultText(r))
	}
}

func TestACPIdleChildrenExpire(t *testing.T) {
	h := newHarness(t, hopts{config: fmt.Sprintf(`{"fake": {"protocol": "acp", "command": [%s], "env": {%q: "1", "GORACE": "atexit_sleep_ms=0"}, "idleTimeout": "200ms"}}`,
		jsonString(testBin), envFakeACP)})
	p := h.parent(0)
	r := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-PID"))
	pid, _ := strconv.Atoi(resultText(r))
	if !pidAlive(pid) {
		t.Fatal("the pooled child is not alive after the call")
	}
	if !waitGone(pid, 10*time.Second) {
		t.Fatal("the idle child was not reaped")
	}
	if n := len(h.reg.livePids()); n != 0 {
		t.Fatalf("%d live children after expiry", n)
	}
}

func TestACPCancelMidChild(t *testing.T) {
	for _, c := range []struct {
		name, agent, prompt string
		clean               bool
	}{
		{"cooperative pooled", "fake", "ACP-HANG", true},
		{"cooperative unpooled", "fake-cold", "ACP-HANG", false},
		{"deaf", "fake", "ACP-DEAF", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, hopts{config: fakeConfig()})
			p := h.parent(0)
			rec := newRecorder()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var pid int
			var cancelledAt time.Time
			go func() {
				<-rec.started
				time.Sleep(100 * time.Millisecond)
				pid = h.reg.livePids()[0]
				cancelledAt = time.Now()
				cancel()
			}()
			r := h.call(ctx, p, rec, acpArgs(c.agent, c.prompt))
			if took := time.Since(cancelledAt); took > 2*time.Second {
				t.Errorf("returned %v after the cancel", took)
			}
			text := resultText(r)
			if !r.IsError || !strings.HasPrefix(text, "subagent run was cancelled\nDiagnostic: the parent's turn was cancelled") ||
				!strings.HasSuffix(text, "Partial output before the run ended:\nstarted") {
				t.Fatalf("result %q", text)
			}
			if c.clean {
				if !pidAlive(pid) || h.reg.idleCount() != 1 {
					t.Fatal("a cleanly cancelled pooled child was not kept")
				}
				if r := h.call(context.Background(), p, nil, acpArgs(c.agent, "ACP-PID")); resultText(r) != strconv.Itoa(pid) {
					t.Fatalf("the kept child was not reused: %q", resultText(r))
				}
				return
			}
			// The call returned with the child already gone.
			if pidAlive(pid) {
				t.Fatalf("child %d survived the cancel", pid)
			}
			if h.reg.idleCount() != 0 {
				t.Fatal("a killed child went back to the pool")
			}
		})
	}
}

func TestACPCrash(t *testing.T) {
	h := newHarness(t, hopts{config: fakeConfig()})
	p := h.parent(0)
	r := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-CRASH"))
	want := "subagent run failed\nDiagnostic: the ACP agent disconnected mid-run: the process exited with code 3; its stderr ended with:\nfatal: simulated crash"
	if !r.IsError || !strings.HasPrefix(resultText(r), want) {
		t.Fatalf("result %q", resultText(r))
	}
	if h.reg.idleCount() != 0 || len(h.reg.livePids()) != 0 {
		t.Fatal("the crashed child stayed in the pool")
	}
	// The next call spawns a fresh child.
	if r := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-OK")); r.IsError {
		t.Fatalf("after the crash: %q", resultText(r))
	}
}

func TestACPKilledMidRun(t *testing.T) {
	h := newHarness(t, hopts{config: fakeConfig()})
	p := h.parent(0)
	rec := newRecorder()
	go func() {
		<-rec.started
		time.Sleep(100 * time.Millisecond)
		_ = syscall.Kill(h.reg.livePids()[0], syscall.SIGKILL)
	}()
	r := h.call(context.Background(), p, rec, acpArgs("fake", "ACP-DEAF"))
	if !r.IsError || !strings.HasPrefix(resultText(r), "subagent run failed\nDiagnostic: the ACP agent disconnected mid-run: the process was killed by signal killed") {
		t.Fatalf("result %q", resultText(r))
	}
}

func TestACPPermissionsGoToParentGate(t *testing.T) {
	for _, c := range []struct {
		name  string
		asker permission.Asker
		mode  permission.Mode
		want  string
	}{
		{"allowed", answerAsker(permission.AllowAlways), permission.ModeAsk, "permission: yes"},
		{"rejected", answerAsker(permission.RejectOnce), permission.ModeAsk, "permission: no"},
		{"cancelled", answerAsker(permission.Cancelled), permission.ModeAsk, "permission: cancelled"},
		{"full mode", nil, permission.ModeFull, "permission: yes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, hopts{config: fakeConfig(), mode: c.mode, asker: c.asker})
			p := h.parent(0)
			r := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-PERM"))
			if r.IsError || resultText(r) != c.want {
				t.Fatalf("result %v %q, want %q", r.IsError, resultText(r), c.want)
			}
			if a, ok := c.asker.(*fixedAsker); ok {
				req := a.last()
				if req.Tool != "edit" || req.Kind != "mutate" || !req.Write || req.Title != "Subagent (fake): Edit notes.txt" ||
					len(req.Paths) != 1 || req.Paths[0] != "/work/notes.txt" || req.CallID != "call_test" {
					t.Fatalf("the parent was asked %+v", req)
				}
			}
		})
	}
}

// fixedAsker allows the subagent tool and answers ans to everything else.
type fixedAsker struct {
	ans  permission.Answer
	reqs chan permission.Request
}

func answerAsker(ans permission.Answer) *fixedAsker {
	return &fixedAsker{ans: ans, reqs: make(chan permission.Request, 16)}
}

func (a *fixedAsker) Ask(_ context.Context, req permission.Request) (permission.Answer, error) {
	if req.Tool == ToolName {
		return permission.AllowOnce, nil
	}
	a.reqs <- req
	return a.ans, nil
}

func (a *fixedAsker) last() permission.Request {
	select {
	case r := <-a.reqs:
		return r
	default:
		return permission.Request{}
	}
}

func TestACPSpawnFailures(t *testing.T) {
	h := newHarness(t, hopts{config: `{
	  "missing": {"protocol": "acp", "command": ["/nonexistent/agent"]},
	  "mute": {"protocol": "acp", "command": ["sh", "-c", "echo not json; echo oops >&2; exit 7"]}
	}`})
	p := h.parent(0)
	r := h.call(context.Background(), p, nil, acpArgs("missing", "ACP-OK"))
	if !r.IsError || !strings.Contains(resultText(r), "subagent run failed\nDiagnostic: could not start the ACP agent: start /nonexistent/agent") {
		t.Fatalf("missing: %q", resultText(r))
	}
	r = h.call(context.Background(), p, nil, acpArgs("mute", "ACP-OK"))
	if !r.IsError || !strings.Contains(resultText(r), "the ACP agent failed to initialize") || !strings.Contains(resultText(r), "exited with code 7") ||
		!strings.Contains(resultText(r), "oops") {
		t.Fatalf("mute: %q", resultText(r))
	}
	if len(h.reg.livePids()) != 0 {
		t.Fatal("a failed child is live")
	}
}

// Close during a run: the busy child is killed, the run fails at once.
func TestACPCloseDuringRun(t *testing.T) {
	h := newHarness(t, hopts{config: fakeConfig()})
	p := h.parent(0)
	rec := newRecorder()
	var pid int
	closed := make(chan error, 1)
	go func() {
		<-rec.started
		time.Sleep(100 * time.Millisecond)
		pid = h.reg.livePids()[0]
		closed <- h.reg.Close(context.Background())
	}()
	r := h.call(context.Background(), p, rec, acpArgs("fake", "ACP-DEAF"))
	if !r.IsError || !strings.HasPrefix(resultText(r), "subagent run failed\nDiagnostic: the ACP agent disconnected mid-run") {
		t.Fatalf("result %q", resultText(r))
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if pidAlive(pid) {
		t.Fatalf("child %d survived Close", pid)
	}
}

// TestPooledChildrenCloseWithTheirParent: closing a parent session closes
// its idle children at once instead of leaving them to the idle timeout.
func TestPooledChildrenCloseWithTheirParent(t *testing.T) {
	h := newHarness(t, hopts{config: fakeConfig()})
	p := h.parent(0)
	r := h.call(context.Background(), p, nil, acpArgs("fake", "ACP-PID"))
	pid, err := strconv.Atoi(resultText(r))
	if err != nil || h.reg.idleCount() != 1 {
		t.Fatalf("pid %q, idle %d", resultText(r), h.reg.idleCount())
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.reg.idleCount() != 0 {
		t.Fatalf("%d idle children after their parent closed", h.reg.idleCount())
	}
	if !waitGone(pid, 10*time.Second) {
		t.Fatalf("child %d of a closed parent still runs", pid)
	}
}
