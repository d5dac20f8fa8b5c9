package acp

import (
	"math"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
)

// spend adds a committed model call to the session's running cost; ok is
// false when no price is configured for its model.
func (p *projector) spend(am event.AssistantMessage) (*sdk.Cost, bool) {
	c := p.st.s.CallCost(am) // recorded at commit (core prices the call)
	if c == nil {
		if p.costCurrency == "" {
			return nil, false
		}
		return &sdk.Cost{Amount: p.cost, Currency: p.costCurrency}, true
	}
	if p.costCurrency != "" && p.costCurrency != c.Currency {
		// Prices in two currencies cannot be summed; keep the first.
		p.a.log.Warn("acp: prices in two currencies; cost stays in the first", "session", p.st.id, "currency", p.costCurrency, "model", am.Message.Source.Model)
		return &sdk.Cost{Amount: p.cost, Currency: p.costCurrency}, true
	}
	p.cost += c.Amount
	p.costCurrency = c.Currency
	return &sdk.Cost{Amount: math.Round(p.cost*1e6) / 1e6, Currency: p.costCurrency}, true
}

// seedCost starts the running cost of a session opened without a replay
// from its history, so the next usage_update's cost is the whole session's.
func (p *projector) seedCost(evs []event.Event) {
	for _, ev := range evs {
		if ev.Type != event.TypeAssistantMessage {
			continue
		}
		if am, err := event.Decode[event.AssistantMessage](ev); err == nil {
			p.spend(am)
		}
	}
}
