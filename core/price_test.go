package core

import (
	"context"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

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

// With a price for the model, each committed assistant/message records its
// cost and where the price came from; a message of an older log (no cost)
// is priced on read; a model with no price has none.
func TestCostRecordedWithTheMessage(t *testing.T) {
	h := newHarness(t, func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Text: "hello", FinishReason: "stop", Usage: &event.Usage{InputTokens: 1_000_000, OutputTokens: 500_000}}, nil
	})
	h.rt = h.runtimeWith(func(c *Config) {
		c.Prices = map[string]Price{"m1": {Currency: "USD", InputCacheHit: 0.07, InputCacheMiss: 0.27, Output: 1.10}}
	})
	s := h.session()
	defer s.Close(context.Background())
	run(t, s, "hi")
	var am event.AssistantMessage
	for _, e := range s.Events() {
		if e.Type == event.TypeAssistantMessage {
			am, _ = event.Decode[event.AssistantMessage](e)
		}
	}
	want := 0.27 + 0.55
	if c := am.Cost; c == nil || c.Currency != "USD" || c.Source != event.PriceFromConfig || c.Amount < want-1e-9 || c.Amount > want+1e-9 {
		t.Fatalf("recorded cost %+v, want %v USD from the config", c, want)
	}
	am.Cost = nil
	if c := s.CallCost(am); c == nil || c.Amount < want-1e-9 || c.Amount > want+1e-9 {
		t.Errorf("cost of an old message on read: %+v", c)
	}
	am.Message.Source.Model = "unpriced"
	if c := s.CallCost(am); c != nil {
		t.Errorf("an unpriced model costs %+v", c)
	}
}
