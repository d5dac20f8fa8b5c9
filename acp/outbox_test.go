package acp

import (
	"fmt"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// A tool call's states queued while the client is held to the pace merge
// into one frame with the latest of each field; an update of another kind
// between them keeps them apart, and other calls' updates do not.
func TestOutboxCoalescesToolCallStates(t *testing.T) {
	o := newOutbox(nil, 1)
	o.behind = true
	o.put("s", sdk.StartToolCall("a", "read a", sdk.WithStartStatus(sdk.ToolCallStatusPending)))
	o.put("s", sdk.StartToolCall("b", "read b", sdk.WithStartStatus(sdk.ToolCallStatusPending)))
	o.put("s", sdk.UpdateToolCall("a", sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
	o.put("other", sdk.UpdateAgentMessageText("another session"))
	o.put("s", sdk.UpdateToolCall("a", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("done"))})))
	o.put("s", sdk.UpdateAgentMessageText("between"))
	o.put("s", sdk.UpdateToolCall("b", sdk.WithUpdateStatus(sdk.ToolCallStatusFailed)))
	if len(o.items) != 5 || o.coalesced != 2 {
		t.Fatalf("%d items, %d coalesced; want 5 and 2", len(o.items), o.coalesced)
	}
	a := o.items[0].update.ToolCall
	if a.Status != sdk.ToolCallStatusCompleted || len(a.Content) != 1 || a.Title != "read a" {
		t.Fatalf("merged call a: %+v", a)
	}
	if b := o.items[4].update.ToolCallUpdate; b == nil || *b.Status != sdk.ToolCallStatusFailed {
		t.Fatalf("call b's failure merged across a message: %+v", o.items[4].update)
	}
}

// A client that keeps up sees every state: nothing is merged unless the
// pacer is holding it back.
func TestOutboxKeepsEveryStateWhenNotBehind(t *testing.T) {
	o := newOutbox(nil, 1)
	o.put("s", sdk.StartToolCall("a", "read a"))
	o.put("s", sdk.UpdateToolCall("a", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted)))
	if len(o.items) != 2 || o.coalesced != 0 {
		t.Fatalf("%d items, %d coalesced", len(o.items), o.coalesced)
	}
}

// While behind, the next text chunk of the same message joins the queued
// one, and a newer snapshot (plan, usage, info) replaces the queued one of
// its kind; a chunk of another kind, another message, or with any update of
// the session between them stays apart.
func TestOutboxCoalescesChunksAndSnapshots(t *testing.T) {
	o := newOutbox(nil, 1)
	o.behind = true
	title := func(s string) *string { return &s }
	o.put("s", sdk.UpdateAgentMessageText("Hel"))
	o.put("other", sdk.UpdateAgentMessageText("elsewhere"))
	o.put("s", sdk.UpdateAgentMessageText("lo"))
	o.put("s", sdk.UpdateAgentThoughtText("hmm"))
	o.put("s", sdk.UpdatePlan(sdk.PlanEntry{Content: "one", Status: sdk.PlanEntryStatusPending, Priority: sdk.PlanEntryPriorityMedium}))
	o.put("s", sdk.UpdateAgentThoughtText(" more"))
	o.put("s", sdk.UpdatePlan(sdk.PlanEntry{Content: "one", Status: sdk.PlanEntryStatusCompleted, Priority: sdk.PlanEntryPriorityMedium}))
	o.put("s", sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{Title: title("first")}})
	o.put("s", sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{UpdatedAt: title("2026-12-01T00:00:00Z")}})
	if o.coalesced != 3 || len(o.items) != 6 {
		t.Fatalf("%d items, %d coalesced; want 6 and 3", len(o.items), o.coalesced)
	}
	if got := o.items[0].update.AgentMessageChunk.Content.Text.Text; got != "Hello" {
		t.Fatalf("merged chunk %q, want Hello", got)
	}
	if got := o.items[3].update.Plan.Entries[0].Status; got != sdk.PlanEntryStatusCompleted {
		t.Fatalf("queued plan says %v, want the newer plan's completed", got)
	}
	if got := o.items[4].update.AgentThoughtChunk.Content.Text.Text; got != " more" {
		t.Fatalf("a thought chunk merged across a plan: %q", got)
	}
	info := o.items[5].update.SessionInfoUpdate
	if info.Title == nil || *info.Title != "first" || info.UpdatedAt == nil {
		t.Fatalf("session info not merged field by field: %+v", info)
	}
	total := 0
	for _, it := range o.items {
		total += it.size
	}
	if total != o.bytes {
		t.Fatalf("byte count %d, items hold %d", o.bytes, total)
	}
}

// The queue is bounded in bytes as well as in updates: a producer waits
// while the encoded updates fill outboxBytes, and goes on when the writer
// takes one.
func TestOutboxBoundsBytes(t *testing.T) {
	o := newOutbox(nil, 1)
	full := make(chan struct{}, 1)
	o.onFull = func() {
		select {
		case full <- struct{}{}:
		default:
		}
	}
	big := sdk.UpdateAgentMessageText(strings.Repeat("x", outboxBytes/4))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 5; i++ {
			o.put("s", big)
		}
	}()
	<-full
	o.mu.Lock()
	n, b := len(o.items), o.bytes
	o.mu.Unlock()
	if n >= outboxSize || b > outboxBytes {
		t.Fatalf("producer waits with %d items, %d bytes", n, b)
	}
	for {
		if _, _, ok := o.next(); !ok {
			t.Fatal("nothing queued")
		}
		select {
		case <-done:
			return
		case <-full:
		}
	}
}

// Sessions take turns at the writer, each in its own order: a live update
// of one session queued behind another's long replay goes out next, not
// after the replay; a session's marker still runs after its own updates.
func TestOutboxSessionsTakeTurns(t *testing.T) {
	o := newOutbox(nil, -1)
	for i := 0; i < 5; i++ {
		o.put("replay", sdk.UpdateAgentMessageText(fmt.Sprint("r", i)))
	}
	o.put("live", sdk.UpdateAgentMessageText("l0"))
	marked := false
	o.mark("live", func() { marked = true })
	o.put("live", sdk.UpdateAgentMessageText("l1"))
	var order []string
	for len(o.items) > 0 {
		it, _, _ := o.next()
		if it.update == nil {
			if !strings.Contains(strings.Join(order, ","), "l0") {
				t.Fatalf("the live marker ran after %v, before its update", order)
			}
			for _, fn := range it.after {
				fn()
			}
			continue
		}
		order = append(order, it.update.AgentMessageChunk.Content.Text.Text)
	}
	if got := strings.Join(order, ","); got != "r0,l0,r1,l1,r2,r3,r4" || !marked {
		t.Fatalf("written in the order %s (marker ran: %v)", got, marked)
	}
}

// A session holds at most half the queue: its producer waits for room
// while another session's update still goes in at once.
func TestOutboxKeepsRoomForOtherSessions(t *testing.T) {
	full := make(chan struct{}, 1)
	o := newOutbox(nil, -1)
	o.onFull = func() {
		select {
		case full <- struct{}{}:
		default:
		}
	}
	for i := 0; i < outboxSize/2; i++ {
		o.put("replay", sdk.UpdateAgentMessageText(fmt.Sprint(i)))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.put("replay", sdk.UpdateAgentMessageText("one more"))
	}()
	<-full
	o.put("live", sdk.UpdateAgentMessageText("live")) // does not wait
	if it, _, _ := o.next(); it.session != "replay" {
		t.Fatalf("wrote %s first", it.session)
	}
	<-done // a replay update went out: room for its next
	o.mu.Lock()
	n, live := len(o.items), o.held["live"]
	o.mu.Unlock()
	if n != outboxSize/2+1 || live != 1 {
		t.Fatalf("%d queued, %d of them live", n, live)
	}
	o.close()
}
