package acp

import (
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

func TestCompactCommand(t *testing.T) {
	sc := script(step("text", "Hello there."))
	sc["summary"] = map[string]any{"text": "what happened so far"}
	h := start(t, hopts{script: sc})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	if resp := h.promptText(ns.SessionId, "/compact"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("/compact of an empty session: %q", resp.StopReason)
	}
	h.promptText(ns.SessionId, "say hello")
	h.cl.reset(ns.SessionId)
	resp := h.promptText(ns.SessionId, "/compact the greeting")
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", resp.StopReason)
	}
	// The notice is on the wire before the answer.
	var texts []string
	for _, u := range h.cl.got(ns.SessionId) {
		texts = append(texts, chunkText(u))
	}
	if got := strings.Join(texts, ""); !strings.Contains(got, "Context compacted (/compact): 1 message summarised") {
		t.Fatalf("updates before the answer: %q", got)
	}
	s := h.rt.Get(string(ns.SessionId))
	n := 0
	for _, ev := range s.Events() {
		if ev.Type == "compaction/checkpoint" {
			n++
			if !strings.Contains(string(ev.Data), `"focus":"the greeting"`) {
				t.Errorf("checkpoint %s", ev.Data)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d checkpoints", n)
	}
	if resp := h.promptText(ns.SessionId, "say hello again"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("turn after /compact: %q", resp.StopReason)
	}
}

func TestCompactCommandCancelled(t *testing.T) {
	sc := script(step("text", "Hello there."))
	sc["summary"] = map[string]any{"delayMs": 60000}
	h := start(t, hopts{script: sc})
	h.initialize(sdk.ClientCapabilities{})
	ns := h.newSession()
	h.promptText(ns.SessionId, "say hello")
	got := make(chan sdk.PromptResponse, 1)
	go func() { got <- h.promptText(ns.SessionId, "/compact") }()
	waitEventType(t, h, ns.SessionId, "compaction/start")
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	if resp := <-got; resp.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("cancelled /compact answered %q", resp.StopReason)
	}
	if resp := h.promptText(ns.SessionId, "still there?"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("turn after a cancelled /compact: %q", resp.StopReason)
	}
}

// waitEventType waits until the session's log holds an event of typ.
func waitEventType(t *testing.T, h *harness, id sdk.SessionId, typ string) {
	t.Helper()
	sub := h.rt.Subscribe()
	defer sub.Close()
	if s := h.rt.Get(string(id)); s != nil {
		for _, ev := range s.Events() {
			if ev.Type == typ {
				return
			}
		}
	}
	for n := range sub.C() {
		if n.SessionID == string(id) && n.Event.Type == typ {
			return
		}
	}
	t.Fatalf("no %s event", typ)
}
