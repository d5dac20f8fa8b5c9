package acp

import (
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

func TestParsePrices(t *testing.T) {
	p, err := ParsePrices([]byte(`{"deepseek-flash":{"currency":"USD","inputCacheHit":0.07,"inputCacheMiss":0.27,"output":1.1}}`))
	if err != nil || p["deepseek-flash"].Output != 1.1 {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{`[]`, `{"m":{"currency":"usd"}}`, `{"m":{"currency":"USD","output":-1}}`, `{"m":{"currency":"USD","input":1}}`} {
		if _, err := ParsePrices([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
