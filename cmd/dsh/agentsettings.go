package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/dsh-dev/dsh/core"
)

// agentLimits are the settings of the agent loop's own checks: the repeat
// check's thresholds (loopWarnAt, loopStopAt) and how long a foreground
// bash call runs before it goes on as a job (bashYieldSeconds; 0 never).
type agentLimits struct {
	LoopWarnAt, LoopStopAt int
	BashYieldSeconds       int
	// RetryBudgetSeconds is how long a step keeps retrying an overloaded
	// model service (429, 503) before the turn says so.
	RetryBudgetSeconds int
}

// bashYield is the setting as core takes it (negative: never).
func (a agentLimits) bashYield() time.Duration {
	if a.BashYieldSeconds == 0 {
		return -1
	}
	return time.Duration(a.BashYieldSeconds) * time.Second
}

// resolveAgentLimits picks the loop settings from the environment, the
// config file or the defaults, and checks them together.
func resolveAgentLimits(r *resolver, fc fileConfig) (agentLimits, error) {
	var a agentLimits
	var err error
	if a.LoopWarnAt, err = r.pickInt("loopWarnAt", fromEnv("DSH_LOOP_WARN_AT"), fromFile(optInt(fc.LoopWarnAt)),
		byDefault(strconv.Itoa(core.DefaultLoopWarnAt))); err != nil {
		return a, err
	}
	if a.LoopStopAt, err = r.pickInt("loopStopAt", fromEnv("DSH_LOOP_STOP_AT"), fromFile(optInt(fc.LoopStopAt)),
		byDefault(strconv.Itoa(core.DefaultLoopStopAt))); err != nil {
		return a, err
	}
	if a.LoopWarnAt < 1 || a.LoopStopAt <= a.LoopWarnAt {
		return a, fmt.Errorf("loop thresholds: loopWarnAt (%d, from %s) must be at least 1 and below loopStopAt (%d, from %s)",
			a.LoopWarnAt, r.sources["loopWarnAt"], a.LoopStopAt, r.sources["loopStopAt"])
	}
	if a.BashYieldSeconds, err = r.pickInt("bashYieldSeconds", fromEnv("DSH_BASH_YIELD_SECONDS"), fromFile(optInt(fc.BashYieldSeconds)),
		byDefault(strconv.Itoa(int(core.DefaultBashYield/time.Second)))); err != nil {
		return a, err
	}
	if a.BashYieldSeconds < 0 {
		return a, fmt.Errorf("bashYieldSeconds must be 0 (never) or more, got %d from %s", a.BashYieldSeconds, r.sources["bashYieldSeconds"])
	}
	if a.RetryBudgetSeconds, err = r.pickInt("retryBudgetSeconds", fromEnv("DSH_RETRY_BUDGET_SECONDS"), fromFile(optInt(fc.RetryBudgetSeconds)),
		byDefault(strconv.Itoa(int(core.DefaultRetryBudget/time.Second)))); err != nil {
		return a, err
	}
	if a.RetryBudgetSeconds < 1 {
		return a, fmt.Errorf("retryBudgetSeconds must be at least 1, got %d from %s", a.RetryBudgetSeconds, r.sources["retryBudgetSeconds"])
	}
	return a, nil
}

// rows are the settings as dsh info shows them.
func (a agentLimits) rows(values map[string]string) {
	values["loopWarnAt"] = strconv.Itoa(a.LoopWarnAt)
	values["loopStopAt"] = strconv.Itoa(a.LoopStopAt)
	values["bashYieldSeconds"] = strconv.Itoa(a.BashYieldSeconds)
	values["retryBudgetSeconds"] = strconv.Itoa(a.RetryBudgetSeconds)
}

// retryBudget is the setting as core takes it.
func (a agentLimits) retryBudget() time.Duration {
	return time.Duration(a.RetryBudgetSeconds) * time.Second
}
