package core

import (
	"strconv"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/lazyre"
	"github.com/dsh-dev/dsh/core/model"
)

// The output budget of a request. DeepSeek counts the prompt plus
// max_tokens against the window ("you requested M tokens (P in the
// messages, K in the completion)"), so a fixed cap of 256,000 was refused
// once the history grew past three quarters of a 1M window. Each request
// asks for at most what the window leaves beside its prompt estimate and
// a margin; a refusal that still names the completion lowers it to what
// the refusal says is left, and the request is sent again at once.

const (
	// summaryMaxTokens bounds a compaction's summary call: a summary is
	// short, and its call comes when the window is fullest.
	summaryMaxTokens = 32_768
	// minOutputTokens is the least a request asks for, however full the
	// window: below it a reply cannot do anything useful.
	minOutputTokens = 1_024
)

// outputMargin is what the budget keeps back for the estimate's error
// (four bytes a token undercounts dense text): 1/32 of the window.
func outputMargin(window int64) int64 { return max(window/32, 512) }

// fitOutput sets req.MaxTokens to min(the cap, window − prompt estimate −
// margin), and at most limit when limit > 0. The room left is floored at
// minOutputTokens; the cap is not: a user's --max-tokens 777 is sent as
// 777. A provider that sends no max_tokens by default (cap 0) is left alone
// unless limit is set.
func (s *Session) fitOutput(req *model.Request, cfg event.Config, prov model.Provider, promptTokens int64, limit int) {
	eff, _ := effectiveConfig(cfg, prov.Caps(cfg.Model))
	cap := int64(eff.MaxTokens)
	if limit > 0 && (cap <= 0 || int64(limit) < cap) {
		cap = int64(limit)
	}
	if cap <= 0 {
		return
	}
	lim := s.limits(prov, cfg)
	room := lim.window - promptTokens - outputMargin(lim.window)
	req.MaxTokens = int(min(cap, max(room, minOutputTokens)))
}

// promptEstimate is the session's estimate of its next request's prompt.
func (s *Session) promptEstimate() int64 {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.conv.size.tokens(s.fixedBytes())
}

// completionShareRE reads DeepSeek's (and vLLM's) refusal of a request
// whose prompt plus max_tokens is over the window.
var completionShareRE = lazyre.New(`(?is)maximum context length is (\d+) tokens.*?(\d+) in the messages, (\d+) in the completion`)

// lowerOutput reads a "context too long" refusal that names the
// completion's share: when the prompt alone fits, it returns the
// max_tokens that fits beside it (less than asked), else 0.
func lowerOutput(me *model.Error, asked int) int {
	if me == nil || me.Class != model.ClassContextWindow {
		return 0
	}
	m := completionShareRE().FindStringSubmatch(me.Message)
	if m == nil {
		return 0
	}
	window, _ := strconv.ParseInt(m[1], 10, 64)
	prompt, _ := strconv.ParseInt(m[2], 10, 64)
	completion, _ := strconv.ParseInt(m[3], 10, 64)
	if completion == 0 {
		return 0 // the prompt alone is over: compaction's work
	}
	left := window - prompt - max(window/64, 256)
	if left < minOutputTokens || (asked > 0 && left >= int64(asked)) {
		return 0
	}
	return int(left)
}
