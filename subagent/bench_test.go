package subagent

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkDelegation measures one delegation — spawn, handshake and one
// scripted turn for a cold child; the turn alone (plus a fresh child
// session) for a pooled one — per provider.
func BenchmarkDelegation(b *testing.B) {
	fake := jsonString(testBin)
	config := fmt.Sprintf(`{
	  "sdk-cold": {"protocol": "sdk", "pool": false},
	  "acp-cold": {"protocol": "acp", "pool": false},
	  "fake": {"protocol": "acp", "command": [%s], "env": {%q: "1", "GORACE": "atexit_sleep_ms=0"}},
	  "fake-cold": {"protocol": "acp", "command": [%s], "env": {%q: "1", "GORACE": "atexit_sleep_ms=0"}, "pool": false}
	}`, fake, envFakeACP, fake, envFakeACP)
	cases := []struct {
		name, agent, prompt string
		dsh                 bool
	}{
		{"inproc", ProviderInproc, "CHILD-OK bench", false},
		{"dsh-sdk/cold", "sdk-cold", "CHILD-OK bench", true},
		{"dsh-sdk/pooled", ProviderDshSDK, "CHILD-OK bench", true},
		{"dsh-acp/cold", "acp-cold", "CHILD-OK bench", true},
		{"dsh-acp/pooled", ProviderDshACP, "CHILD-OK bench", true},
		{"fake-acp/cold", "fake-cold", "ACP-OK", false},
		{"fake-acp/pooled", "fake", "ACP-OK", false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			h := newHarness(b, hopts{config: config})
			if c.dsh {
				needDoor(b, h, c.agent)
			}
			p := h.parent(0)
			args := map[string]any{"description": "bench", "prompt": c.prompt, "agent": c.agent}
			if r := h.call(context.Background(), p, nil, args); r.IsError { // warm: a pooled child exists
				b.Fatal(resultText(r))
			}
			b.ResetTimer()
			for b.Loop() {
				if r := h.call(context.Background(), p, nil, args); r.IsError {
					b.Fatal(resultText(r))
				}
			}
		})
	}
}
