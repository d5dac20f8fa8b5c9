package core

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/tool"
)

// maxStopBlocks bounds how often Stop hooks may keep one turn going.
const maxStopBlocks = 3

// hookTarget is what a hook's matcher is compared with, and the event's
// own fields for its stdin.
type hookTarget struct {
	match  string
	callID string
	fields map[string]any
}

// runHooks runs the session's hooks of an event that match, one after
// the other, and merges their outcomes: the first block wins, contexts
// and messages are joined; of PreToolUse answers, ask wins over allow
// (Claude Code's deny > ask > allow), and a hook's updatedInput is the
// tool_input the next hook sees and the last one stands. Each run is
// recorded (hook/run); a hook that fails is reported there and in the
// log, and blocks nothing.
func (s *Session) runHooks(ctx context.Context, ev string, tgt hookTarget) ext.HookOutcome {
	var merged ext.HookOutcome
	for _, h := range s.ext.hooks {
		if h.Event != ev || !h.Matches(tgt.match) {
			continue
		}
		o := s.runHook(ctx, h, tgt)
		if o.Block && !merged.Block {
			merged.Block, merged.Reason = true, o.Reason
		}
		if o.Decision == ext.DecisionAsk || o.Decision == ext.DecisionAllow && merged.Decision == "" {
			merged.Decision, merged.DecisionReason = o.Decision, o.DecisionReason
		}
		if o.UpdatedInput != nil {
			merged.UpdatedInput = o.UpdatedInput
			tgt.fields = maps.Clone(tgt.fields)
			tgt.fields["tool_input"] = o.UpdatedInput
		}
		merged.Context = joinNonEmpty(merged.Context, o.Context)
		merged.Message = joinNonEmpty(merged.Message, o.Message)
		if ctx.Err() != nil {
			break
		}
	}
	return merged
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// runHook runs one hook: the event as JSON on stdin (Claude Code's
// fields), in the project folder, under the sandbox of the session's
// permission mode, bounded in time and output.
func (s *Session) runHook(ctx context.Context, h ext.Hook, tgt hookTarget) ext.HookOutcome {
	in := map[string]any{
		"session_id": s.id, "transcript_path": filepath.Join(s.lg.Dir(), "session.jsonl"), "cwd": s.header.Cwd,
		"permission_mode": string(s.Mode()), "hook_event_name": h.Event,
	}
	for k, v := range tgt.fields {
		in[k] = v
	}
	project := s.projectDir()
	env := s.toolEnv(0, tgt.callID, noCaps)
	environ := append(tool.ScrubEnv(os.Environ()), "CLAUDE_PROJECT_DIR="+project, "DSH_PROJECT_DIR="+project, "DSH_SESSION_ID="+s.id)
	start := time.Now()
	res, err := tool.RunHook(ctx, s.rt.cfg.Exec, tool.HookRequest{Command: h.Command, Workdir: project, Env: environ,
		Stdin: mustJSON(in), Timeout: h.Timeout, Limit: ext.MaxHookOutput, Scope: tool.CommandScope(env)})
	var o ext.HookOutcome
	switch {
	case err != nil:
		o = ext.HookOutcome{Failed: true, Message: "hook could not run: " + err.Error()}
	case res.TimedOut:
		o = ext.HookOutcome{Failed: true, Message: fmt.Sprintf("hook did not finish within %s and was stopped", h.Timeout)}
	default:
		o = ext.Interpret(h.Event, res.ExitCode, res.Stdout, res.Stderr)
		if res.Cut {
			o.Message = joinNonEmpty(o.Message, fmt.Sprintf("hook output beyond %d bytes was dropped", ext.MaxHookOutput))
		}
	}
	rec := event.HookRun{Event: h.Event, CallID: tgt.callID, Command: h.Command, Source: h.Source, ExitCode: res.ExitCode,
		Outcome: event.HookOK, Message: o.Message, DurationMs: time.Since(start).Milliseconds(),
		Decision: o.Decision, UpdatedInput: o.UpdatedInput}
	switch {
	case o.Failed:
		rec.Outcome = event.HookFailed
		s.rt.log.Warn("hook failed", "session", s.id, "event", h.Event, "command", h.Command, "source", h.Source, "problem", o.Message)
	case o.Block:
		rec.Outcome, rec.Message = event.HookBlocked, o.Reason
	}
	if err := s.Record(event.New(event.TypeHookRun, rec)); err != nil {
		s.rt.log.Debug("hook run not recorded", "session", s.id, "err", err)
	}
	return o
}

// projectDir is the repository root of the session's cwd, else the cwd
// (CLAUDE_PROJECT_DIR, and where hooks run).
func (s *Session) projectDir() string {
	if root := gitRoot(s.header.Cwd); root != "" {
		return root
	}
	return s.header.Cwd
}

// promptHooks runs SessionStart (on the first prompt this process takes
// for the session) and UserPromptSubmit for a person's prompt, and
// returns the content with the context they added. A subagent child's
// prompts come from its parent, not a person: no hooks.
func (s *Session) promptHooks(ctx context.Context, content []event.ContentBlock) ([]event.ContentBlock, error) {
	if s.isChild() || len(s.ext.hooks) == 0 {
		return content, nil
	}
	var extra []string
	s.mu.Lock()
	first := !s.started
	s.started = true
	s.mu.Unlock()
	if first {
		source := "startup"
		if s.resumed {
			source = "resume"
		}
		cfg := s.Config()
		o := s.runHooks(ctx, ext.SessionStart, hookTarget{match: source, fields: map[string]any{"source": source, "model": cfg.Model}})
		extra = append(extra, o.Context)
	}
	o := s.runHooks(ctx, ext.UserPromptSubmit, hookTarget{fields: map[string]any{"prompt": event.JoinText(content)}})
	if o.Block {
		return nil, fmt.Errorf("%w: %s", ErrHookBlocked, o.Reason)
	}
	extra = append(extra, o.Context)
	var b strings.Builder
	for _, e := range extra {
		if e = strings.TrimSpace(e); e != "" {
			b.WriteString("\n\n<hook-context>\n" + e + "\n</hook-context>")
		}
	}
	if b.Len() == 0 {
		return content, nil
	}
	return append(append([]event.ContentBlock(nil), content...), event.Text(b.String())), nil
}

// preToolHooks runs PreToolUse: a block refuses the call, its reason
// going to the model; an allow or ask answers for the permission gate; an
// updatedInput replaces the call's arguments.
func (s *Session) preToolHooks(ctx context.Context, name, callID string, args json.RawMessage) ext.HookOutcome {
	if len(s.ext.hooks) == 0 {
		return ext.HookOutcome{}
	}
	return s.runHooks(ctx, ext.PreToolUse, hookTarget{match: name, callID: callID, fields: map[string]any{
		"tool_name": ext.ClaudeToolName(name), "dsh_tool_name": name, "tool_input": args, "tool_use_id": callID}})
}

// postToolHooks runs PostToolUse after a call that succeeded; what the
// hooks say for the model is returned to append to the result.
func (s *Session) postToolHooks(ctx context.Context, name, callID string, args json.RawMessage, res tool.Result, took time.Duration) string {
	if len(s.ext.hooks) == 0 {
		return ""
	}
	o := s.runHooks(ctx, ext.PostToolUse, hookTarget{match: name, callID: callID, fields: map[string]any{
		"tool_name": ext.ClaudeToolName(name), "dsh_tool_name": name, "tool_input": args, "tool_use_id": callID,
		"tool_response": event.JoinText(res.Content), "duration_ms": took.Milliseconds()}})
	return o.Context
}

// stopHooks runs Stop when a turn would complete; a block keeps the turn
// going with the reason as the next user-role message (at most
// maxStopBlocks times a turn).
func (s *Session) stopHooks(ctx context.Context, turn int, blocks *int) (bool, error) {
	if len(s.ext.hooks) == 0 || s.isChild() || ctx.Err() != nil {
		return false, nil
	}
	s.commitMu.Lock()
	last := turnText(s.history, turn)
	s.commitMu.Unlock()
	o := s.runHooks(ctx, ext.Stop, hookTarget{fields: map[string]any{"stop_hook_active": *blocks > 0, "last_assistant_message": last}})
	if !o.Block || *blocks >= maxStopBlocks {
		return false, nil
	}
	*blocks++
	msg := event.Message{ID: uuid.NewString(), Role: "user", Source: event.Source{Kind: "hook"},
		Content: []event.ContentBlock{event.Text("A Stop hook asks you to continue: " + o.Reason)}}
	_, err := s.emit(event.TypeUserMessage, msg)
	return err == nil, err
}
