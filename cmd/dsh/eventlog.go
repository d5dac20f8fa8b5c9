package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// eventLogger turns committed events into diagnostics at --log-level info
// and debug: each model call (its tokens, cache hits and time), each failed
// attempt and its retry, each tool call's time and outcome, and each
// permission decision. It reads the same committed events every door
// projects, so the log says what the session recorded; it never sees the
// API key, which is in no event.
type eventLogger struct {
	log  *slog.Logger
	sub  *core.Subscription
	done chan struct{}

	// per session: when the current step started, when each call began
	steps map[string]time.Time
	calls map[string]time.Time
}

// logDrainGrace bounds how long a stopping event log reads what was
// committed before the stop.
const logDrainGrace = 2 * time.Second

// startEventLog subscribes a logger to rt when info logging is on; the
// returned stop ends it and waits for it. Below info it costs nothing.
func startEventLog(rt *core.Runtime, log *slog.Logger) (stop func()) {
	if !log.Enabled(context.Background(), slog.LevelInfo) {
		return func() {}
	}
	l := &eventLogger{log: log, sub: rt.Subscribe(), done: make(chan struct{}),
		steps: map[string]time.Time{}, calls: map[string]time.Time{}}
	go l.run()
	var once sync.Once
	return func() {
		once.Do(func() {
			// Log what the sessions committed before the stop, within a
			// bound: a turn that outlived the shutdown grace may still be
			// committing.
			l.sub.Drain()
			t := time.NewTimer(logDrainGrace)
			defer t.Stop()
			select {
			case <-l.done:
			case <-t.C:
			}
			l.sub.Close()
			<-l.done
		})
	}
}

func (l *eventLogger) run() {
	defer close(l.done)
	for {
		select {
		case n := <-l.sub.C():
			if n.Kind == core.NoticeEvent {
				l.event(n.SessionID, n.Event)
			}
		case <-l.sub.Done():
			// What was published before the close is still queued (the
			// last turn's end, typically): log it, then stop.
			for {
				select {
				case n := <-l.sub.C():
					if n.Kind == core.NoticeEvent {
						l.event(n.SessionID, n.Event)
					}
				default:
					return
				}
			}
		}
	}
}

func at(ms int64) time.Time { return time.UnixMilli(ms) }

func (l *eventLogger) event(sid string, ev event.Event) {
	switch ev.Type {
	case event.TypeStepStart:
		l.steps[sid] = at(ev.Time)
	case event.TypeRequestHeader:
		if d, err := event.Decode[event.RequestHeader](ev); err == nil {
			l.log.Debug("model request prefix", "session", sid, "reason", d.Reason, "provider", d.Header.Config.Provider,
				"model", d.Header.Config.Model, "systemBytes", len(d.Header.System), "toolsBytes", len(d.Header.Tools))
		}
	case event.TypeAssistantMessage:
		l.assistant(sid, ev)
	case event.TypeAssistantAttempt:
		if d, err := event.Decode[event.AssistantAttempt](ev); err == nil && d.Error != nil {
			args := []any{"session", sid, "step", d.Step, "attempt", d.Attempt, "code", d.Error.Code, "err", d.Error.Message}
			if d.RetryInMs != nil {
				args = append(args, "retryIn", time.Duration(*d.RetryInMs)*time.Millisecond)
			}
			l.log.Warn("model call failed", args...)
		}
	case event.TypeToolCall:
		if d, err := event.Decode[event.ToolCall](ev); err == nil {
			l.calls[sid+"\x00"+d.CallID] = at(ev.Time)
			l.log.Debug("tool call", "session", sid, "tool", d.Name, "call", d.CallID, "argBytes", len(d.Arguments))
		}
	case event.TypeToolResult:
		l.result(sid, ev)
	case event.TypePermissionDecision:
		if d, err := event.Decode[event.PermissionDecision](ev); err == nil {
			l.log.Info("permission", "session", sid, "tool", d.Tool, "decision", d.Decision, "by", d.By, "rule", d.Rule, "detail", d.Detail)
		}
	case event.TypeTurnEnd:
		if d, err := event.Decode[event.TurnEnd](ev); err == nil {
			l.log.Info("turn end", "session", sid, "turn", d.Turn, "reason", d.Reason.Kind)
		}
		delete(l.steps, sid)
	}
}

func (l *eventLogger) assistant(sid string, ev event.Event) {
	d, err := event.Decode[event.AssistantMessage](ev)
	if err != nil {
		return
	}
	args := []any{"session", sid, "turn", d.Turn, "step", d.Step, "finish", d.FinishReason}
	if start, ok := l.steps[sid]; ok {
		args = append(args, "took", at(ev.Time).Sub(start))
	}
	if u := d.Usage; u != nil {
		cached := int64(0)
		if u.CacheReadTokens != nil {
			cached = *u.CacheReadTokens
		}
		args = append(args, "promptTokens", u.InputTokens+cached, "cachedTokens", cached, "outputTokens", u.OutputTokens)
	}
	l.log.Info("model response", args...)
}

func (l *eventLogger) result(sid string, ev event.Event) {
	d, err := event.Decode[event.ToolResult](ev)
	if err != nil {
		return
	}
	b := d.Result()
	key := sid + "\x00" + b.ToolCallID
	args := []any{"session", sid, "call", b.ToolCallID, "error", b.IsError}
	if start, ok := l.calls[key]; ok {
		args = append(args, "took", at(ev.Time).Sub(start))
		delete(l.calls, key)
	}
	if d.Error != nil {
		args = append(args, "code", d.Error.Code)
	}
	l.log.Info("tool result", args...)
}
