package acp

import (
	"encoding/json"
	sdk "github.com/coder/acp-go-sdk"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A write the pipe holds back halves the rate; the rate climbs back to the
// configured one over paceRecovery, never above it; a fast write changes
// nothing.
func TestPacerHalvesOnStallAndRecovers(t *testing.T) {
	p := newPacer(500, 256)
	p.wrote(paceStall / 2)
	if p.rate != 500 {
		t.Fatalf("a fast write moved the rate to %v", p.rate)
	}
	p.wrote(paceStall)
	p.wrote(2 * paceStall)
	if p.rate != 125 || p.tokens > 0 {
		t.Fatalf("after two stalls: rate %v, tokens %v; want 125 and no burst", p.rate, p.tokens)
	}
	t0 := p.last
	p.refill(t0.Add(paceRecovery / 2))
	if p.rate != 375 {
		t.Fatalf("half way through the recovery the rate is %v, want 375", p.rate)
	}
	p.refill(t0.Add(2 * paceRecovery))
	if p.rate != 500 {
		t.Fatalf("after the recovery the rate is %v, want 500", p.rate)
	}
	for i := 0; i < 20; i++ {
		p.wrote(time.Second)
	}
	if p.rate != minPaceRate {
		t.Fatalf("a client that stalls on every write holds the rate at %v, want the floor %v", p.rate, minPaceRate)
	}
}

// Tokens accrue from the time that passed, so a timer that fires late does
// not lower the rate: the surplus stays in the bucket.
func TestPacerKeepsTheSurplusOfALateTimer(t *testing.T) {
	p := newPacer(500, 256)
	p.tokens = 0
	t0 := p.last
	p.refill(t0.Add(3 * time.Millisecond)) // 1.5 tokens at 500/s
	if p.tokens < 1.49 || p.tokens > 1.51 {
		t.Fatalf("tokens %v after 3 ms at 500/s, want 1.5", p.tokens)
	}
	p.refill(t0.Add(time.Hour))
	if p.tokens != 256 {
		t.Fatalf("tokens %v after an hour, want the burst", p.tokens)
	}
}

// An unpaced outbox (rate <= 0) ignores stalls.
func TestPacerUnpacedIgnoresStalls(t *testing.T) {
	p := newPacer(-1, 256)
	p.wrote(time.Second)
	if !p.take() || p.rate != -1 {
		t.Fatalf("unpaced pacer: rate %v", p.rate)
	}
}

// In fake time (testing/synctest): after the burst, the pacer lets exactly
// rate updates through per second, waiting on its timer in between.
func TestPacerHoldsTheRateAfterTheBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer(100, 10)
		stop := make(chan struct{})
		start := time.Now()
		for i := 0; i < 10+100; i++ {
			if !p.take() {
				p.wait(stop)
			}
		}
		// 10 from the burst, then 100 at 100/s.
		if took := time.Since(start); took < 990*time.Millisecond || took > 1010*time.Millisecond {
			t.Fatalf("110 updates at 100/s after a burst of 10 took %v, want 1 s", took)
		}
	})
}

// A replay says each thing once: a call's states fold into its tool_call,
// only the last plan is kept, and a message between two states of a call
// keeps them apart.
func TestCoalesceReplay(t *testing.T) {
	done, running := sdk.ToolCallStatusCompleted, sdk.ToolCallStatusInProgress
	ups := []sdk.SessionUpdate{
		sdk.StartToolCall("a", "read a"),
		sdk.UpdatePlan(sdk.PlanEntry{Content: "one"}),
		sdk.UpdateToolCall("a", sdk.WithUpdateStatus(running)),
		sdk.UpdateToolCall("a", sdk.WithUpdateStatus(done), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("x"))})),
		sdk.StartToolCall("b", "read b"),
		sdk.UpdateAgentMessageText("between"),
		sdk.UpdateToolCall("b", sdk.WithUpdateStatus(done)),
		sdk.UpdatePlan(sdk.PlanEntry{Content: "two"}),
	}
	out := coalesceReplay(ups)
	var kinds []string
	for _, u := range out {
		b, _ := json.Marshal(u)
		var m struct{ SessionUpdate string }
		_ = json.Unmarshal(b, &m)
		kinds = append(kinds, m.SessionUpdate)
	}
	if got := strings.Join(kinds, ","); got != "tool_call,tool_call,agent_message_chunk,tool_call_update,plan" {
		t.Fatalf("coalesced to %s", got)
	}
	if a := out[0].ToolCall; a.Status != done || len(a.Content) != 1 {
		t.Fatalf("call a: %+v", a)
	}
	if p := out[4].Plan; p.Entries[0].Content != "two" {
		t.Fatalf("plan %+v", p)
	}
}
