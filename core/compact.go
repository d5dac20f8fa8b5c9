package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/lazyre"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
)

// Compaction (ARCHITECTURE.md §4 "Context"): near the window, the same model
// writes a summary of the conversation as a continuation of the request it
// would have made next (same system prompt, tools and history, then a fixed
// instruction that forbids tool calls; no tool_choice, which DeepSeek's
// thinking mode does not support), so the summary call reads the cached
// prefix; the history from then on is the pinned context messages, the
// first task, the most recent user messages, the current turn's last tool
// round and the summary. The checkpoint event holds that history whole, so
// a resume starts from it and the system prompt and tools never change.

const (
	// DefaultCompactAt is the share of the window at which a session
	// compacts (the original's ratio).
	DefaultCompactAt = 0.8
	// DefaultContextWindow is the window of a model whose provider states
	// none.
	DefaultContextWindow = 128_000
	// recentUserTokens bounds the recent user messages a compaction keeps
	// (codex keeps 20k tokens of them).
	recentUserTokens = 20_000
	// overflowTries bounds the recoveries of one step from "context too
	// long": one compaction, then trims that halve what remains.
	overflowTries = 4
)

// summaryPrefix starts the summary message of a checkpoint.
const summaryPrefix = CompactedPrefix + "The conversation so far was summarised to fit the context window; " +
	"this summary replaces the earlier messages.\n\n"

// summaryInstruction is the fixed last message of a summary call.
const summaryInstruction = model.SummaryInstructionStart + ` It will replace the conversation: you will go on from this summary alone, with the first task and the most recent user messages, which are kept as they are. Do not call any tool, even if one seems useful: tools are not available for this reply. Answer with the summary only, in plain text, under these headings:

1. Task: what the user asked for. Quote every explicit instruction, constraint, preference and correction the user gave, word for word.
2. Current state: what is done, what is in progress (describe the unfinished work of the latest request precisely), what failed and why.
3. Files and changes: each file read, created or changed, with what matters about it.
4. Decisions and technical context: choices made and why; commands, APIs, error messages and their fixes.
5. Next steps: the exact next actions, in order.

If the conversation begins with an earlier summary, merge it in: carry over everything from it that still holds, so nothing is lost by summarising twice. dsh adds the todo list and the running background jobs after your summary itself.

Be complete but brief. Keep names, paths, identifiers and numbers exact.`

// ErrNothingToCompact answers a manual compaction of an empty session.
var ErrNothingToCompact = errors.New("the session has no conversation to compact yet")

// contextLimits are the token bounds of a session's requests.
type contextLimits struct {
	window    int64 // the model's context window
	limit     int64 // the most prompt tokens a request may carry
	threshold int64 // at or above it, the session compacts first
}

// limits computes the bounds for cfg: the contextWindow setting, else what
// the provider says of the model, lowered to what a provider's refusal
// revealed; the output cap (at most an eighth of the window) is reserved.
func (s *Session) limits(prov model.Provider, cfg event.Config) contextLimits {
	caps := prov.Caps(cfg.Model)
	w := s.rt.cfg.ContextWindow
	if w <= 0 {
		w = caps.ContextWindow
	}
	if w <= 0 {
		w = DefaultContextWindow
	}
	s.mu.Lock()
	if l := s.learnedWindow; l > 0 && l < w {
		w = l
	}
	s.mu.Unlock()
	out := int64(cfg.MaxTokens)
	if out <= 0 {
		out = int64(caps.DefaultMaxTokens)
	}
	limit := w - min(out, w/8)
	threshold := min(int64(float64(w)*s.rt.cfg.CompactAt), limit*9/10)
	return contextLimits{window: w, limit: limit, threshold: threshold}
}

// fixedBytes is what a request holds beyond the history: system prompt and
// tool list. Callers hold commitMu.
func (s *Session) fixedBytes() int64 {
	n := int64(len(s.header0))
	for _, t := range s.tools().specs {
		n += int64(len(t.Name)+len(t.Description)+len(t.Parameters)) + 48
	}
	return n
}

// ContextTokens is the session's estimate of its next request's prompt:
// the provider's count for the last step plus four bytes a token for what
// was added since.
func (s *Session) ContextTokens() int64 {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.conv.size.tokens(s.fixedBytes())
}

// fitContext runs before each step's model call: it compacts when the
// history passed the threshold, then drops the oldest items if it still
// does not fit. A non-nil turnEnd ends the turn (cancelled).
func (s *Session) fitContext(ctx context.Context, turn, step int, cfg event.Config, prov model.Provider) (*turnEnd, error) {
	lim := s.limits(prov, cfg)
	s.commitMu.Lock()
	s.capItems(lim)
	est := s.conv.size.tokens(s.fixedBytes())
	to := s.conv.compactedTo
	grown := to == 0 || est >= to+(lim.limit-to)/2
	n := len(s.conv.msgs)
	fresh := n > 0 && s.conv.msgs[n-1].Kind != model.KindSummary
	s.commitMu.Unlock()
	if est >= lim.threshold && grown && fresh {
		_, err := s.compact(ctx, compactJob{trigger: event.CompactAuto, turn: turn, step: step, cfg: cfg, prov: prov, lim: lim})
		if ctx.Err() != nil {
			return &turnEnd{abortedReason(ctx)}, nil
		}
		if err != nil && !isRecorded(err) {
			return nil, err
		}
	}
	return nil, s.trimTo(turn, lim.limit, lim.window, "the history is larger than the context window allows")
}

// capItems sets the most one message may send to half of what the window
// leaves beside the system prompt and tools. Callers hold commitMu.
func (s *Session) capItems(lim contextLimits) {
	room := lim.limit - s.fixedBytes()/bytesPerToken
	s.conv.setItemCap(int(max(room/2, 256) * bytesPerToken))
}

// trimTo drops the oldest droppable items until the estimate is at most
// target tokens, recording compaction/trim.
func (s *Session) trimTo(turn int, target, window int64, reason string) error {
	s.commitMu.Lock()
	fixed := s.fixedBytes()
	before := s.conv.size.tokens(fixed)
	n, freed := s.conv.trimUnits(target, fixed)
	s.commitMu.Unlock()
	if n == 0 {
		return nil
	}
	_, err := s.emit(event.TypeCompactionTrim, event.CompactionTrim{Turn: turn, Dropped: n, TokensBefore: before,
		TokensAfter: max(before-freed, 0), ContextWindow: window, Reason: reason})
	return err
}

// compactJob is one compaction's parameters.
type compactJob struct {
	trigger, focus string
	turn, step     int
	cfg            event.Config
	prov           model.Provider
	lim            contextLimits
}

// recordedErr is a compaction failure already recorded as
// compaction/failed: the session goes on with its history unchanged.
type recordedErr struct{ err error }

func (e *recordedErr) Error() string { return e.err.Error() }
func (e *recordedErr) Unwrap() error { return e.err }

func isRecorded(err error) bool {
	var r *recordedErr
	return errors.As(err, &r)
}

// compact makes a summary call and commits the checkpoint. A failed or
// cancelled summary call is recorded (compaction/failed) and leaves the
// history as it was; the error is then a *recordedErr. Any other error is a
// failure to record.
func (s *Session) compact(ctx context.Context, j compactJob) (*Compaction, error) {
	if len(s.ext.hooks) > 0 {
		o := s.runHooks(ctx, ext.PreCompact, hookTarget{match: j.trigger, fields: map[string]any{"trigger": j.trigger, "custom_instructions": j.focus}})
		if o.Block && j.trigger == event.CompactManual {
			return nil, fmt.Errorf("compaction %w: %s", ErrHookBlocked, o.Reason)
		}
		// An automatic compaction is not refused: the context must fit.
	}
	req, err := s.request(j.cfg, j.prov.Caps(j.cfg.Model))
	if err != nil {
		return nil, err
	}
	if err := s.recordContext(j.cfg, j.lim); err != nil {
		return nil, err
	}
	s.commitMu.Lock()
	fixed := s.fixedBytes()
	snap := conversation{msgs: append([]model.Message(nil), s.conv.msgs...), atts: cloneAtts(s.conv.atts), itemCap: s.conv.itemCap,
		dropped: s.conv.dropped, droppedReplies: s.conv.droppedReplies}
	before := s.conv.size.tokens(fixed)
	through := s.lg.NextSeq() - 1
	state := s.checkpointState()
	system := req.Messages[0].Content
	s.commitMu.Unlock()
	if _, err := s.emit(event.TypeCompactionStart, event.CompactionStart{Trigger: j.trigger, Focus: j.focus, Turn: j.turn,
		TokensBefore: before, ContextWindow: j.lim.window}); err != nil {
		return nil, err
	}

	summary, usage, err := s.summarise(ctx, j, snap, system, req)
	if err != nil {
		info := errorInfo(err)
		if ctx.Err() != nil {
			info = &event.ErrorInfo{Message: "the compaction was cancelled", Code: string(model.ClassAborted)}
			err = fmt.Errorf("compaction cancelled: %w", context.Canceled)
		}
		if _, cerr := s.emit(event.TypeCompactionFailed, event.CompactionFailed{Trigger: j.trigger, Turn: j.turn,
			Error: info, Usage: usage}); cerr != nil {
			return nil, cerr
		}
		s.rt.log.Warn("compaction failed; the history is unchanged", "session", s.id, "trigger", j.trigger, "err", err)
		return nil, &recordedErr{err}
	}
	summary += s.workingState()
	history := keptHistory(&snap, j.lim, summaryPrefix+summary)
	after := conversation{}
	after.restore(history)
	cp := event.CompactionCheckpoint{Trigger: j.trigger, Focus: j.focus, Turn: j.turn, Step: j.step, Summary: summary, History: history,
		ReplacedThroughSeq: through, ReplacedMessages: len(snap.msgs) - (len(history) - 1),
		TokensBefore: before, TokensAfter: after.size.tokens(fixed), ContextWindow: j.lim.window,
		Usage: usage, Provider: j.cfg.Provider, Model: j.cfg.Model, State: state}
	ev, err := s.emit(event.TypeCompactionCheckpoint, cp)
	if err != nil {
		return nil, err
	}
	return &Compaction{Seq: ev.Seq, CompactionCheckpoint: cp}, nil
}

// summarise asks the model for the summary, retrying what a step retries.
// If the history is too big for one request it summarises the newest part
// that fits (a note says the rest was dropped); a "context too long" answer
// halves that once more.
func (s *Session) summarise(ctx context.Context, j compactJob, snap conversation, system string, base *model.Request) (string, *event.Usage, error) {
	instr := model.Message{Role: "user", Content: summaryInstruction}
	if f := strings.TrimSpace(j.focus); f != "" {
		instr.Content += "\n\nFocus the summary on: " + f
	}
	limit := j.lim.limit - int64(len(instr.Content))/bytesPerToken
	s.commitMu.Lock()
	fixed := s.fixedBytes()
	s.commitMu.Unlock()
	halved, callsDropped := false, false
	lowered := 0 // max_tokens a refusal left room for
	var usage *event.Usage
	for attempt := 0; ; attempt++ {
		conv := conversation{msgs: append([]model.Message(nil), snap.msgs...), atts: cloneAtts(snap.atts), itemCap: snap.itemCap,
			dropped: snap.dropped, droppedReplies: snap.droppedReplies}
		conv.resize()
		n, _ := conv.trimUnits(limit, fixed)
		conv.trim(n)
		req := *base
		req.Messages = append(conv.build(s, system, j.prov.Caps(j.cfg.Model).Images), instr)
		req.Summary = true
		req.Attempt = attempt
		s.fitOutput(&req, j.cfg, j.prov, conv.size.tokens(fixed)+int64(len(instr.Content))/bytesPerToken, summaryMaxTokens)
		if lowered > 0 {
			req.MaxTokens = min(req.MaxTokens, lowered)
		}
		resp, err := j.prov.Stream(ctx, &req, nil)
		if err == nil && len(resp.ToolCalls) > 0 && !callsDropped {
			// Tools are in the request (for the cached prefix) but not
			// for this reply: drop the calls and ask once more.
			callsDropped = true
			continue
		}
		if err == nil {
			text := strings.TrimSpace(resp.Text)
			if text == "" {
				return "", resp.Usage, &model.Error{Class: model.ClassEmpty, Message: "the model wrote an empty summary"}
			}
			return text, resp.Usage, nil
		}
		var me *model.Error
		if errors.As(err, &me) {
			usage = me.Usage
		}
		if ctx.Err() != nil {
			return "", usage, err
		}
		if n := lowerOutput(me, req.MaxTokens); n > 0 && lowered == 0 {
			lowered = n
			continue
		}
		if errors.As(err, &me) && me.Class == model.ClassContextWindow && !halved {
			halved = true
			s.learnWindow(me.Message)
			limit = min(limit, conv.size.tokens(int64(len(system)))) / 2
			continue
		}
		if errors.As(err, &me) && me.Retryable() && attempt < maxRetries {
			select {
			case <-s.rt.cfg.After(s.rt.cfg.Backoff(attempt+1, me.RetryAfter)):
				continue
			case <-ctx.Done():
				return "", usage, ctx.Err()
			}
		}
		return "", usage, err
	}
}

// keptHistory is the history after a compaction: the context messages, the
// first task, the most recent user messages (bounded), the current turn's
// last tool round if small, and the summary last.
func keptHistory(c *conversation, lim contextLimits, summary string) []event.CheckpointMessage {
	userBudget := min(int64(recentUserTokens), lim.window/8) * bytesPerToken
	var out []event.CheckpointMessage
	keep := func(i int, kind string, content string) {
		m := c.msgs[i]
		cm := event.CheckpointMessage{Kind: kind, Role: m.Role, Content: content, Reasoning: m.Reasoning,
			ToolCallID: m.ToolCallID, Attachments: c.atts[i]}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, event.CheckpointToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		cm.ServerFields = checkpointServerFields(m.ServerFields)
		out = append(out, cm)
	}
	task := -1
	for i := range c.msgs {
		m := &c.msgs[i]
		if m.Kind == model.KindTask || (task < 0 && m.Role == "user" && m.Kind == "") {
			task = i
			break
		}
	}
	// Recent user messages, newest first within the budget.
	var recent []int
	used := int64(0)
	for i := len(c.msgs) - 1; i > task; i-- {
		m := &c.msgs[i]
		if m.Role != "user" || m.Kind != "" || m.Content == toolImagesIntro {
			continue
		}
		if used+int64(len(m.Content)) > userBudget {
			break
		}
		used += int64(len(m.Content))
		recent = append(recent, i)
	}
	// The current turn's last tool round: an assistant message with calls
	// and nothing but its results after it.
	work := -1
	for i := len(c.msgs) - 1; i >= 0; i-- {
		m := &c.msgs[i]
		if m.Role == "tool" {
			continue
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && i < len(c.msgs)-1 {
			size := int64(0)
			for k := i; k < len(c.msgs); k++ {
				size += msgBytes(&c.msgs[k])
			}
			if size <= lim.window/8*bytesPerToken && i > task && (len(recent) == 0 || i > recent[0]) {
				work = i
			}
		}
		break
	}
	for i := range c.msgs {
		if c.msgs[i].Kind == model.KindContext {
			keep(i, model.KindContext, c.msgs[i].Content)
		}
	}
	if task >= 0 {
		keep(task, model.KindTask, cutToFit(c.msgs[task].Content, int(userBudget/2)))
	}
	for k := len(recent) - 1; k >= 0; k-- {
		keep(recent[k], "", c.msgs[recent[k]].Content)
	}
	if work >= 0 {
		for k := work; k < len(c.msgs); k++ {
			keep(k, model.KindWork, c.msgs[k].Content)
		}
	}
	out = append(out, event.CheckpointMessage{Kind: model.KindSummary, Role: "user", Content: summary})
	return out
}

func cloneAtts(in map[int][]*event.Attachment) map[int][]*event.Attachment {
	if in == nil {
		return nil
	}
	out := make(map[int][]*event.Attachment, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// checkpointState is what a resume from a checkpoint needs from the events
// before it. Callers hold commitMu.
func (s *Session) checkpointState() *event.CheckpointState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &event.CheckpointState{Turn: s.turn, Titled: s.titled, PermissionMode: string(s.mode), System: s.header0}
	for _, t := range s.inbox {
		st.Unclaimed = append(st.Unclaimed, t.msg)
	}
	st.Environment = s.envFacts
	st.AdditionalDirectories = slices.Clone(s.dirs)
	cfg := s.cfg
	st.Config = &cfg
	if s.hdrSeen {
		h := s.lastHdr
		st.HeaderConfig = &h
		st.HeaderTools = append(json.RawMessage(nil), s.hdrTools...)
	}
	return st
}

// maxContextRE finds the real window in a provider's refusal ("This
// model's maximum context length is 65536 tokens").
var maxContextRE = lazyre.New(`(?i)maximum context length is (\d+)`)

// learnWindow lowers the session's window to what a refusal revealed.
func (s *Session) learnWindow(msg string) {
	m := maxContextRE().FindStringSubmatch(msg)
	if m == nil {
		return
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n <= 0 {
		return
	}
	s.mu.Lock()
	if s.learnedWindow == 0 || n < s.learnedWindow {
		s.learnedWindow = n
	}
	s.mu.Unlock()
}

// recordContext records request/context, the provider, model and window a
// request is sized for, when they differ from the last recorded (as the
// original does: once, then on a change), so every request's context is
// in the log.
func (s *Session) recordContext(cfg event.Config, lim contextLimits) error {
	rc := event.RequestContext{Provider: cfg.Provider, Model: cfg.Model, ContextWindow: lim.window}
	s.commitMu.Lock()
	same := s.lastReqCtx == rc
	s.commitMu.Unlock()
	if same {
		return nil
	}
	_, err := s.emit(event.TypeRequestContext, rc)
	return err
}

// recoverOverflow handles a "context too long" answer to a step's request:
// the first time it compacts, later it drops the oldest items to half of
// what remains (or to the window the refusal named). It reports whether
// the step should retry.
func (s *Session) recoverOverflow(ctx context.Context, try, turn, step int, cfg event.Config, prov model.Provider, me *model.Error) (bool, error) {
	if try >= overflowTries {
		return false, nil
	}
	s.learnWindow(me.Message)
	lim := s.limits(prov, cfg)
	s.commitMu.Lock()
	s.capItems(lim)
	s.commitMu.Unlock()
	if try == 0 {
		_, err := s.compact(ctx, compactJob{trigger: event.CompactOverflow, turn: turn, step: step, cfg: cfg, prov: prov, lim: lim})
		if ctx.Err() != nil {
			return false, nil
		}
		if err != nil && !isRecorded(err) {
			return false, err
		}
		if err == nil {
			return true, s.trimTo(turn, lim.limit, lim.window, "the compacted history is larger than the context window allows")
		}
	}
	s.commitMu.Lock()
	est := s.conv.size.tokens(s.fixedBytes())
	s.commitMu.Unlock()
	target := min(lim.limit, est/2)
	if err := s.trimTo(turn, target, lim.window, "the provider refused the request as longer than its context window"); err != nil {
		return false, err
	}
	return true, nil
}

// Compaction is a committed checkpoint and its seq in the log.
type Compaction struct {
	Seq int64
	event.CompactionCheckpoint
}

// Compact compacts the session now (the manual trigger: ACP /compact, SDK
// session/compact, dsh sessions compact), focusing the summary on focus if
// given. It returns once the checkpoint is committed. Cancel (or ctx)
// cancels it: the error then matches context.Canceled and the history is
// unchanged. A turn running in the session is waited for (bounded by ctx).
func (s *Session) Compact(ctx context.Context, focus string) (*Compaction, error) {
	cfg := s.Config()
	prov, err := s.rt.Provider(cfg.Provider)
	if err != nil {
		return nil, err
	}
	s.commitMu.Lock()
	empty := true
	for _, m := range s.conv.msgs {
		if m.Kind != model.KindContext {
			empty = false
			break
		}
	}
	s.commitMu.Unlock()
	if empty {
		return nil, ErrNothingToCompact
	}
	if err := s.claimIdle(ctx); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancelCause(ctx)
	s.cancel = cancel
	s.mu.Unlock()
	s.commitMu.Lock()
	turn := s.turn // read once idle: a turn that was ending has ended
	s.commitMu.Unlock()
	s.rt.publish(s, Notice{Kind: NoticeStatus, SessionID: s.id, Status: StatusRunning})
	defer func() {
		cancel(nil)
		// runTurns takes any prompt queued meanwhile, else goes idle.
		go s.runTurns()
	}()
	cp, err := s.compact(cctx, compactJob{trigger: event.CompactManual, focus: focus, turn: turn, cfg: cfg, prov: prov, lim: s.limits(prov, cfg)})
	if err != nil {
		var r *recordedErr
		if errors.As(err, &r) {
			return nil, r.err
		}
		return nil, err
	}
	return cp, nil
}

// claimIdle waits until no turn runs, then marks the session running for a
// compaction, with s.mu held on return. A turn that is just ending (its
// ticket answered, the session not yet idle) is waited for rather than
// answered busy, so a client's /compact straight after a prompt's answer
// works; ctx bounds the wait.
func (s *Session) claimIdle(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("session %s: %w", s.id, ErrClosed)
		}
		if !s.running {
			s.running, s.idle = true, make(chan struct{})
			return nil
		}
		idle := s.idle
		s.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// atCheckpoint folds a checkpoint into the session beyond its history: the
// first event of a resume from a checkpoint restores the state the events
// before it had built; a checkpoint committed live lets the events before
// it go, so memory follows the live context, not the session's age (the
// log keeps them; Transcript reads them back). Callers hold commitMu.
func (s *Session) atCheckpoint(ev event.Event, payload any) {
	if len(s.history) > 1 {
		s.history = append(make([]event.Event, 0, 256), ev)
		return
	}
	cp, err := payloadOf[event.CompactionCheckpoint](ev, payload)
	if err != nil || cp.State == nil {
		return
	}
	st := cp.State
	if st.Turn > s.turn {
		s.turn = st.Turn
	}
	if st.System != "" || st.HeaderConfig != nil {
		s.header0, s.hdrSeen = st.System, true
		if st.HeaderConfig != nil {
			s.lastHdr = *st.HeaderConfig
		}
		s.hdrTools = st.HeaderTools
	}
	s.mu.Lock()
	s.titled = s.titled || st.Titled
	if st.Config != nil {
		s.cfg = *st.Config
	}
	if st.PermissionMode != "" {
		s.mode = permission.Mode(st.PermissionMode)
	}
	s.dirs = slices.Clone(st.AdditionalDirectories)
	s.mu.Unlock()
}

// NextSeq is the seq the session's next event will have.
func (s *Session) NextSeq() int64 {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.lg.NextSeq()
}

// Transcript returns every committed event of the session from its first
// (Events holds those since the last checkpoint): the part before the
// checkpoint is read back from the log, without the live stream
// (store.ReadCommitted), so seqs can have gaps.
func (s *Session) Transcript() ([]event.Event, error) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	tail := append([]event.Event(nil), s.history...)
	if len(tail) == 0 || tail[0].Seq == 0 {
		return tail, nil
	}
	_, all, err := s.rt.cfg.Store.ReadCommitted(s.id)
	if err != nil {
		return nil, fmt.Errorf("session %s: read the transcript: %w", s.id, err)
	}
	first := tail[0].Seq
	if len(all) == 0 || all[len(all)-1].Seq < first-1 {
		return nil, fmt.Errorf("session %s: the log ends before seq %d, where its checkpoint is", s.id, first)
	}
	n := sort.Search(len(all), func(i int) bool { return all[i].Seq >= first })
	return append(all[:n:n], tail...), nil
}
