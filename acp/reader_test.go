package acp

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
)

// storedSession writes a session of turns text turns (each a thought and a
// message, so a replay sends three updates a turn) under root with a
// runtime of its own, closed before it returns, and returns its id.
func storedSession(t *testing.T, root, cwd string, turns int) sdk.SessionId {
	t.Helper()
	rt := newRuntime(t, root, script(step("reasoning", "thinking it over", "text", "answered")), permission.ModeAuto,
		func(c *core.Config) { c.Store = store.New(root).WithoutSync() })
	ctx := context.Background()
	s, err := rt.Create(ctx, core.SessionOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for i := range turns {
		tk, err := s.Prompt(ctx, []event.ContentBlock{event.Text(fmt.Sprintf("turn %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		<-tk.Done()
	}
	id := s.ID()
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return sdk.SessionId(id)
}

// One session's replay does not hold up another session of the connection:
// while session A replays a long history to a client held to the pace (and
// an event of A is committed mid-replay), session B's prompt runs and is
// answered with its updates long before A's replay is through. The event
// committed during A's replay is shown once, after the replay.
func TestLoadDoesNotHoldUpOtherSessions(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	const turns = 500
	a := storedSession(t, root, cwd, turns)
	h := start(t, hopts{root: root, cwd: cwd, updatesPerSecond: 300})
	h.initialize(sdk.ClientCapabilities{})
	b := h.newSession().SessionId
	h.cl.waitFor(t, "B's commands", func() bool { return len(h.cl.updates[b]) > 0 })

	loaded := make(chan error, 1)
	go func() {
		_, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: a, Cwd: cwd, McpServers: []sdk.McpServer{}})
		loaded <- err
	}()
	h.cl.waitFor(t, "A's replay under way", func() bool { return len(h.cl.updates[a]) > 0 })
	// An event of A committed while its replay is on its way out.
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: a, ModeId: sdk.SessionModeId(permission.ModeReadOnly)}); err != nil {
		t.Fatalf("session/set_mode on A: %v", err)
	}
	if r := h.promptText(b, "hello"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("B's prompt: %+v", r)
	}
	seenA := len(h.cl.got(a))
	bKinds := kinds(h.cl.got(b))
	select {
	case err := <-loaded:
		t.Fatalf("A's load answered (%v) before B's prompt", err)
	default:
	}
	if err := <-loaded; err != nil {
		t.Fatalf("A's load: %v", err)
	}
	if indexOf(bKinds, "agent_message_chunk") < 0 {
		t.Fatalf("B's prompt answered before its message: %v", bKinds)
	}

	// A prompt of A after the load: every update before its answer is out.
	if r := h.promptText(a, "after the load"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("A's prompt: %+v", r)
	}
	gotA := kinds(h.cl.got(a))
	replayEnd := indexOf(gotA, "available_commands_update")
	modes := 0
	for i, k := range gotA {
		if k == "current_mode_update" {
			modes++
			if i < replayEnd {
				t.Errorf("the mode change committed during the replay came at %d, before the replay's end at %d", i, replayEnd)
			}
		}
	}
	if modes != 1 {
		t.Errorf("the mode change committed during the replay was shown %d times, want once", modes)
	}
	users := 0
	for _, k := range gotA[:max(replayEnd, 0)] {
		if k == "user_message_chunk" {
			users++
		}
	}
	if users != turns {
		t.Errorf("the replay showed %d prompts, want %d", users, turns)
	}
	// B waited for no more than its share: when it was answered, A's
	// replay still had far more than the outbox's per-session half to go
	// (a door that made B wait for A's replay answers B only after all of
	// A's replay but its last queued updates is written).
	if left := replayEnd - seenA; left < outboxSize/2+50 {
		t.Errorf("B was answered with %d of A's %d replayed updates still to go: it waited for A's replay", left, replayEnd)
	}
}

// A session's reader goroutine ends when the session closes and its state
// is dropped; nothing of the session is left running.
func TestSessionReaderEndsWithSession(t *testing.T) {
	cwd := t.TempDir()
	forgot := make(chan string, 4)
	h := start(t, hopts{cwd: cwd, onForget: func(id string) { forgot <- id }})
	h.initialize(sdk.ClientCapabilities{})
	before := goleak.IgnoreCurrent()
	id := h.newSession().SessionId
	if r := h.promptText(id, "hi"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v", r)
	}
	if _, err := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	select {
	case got := <-forgot:
		if got != string(id) {
			t.Fatalf("forgot %s, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the closed session's state was never dropped")
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines of the closed session left: %v", err)
	}
}
