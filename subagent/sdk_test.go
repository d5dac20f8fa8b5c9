package subagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
)

// The out-of-process providers against the real dsh binary: a parent
// session in this process delegates to a child `dsh sdk` / `dsh acp` on the
// same scripted model and the same session store.

// dshProviders are the built-in out-of-process providers, with an
// unpooled variant of each.
const dshConfig = `{"sdk-cold": {"protocol": "sdk", "pool": false}, "acp-cold": {"protocol": "acp", "pool": false}}`

type dshCase struct{ pooled, cold string }

var dshCases = map[string]dshCase{
	"sdk": {ProviderDshSDK, "sdk-cold"},
	"acp": {ProviderDshACP, "acp-cold"},
}

// needDoor skips when the door's child cannot be started at all (the door
// has not landed in this tree yet).
func needDoor(t testing.TB, h *harness, agent string) {
	t.Helper()
	needDsh(t)
	r := h.call(context.Background(), h.parent(0), nil, map[string]any{"description": "probe", "prompt": "CHILD-OK probe", "agent": agent})
	if r.IsError && strings.Contains(resultText(r), "failed to") {
		t.Skipf("the %s door is not usable in this tree: %s", agent, resultText(r))
	}
}

func dshArgs(agent, prompt string) map[string]any {
	return map[string]any{"description": "dsh task", "prompt": prompt, "agent": agent}
}

func TestDshOutcomes(t *testing.T) {
	for door, c := range dshCases {
		t.Run(door, func(t *testing.T) {
			h := newHarness(t, hopts{config: dshConfig})
			needDoor(t, h, c.pooled)
			p := h.parent(0)
			cases := []struct {
				prompt string
				err    bool
				want   string
			}{
				{"CHILD-OK hello", false, "child result: 42"},
				{"CHILD-ERR", true, "subagent run failed\nDiagnostic: "},
				{"CHILD-MAX", true, "subagent run hit its token limit before finishing\nDiagnostic: the child's turn ended max-tokens\nPartial output before the run ended:\npartial answ"},
			}
			for _, k := range cases {
				rec := newRecorder()
				r := h.call(context.Background(), p, rec, dshArgs(c.pooled, k.prompt))
				if r.IsError != k.err || !strings.HasPrefix(resultText(r), k.want) {
					t.Errorf("%s: %v %q, want %v %q", k.prompt, r.IsError, resultText(r), k.err, k.want)
					continue
				}
				st, _ := event.Decode[event.SubagentStart](rec.of(event.TypeSubagentStart)[0])
				en, _ := event.Decode[event.SubagentEnd](rec.of(event.TypeSubagentEnd)[0])
				if st.Provider != c.pooled || en.Local || en.ChildSessionID != st.ChildSessionID {
					t.Errorf("%s: start %+v end %+v", k.prompt, st, en)
				}
				// The child wrote its log to the shared store, at depth 1.
				if door == "sdk" {
					hd, evs, err := h.rt.Store().Read(st.ChildSessionID)
					switch {
					case err != nil:
						t.Errorf("%s: child log: %v", k.prompt, err)
					case hd.DelegationDepth != 1:
						t.Errorf("%s: the child's session is at delegation depth %d, want 1: cmd/dsh must read %s "+
							"into core.Config.BaseDepth", k.prompt, hd.DelegationDepth, EnvDelegationDepth)
					case !childPreamble(evs):
						t.Errorf("%s: the child process's system prompt lacks the subagent preamble", k.prompt)
					}
				}
			}
			if door == "sdk" {
				// The SDK child reports the error's code and message.
				r := h.call(context.Background(), p, nil, dshArgs(c.pooled, "CHILD-ERR"))
				if !strings.Contains(resultText(r), "AUTH") || !strings.Contains(resultText(r), "bad key") {
					t.Errorf("error diagnostic %q", resultText(r))
				}
				t.Logf("error result: %q", resultText(r))
			}
		})
	}
}

func TestDshPooledReuse(t *testing.T) {
	for door, c := range dshCases {
		t.Run(door, func(t *testing.T) {
			h := newHarness(t, hopts{config: dshConfig})
			needDoor(t, h, c.pooled)
			p := h.parent(0)
			for i := 0; i < 2; i++ {
				if r := h.call(context.Background(), p, nil, dshArgs(c.pooled, "CHILD-OK")); r.IsError {
					t.Fatal(resultText(r))
				}
			}
			pids := h.reg.livePids()
			// The probe's parent has its own child; this parent reused one.
			if len(pids) != 2 || h.reg.idleCount() != 2 {
				t.Fatalf("live %v idle %d", pids, h.reg.idleCount())
			}
			if r := h.call(context.Background(), p, nil, dshArgs(c.cold, "CHILD-OK")); r.IsError {
				t.Fatal(resultText(r))
			}
			if err := h.reg.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				if pidAlive(pid) {
					t.Fatalf("child %d survived Close", pid)
				}
			}
		})
	}
}

func TestDshCancelMidChild(t *testing.T) {
	for door, c := range dshCases {
		for _, agent := range []string{c.pooled, c.cold} {
			t.Run(door+"/"+agent, func(t *testing.T) {
				h := newHarness(t, hopts{config: dshConfig})
				needDoor(t, h, agent)
				p := h.parent(0)
				before := map[int]bool{}
				for _, pid := range h.reg.livePids() {
					before[pid] = true
				}
				rec := newRecorder()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var pid int
				var cancelledAt time.Time
				go func() {
					<-rec.started
					time.Sleep(200 * time.Millisecond)
					for _, p := range h.reg.livePids() {
						if !before[p] {
							pid = p
						}
					}
					cancelledAt = time.Now()
					cancel()
				}()
				r := h.call(ctx, p, rec, dshArgs(agent, "CHILD-HANG"))
				if took := time.Since(cancelledAt); took > 2*time.Second {
					t.Errorf("returned %v after the cancel", took)
				}
				if !r.IsError || !strings.HasPrefix(resultText(r), "subagent run was cancelled\nDiagnostic: the parent's turn was cancelled") {
					t.Fatalf("result %q", resultText(r))
				}
				if agent == c.cold {
					if !waitGone(pid, 100*time.Millisecond) {
						t.Fatalf("child %d survived the cancel", pid)
					}
				} else if !pidAlive(pid) {
					t.Fatalf("the pooled child %d was not kept after a clean cancel", pid)
				}
				if door == "sdk" {
					en, _ := event.Decode[event.SubagentEnd](rec.of(event.TypeSubagentEnd)[0])
					_, evs, err := h.rt.Store().Read(en.ChildSessionID)
					if err != nil || lastTurnEnd(evs).Kind != "aborted" {
						t.Fatalf("child log: %v %+v", err, lastTurnEnd(evs))
					}
				}
			})
		}
	}
}

func TestDshChildCrash(t *testing.T) {
	for door, c := range dshCases {
		t.Run(door, func(t *testing.T) {
			h := newHarness(t, hopts{config: dshConfig})
			needDoor(t, h, c.pooled)
			p := h.parent(0)
			before := map[int]bool{}
			for _, pid := range h.reg.livePids() {
				before[pid] = true
			}
			rec := newRecorder()
			go func() {
				<-rec.started
				time.Sleep(200 * time.Millisecond)
				for _, pid := range h.reg.livePids() {
					if !before[pid] {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}()
			r := h.call(context.Background(), p, rec, dshArgs(c.pooled, "CHILD-HANG"))
			if !r.IsError || !strings.HasPrefix(resultText(r), "subagent run failed\nDiagnostic: ") || !strings.Contains(resultText(r), "killed by signal killed") {
				t.Fatalf("result %q", resultText(r))
			}
			// The next call gets a fresh child.
			if r := h.call(context.Background(), p, nil, dshArgs(c.pooled, "CHILD-OK")); r.IsError {
				t.Fatalf("after the crash: %q", resultText(r))
			}
		})
	}
}

func TestDshPermissionsGoToParentGate(t *testing.T) {
	for door, c := range dshCases {
		t.Run(door, func(t *testing.T) {
			asker := &testAsker{}
			h := newHarness(t, hopts{config: dshConfig, mode: permission.ModeAsk, asker: asker})
			needDoor(t, h, c.pooled)
			p := h.parent(0)
			r := h.call(context.Background(), p, nil, dshArgs(c.pooled, "CHILD-WRITE"))
			if r.IsError || resultText(r) != "write attempted" {
				t.Fatalf("result %v %q", r.IsError, resultText(r))
			}
			// ACP carries the tool's kind, not its name: dsh acp calls a write
			// an edit.
			want := map[string]string{"sdk": "write", "acp": "edit"}[door]
			if !asker.asked(want) {
				t.Fatalf("the child's write was not put to the parent's asker as %q: %+v", want, asker.reqs)
			}
			if _, err := os.Stat(filepath.Join(h.cwd, "out.txt")); !os.IsNotExist(err) {
				t.Fatalf("the rejected write happened: %v", err)
			}
		})
	}
}

// The whole loop: a parent turn whose model delegates to the default
// provider, here a dsh child.
func TestDshThroughLoop(t *testing.T) {
	for door, c := range dshCases {
		t.Run(door, func(t *testing.T) {
			h := newHarness(t, hopts{config: dshConfig, def: c.pooled})
			needDoor(t, h, c.pooled)
			p := h.parent(0)
			tk, err := p.Prompt(context.Background(), []event.ContentBlock{event.Text("PARENT-ONE go")})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-tk.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("the parent turn did not end")
			}
			if res := tk.Result(); res.Reason.Kind != "completed" || res.Text != "parent done" {
				t.Fatalf("parent %+v", res)
			}
			found := false
			for _, ev := range p.Events() {
				if ev.Type == event.TypeToolResult && strings.Contains(string(ev.Data), "child result: 42") {
					found = true
				}
			}
			if !found {
				t.Fatal("the child's answer is not in the parent's log")
			}
		})
	}
}

// childPreamble reports whether a child's log records a system prompt with
// the subagent preamble (its final message goes to a parent agent).
func childPreamble(evs []event.Event) bool {
	for _, ev := range evs {
		if ev.Type == event.TypeRequestHeader {
			h, err := event.Decode[event.RequestHeader](ev)
			return err == nil && strings.Contains(h.Header.System, "# You are a subagent")
		}
	}
	return false
}
