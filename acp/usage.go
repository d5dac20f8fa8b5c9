package acp

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
)

// Price is what one model costs, per million tokens, as the config file's
// "prices" key states it: input tokens served from the provider's cache,
// input tokens not served from it, and output tokens (reasoning included).
type Price struct {
	Currency       string  `json:"currency"`
	InputCacheHit  float64 `json:"inputCacheHit"`
	InputCacheMiss float64 `json:"inputCacheMiss"`
	Output         float64 `json:"output"`
}

// ParsePrices reads the config file's "prices" object: model id → Price.
// Errors say which model and what is wrong.
func ParsePrices(raw json.RawMessage) (map[string]Price, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf(`"prices" must be an object of model ids, such as {"deepseek-flash": {"currency": "USD", "inputCacheHit": 0.07, "inputCacheMiss": 0.27, "output": 1.10}}`)
	}
	out := make(map[string]Price, len(m))
	for model, v := range m {
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.DisallowUnknownFields()
		var p Price
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf(`"prices"."%s": want {"currency", "inputCacheHit", "inputCacheMiss", "output"} (numbers per million tokens): %v`, model, err)
		}
		if len(p.Currency) != 3 || strings.ToUpper(p.Currency) != p.Currency {
			return nil, fmt.Errorf(`"prices"."%s": currency must be an ISO 4217 code such as "USD" or "CNY", got %q`, model, p.Currency)
		}
		for _, x := range []float64{p.InputCacheHit, p.InputCacheMiss, p.Output} {
			if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf(`"prices"."%s": prices must be non-negative numbers`, model)
			}
		}
		out[model] = p
	}
	return out, nil
}

// cost is what one model call cost. InputTokens excludes cache reads
// (event.Usage keeps disjoint buckets).
func (p Price) cost(u *event.Usage) float64 {
	hit := int64(0)
	if u.CacheReadTokens != nil {
		hit = *u.CacheReadTokens
	}
	return (float64(u.InputTokens)*p.InputCacheMiss + float64(hit)*p.InputCacheHit + float64(u.OutputTokens)*p.Output) / 1e6
}

// spend adds a committed model call to the session's running cost; ok is
// false when no price is configured for its model.
func (p *projector) spend(am event.AssistantMessage) (*sdk.Cost, bool) {
	price, ok := p.a.opts.Prices[am.Message.Source.Model]
	if !ok || am.Usage == nil {
		if p.costCurrency == "" {
			return nil, false
		}
		return &sdk.Cost{Amount: p.cost, Currency: p.costCurrency}, true
	}
	if p.costCurrency != "" && p.costCurrency != price.Currency {
		// Prices in two currencies cannot be summed; keep the first.
		p.a.log.Warn("acp: prices in two currencies; cost stays in the first", "session", p.st.id, "currency", p.costCurrency, "model", am.Message.Source.Model)
		return &sdk.Cost{Amount: p.cost, Currency: p.costCurrency}, true
	}
	p.cost += price.cost(am.Usage)
	p.costCurrency = price.Currency
	return &sdk.Cost{Amount: math.Round(p.cost*1e6) / 1e6, Currency: p.costCurrency}, true
}

// seedCost starts the running cost of a session opened without a replay
// from its history, so the next usage_update's cost is the whole session's.
func (p *projector) seedCost(evs []event.Event) {
	if len(p.a.opts.Prices) == 0 {
		return
	}
	for _, ev := range evs {
		if ev.Type != event.TypeAssistantMessage {
			continue
		}
		if am, err := event.Decode[event.AssistantMessage](ev); err == nil {
			p.spend(am)
		}
	}
}
