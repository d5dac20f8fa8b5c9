package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-dev/dsh/core/model"
)

// How a step retries a failed model call. Backoff doubles from 0.5 s (0.5,
// 1, 2, 4 … with jitter, model.Backoff) and a server's Retry-After wins.
// An overloaded service (429, 503, DeepSeek's insufficient_system_resource)
// is retried for as long as the retry budget allows (Config.RetryBudget,
// about 2 minutes of waiting by default), as DeepSeek asks ("retry after a
// brief wait"); then the turn ends saying plainly that the service is
// overloaded. Other retryable failures (a broken stream, an empty reply)
// are retried maxRetries times.

// DefaultRetryBudget is the total backoff a step spends on an overloaded
// service before it gives up.
const DefaultRetryBudget = 2 * time.Minute

// stepRetries is one step's memory of its retries.
type stepRetries struct {
	markupRetried bool          // a reply's unparsable call markup was corrected
	outputLowered bool          // max_tokens was lowered after a refusal
	overloaded    int           // overload failures so far
	waited        time.Duration // backoff spent on overload failures
}

// retryPlan is what to do after a failed attempt.
type retryPlan struct {
	now   bool          // send req again at once (it was changed)
	wait  time.Duration // when retry: the backoff before sending again
	retry bool
	// overloaded is set when an overload used up the retry budget.
	overloaded bool
}

// planRetry decides how the step goes on after err. It may change *req
// (a correction appended, max_tokens lowered).
func (s *Session) planRetry(ctx context.Context, err error, attempt int, req **model.Request, st *stepRetries) retryPlan {
	if ctx.Err() != nil {
		return retryPlan{}
	}
	var mk *markupError
	if errors.As(err, &mk) && !st.markupRetried {
		st.markupRetried, *req = true, mk.retryRequest(*req)
		return retryPlan{now: true}
	}
	var me *model.Error
	if !errors.As(err, &me) {
		return retryPlan{}
	}
	if n := lowerOutput(me, (*req).MaxTokens); n > 0 && !st.outputLowered {
		again := **req
		again.MaxTokens = n
		st.outputLowered, *req = true, &again
		return retryPlan{now: true}
	}
	if !me.Retryable() {
		return retryPlan{}
	}
	if !isOverload(me) {
		if attempt >= maxRetries {
			return retryPlan{}
		}
		return retryPlan{retry: true, wait: s.rt.cfg.Backoff(attempt+1, me.RetryAfter)}
	}
	st.overloaded++
	wait := s.rt.cfg.Backoff(st.overloaded, me.RetryAfter)
	if st.waited+wait > s.rt.cfg.RetryBudget {
		return retryPlan{overloaded: true}
	}
	st.waited += wait
	return retryPlan{retry: true, wait: wait}
}

// isOverload reports a failure that says the service is busy: rate limited,
// overloaded, or a 503/529.
func isOverload(me *model.Error) bool {
	switch me.Class {
	case model.ClassRateLimit, model.ClassOverloaded:
		return true
	case model.ClassServer:
		return me.Status == 503 || me.Status == 529
	}
	return false
}

// overloadedMessage is the turn's error once the retry budget is spent.
func overloadedMessage(st *stepRetries, last string) string {
	return fmt.Sprintf("the model service is overloaded: %d attempts over %s were refused as busy; try again later (last answer: %s)",
		st.overloaded, st.waited.Round(time.Second), last)
}
