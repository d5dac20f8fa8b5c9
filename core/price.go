package core

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

// Price is what one model costs, per million tokens, as the config file's
// "prices" key states it: input tokens served from the provider's cache,
// input tokens not served from it, and output tokens (reasoning included).
// The cost of each model call is worked out with it once, when the call's
// message is committed (event.AssistantMessage.Cost), so every door shows
// the same figure and none needs the prices.
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

// priceCall is the cost of a call of model with usage u, or nil when no
// price is configured for the model or the provider reported no usage.
func (r *Runtime) priceCall(model string, u *event.Usage) *event.Cost {
	p, ok := r.cfg.Prices[model]
	if !ok || u == nil {
		return nil
	}
	return &event.Cost{Amount: p.cost(u), Currency: p.Currency, Source: event.PriceFromConfig}
}

// CallCost is the cost of a committed model call: the one recorded with
// it, or, for a message of a log written before costs were recorded, the
// one the configured prices give now. nil: no price for its model.
func (s *Session) CallCost(am event.AssistantMessage) *event.Cost {
	if am.Cost != nil {
		return am.Cost
	}
	return s.rt.priceCall(am.Message.Source.Model, am.Usage)
}
