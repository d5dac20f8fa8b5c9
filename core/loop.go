package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/tool"
)

// Causes of a cancelled turn; they become the turn/end reason.kind.
var (
	errCancelledByUser = errors.New("cancelled by user")
	errDisposed        = errors.New("session disposed")
	// ErrCancelledByParent cancels a child session's turn because its
	// parent's turn was cancelled.
	ErrCancelledByParent = errors.New("cancelled by the parent session")
)

const (
	maxRetries  = 5
	maxParallel = 10
)

// runTurns drains the inbox, one turn at a time, then goes idle.
func (s *Session) runTurns() {
	for {
		s.commitMu.Lock()
		s.mu.Lock()
		if len(s.inbox) == 0 {
			s.running = false
			s.cancel = nil
			close(s.idle)
			s.mu.Unlock()
			s.rt.publish(s, Notice{Kind: NoticeStatus, SessionID: s.id, Status: StatusIdle})
			s.commitMu.Unlock()
			return
		}
		n := claimable(s.inbox)
		claimed := s.inbox[:n:n]
		s.inbox = append([]*Ticket(nil), s.inbox[n:]...)
		ctx, cancel := context.WithCancelCause(context.Background())
		s.cancel = cancel
		s.mu.Unlock()
		s.commitMu.Unlock()

		res := s.runTurn(ctx, claimed)
		cancel(nil)
		for _, t := range claimed {
			t.result = res
			close(t.done)
		}
	}
}

// turnEnd is how a step asks the turn to stop.
type turnEnd struct{ reason event.TurnEndReason }

func (s *Session) runTurn(ctx context.Context, claimed []*Ticket) TurnResult {
	s.commitMu.Lock()
	turn := s.turn + 1
	s.commitMu.Unlock()
	res := TurnResult{Turn: turn, Seq: -1}

	fail := func(err error) TurnResult {
		s.rt.log.Error("turn failed", "session", s.id, "turn", turn, "err", err)
		res.Reason = event.TurnEndReason{Kind: event.ReasonError, Error: &event.ErrorInfo{Message: err.Error(), Code: "INTERNAL"}}
		if ev, cerr := s.emit(event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: res.Reason}); cerr == nil {
			res.Seq = ev.Seq
		}
		return res
	}

	s.refreshTools() // MCP tools change at turn boundaries only
	start := event.TurnStart{Turn: turn, Command: claimed[0].msg.Command}
	if start.Command != nil {
		start.Model = start.Command.Model
	}
	s.setTurnCommand(start.Command)
	defer s.setTurnCommand(nil)
	if _, err := s.emit(event.TypeTurnStart, start); err != nil {
		return fail(err)
	}
	n := len(claimed)
	if _, err := s.emit(event.TypeInboxSpliced, event.InboxSpliced{
		Target: "next-turn", Start: 0, RemovedCount: &n, Inserted: []event.Message{}}); err != nil {
		return fail(err)
	}
	s.fileCheckpoint(ctx, turn, event.PhaseStart)
	gitDir, gitBefore := s.gitSnapshot()
	defer s.warnGitChanges(turn, gitDir, gitBefore)
	if _, err := s.emit(event.TypeStepStart, event.Step{Turn: turn, Step: 1}); err != nil {
		return fail(err)
	}
	if err := s.sendContext(ctx, turn); err != nil {
		return fail(err)
	}
	var firstSeq int64
	for i, t := range claimed {
		ev, err := s.emit(event.TypeUserMessage, t.msg)
		if err != nil {
			return fail(err)
		}
		if i == 0 {
			firstSeq = ev.Seq
		}
	}
	s.mu.Lock()
	titled := s.titled
	s.mu.Unlock()
	if !titled {
		if _, err := s.emit(event.TypeSessionTitle, event.SessionTitle{Title: titleOf(claimed[0].msg.Content),
			MessageSeqs: []int64{firstSeq}, Source: &event.KindOnly{Kind: event.TitleFallback}}); err != nil {
			return fail(err)
		}
	}

	loop := loopDetector{warnAt: s.rt.cfg.LoopWarnAt, stopAt: s.rt.cfg.LoopStopAt}
	var end *turnEnd
	stopBlocks := 0
	for step := 1; ; step++ {
		if step > 1 {
			if _, err := s.emit(event.TypeStepStart, event.Step{Turn: turn, Step: step}); err != nil {
				return fail(err)
			}
		}
		var err error
		end, err = s.runStep(ctx, turn, step, &loop)
		if err != nil {
			return fail(err)
		}
		if _, err := s.emit(event.TypeStepEnd, event.Step{Turn: turn, Step: step}); err != nil {
			return fail(err)
		}
		if end == nil && step >= s.rt.cfg.StepCap {
			end = &turnEnd{event.TurnEndReason{Kind: event.ReasonBlocked,
				Detail: fmt.Sprintf("step cap: the turn used its %d steps", s.rt.cfg.StepCap)}}
		}
		if end != nil && end.reason.Kind == event.ReasonCompleted && step < s.rt.cfg.StepCap {
			again, err := s.stopHooks(ctx, turn, &stopBlocks)
			if err != nil {
				return fail(err)
			}
			if again {
				end = nil
				continue
			}
		}
		if end != nil {
			break
		}
	}
	res.Reason = end.reason
	s.fileCheckpoint(ctx, turn, event.PhaseEnd)
	ev, err := s.emit(event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: end.reason})
	if err != nil {
		s.rt.log.Error("turn end not recorded", "session", s.id, "turn", turn, "err", err)
		return res
	}
	res.Seq = ev.Seq
	s.commitMu.Lock()
	res.Text = turnText(s.history, turn)
	s.commitMu.Unlock()
	return res
}

func abortedReason(ctx context.Context) event.TurnEndReason {
	kind := "user"
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errDisposed):
		kind = "disposed"
	case errors.Is(cause, ErrCancelledByParent):
		kind = "parent"
	}
	return event.TurnEndReason{Kind: event.ReasonAborted, Reason: &event.KindOnly{Kind: kind}}
}

// request builds the model request of a step, recording request/header when
// the stable prefix (system prompt, tools, config) is first used or changes.
func (s *Session) request(cfg event.Config, caps model.Caps) (*model.Request, error) {
	ts := s.tools()
	s.commitMu.Lock()
	system, seen, last, lastTools := s.header0, s.hdrSeen, s.lastHdr, s.hdrTools
	s.commitMu.Unlock()
	if !seen || last != cfg || !bytes.Equal(lastTools, ts.json) {
		// The recorded prompt is kept unless the model changed: a resumed
		// session sends the bytes it always sent, even under a newer dsh.
		if !seen || last.Model != cfg.Model {
			system = s.systemPrompt(cfg)
		}
		h := event.RequestHeader{Reason: "initial"}
		if seen {
			h.Reason = "change"
		}
		h.Header.Config, h.Header.AdapterDefaults = effectiveConfig(cfg, caps)
		h.Header.System = system
		h.Header.Tools = ts.json
		if _, err := s.emit(event.TypeRequestHeader, h); err != nil {
			return nil, err
		}
	}
	s.commitMu.Lock()
	msgs := s.conv.build(s, system, caps.Images)
	s.commitMu.Unlock()
	req := &model.Request{
		Model:           cfg.Model,
		Messages:        msgs,
		Tools:           ts.specs,
		MaxTokens:       cfg.MaxTokens,
		ReasoningEffort: cfg.ReasoningEffort,
	}
	return req, nil
}

// effectiveConfig is cfg as the provider runs it: the reasoning effort and
// output cap the session leaves to the provider filled in with its
// defaults, flagged as such (the original's request/header records both).
func effectiveConfig(cfg event.Config, caps model.Caps) (event.Config, *event.AdapterDefaults) {
	var d event.AdapterDefaults
	if cfg.ReasoningEffort == "" && caps.DefaultEffort != "" {
		cfg.ReasoningEffort, d.ReasoningEffort = caps.DefaultEffort, true
	}
	if cfg.MaxTokens == 0 && caps.DefaultMaxTokens > 0 {
		cfg.MaxTokens, d.MaxTokens = caps.DefaultMaxTokens, true
	}
	if d == (event.AdapterDefaults{}) {
		return cfg, nil
	}
	return cfg, &d
}

// runStep makes one model call (with retries) and runs the tools it asked
// for. A non-nil turnEnd ends the turn; an error is a failure to record.
func (s *Session) runStep(ctx context.Context, turn, step int, loop *loopDetector) (*turnEnd, error) {
	cfg := s.turnConfig()
	prov, err := s.rt.Provider(cfg.Provider)
	if err != nil {
		return &turnEnd{event.TurnEndReason{Kind: event.ReasonError, Error: errorInfo(err)}}, nil
	}
	if end, err := s.fitContext(ctx, turn, step, cfg, prov); end != nil || err != nil {
		return end, err
	}
	req, err := s.request(cfg, prov.Caps(cfg.Model))
	if err != nil {
		return nil, err
	}
	if err := s.recordContext(cfg, s.limits(prov, cfg)); err != nil {
		return nil, err
	}
	s.fitOutput(req, cfg, prov, s.promptEstimate(), 0)
	s.mu.Lock()
	onDelta := s.onDelta
	s.mu.Unlock()
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}
	chunks := s.newChunkStream(turn, step, onDelta)

	resp, end, err := s.streamStep(ctx, turn, step, cfg, prov, req, chunks)
	if end != nil || err != nil {
		return end, err
	}
	calls, callSeqs, err := s.commitStep(turn, step, cfg, prov, resp, chunks)
	if err != nil {
		return nil, err
	}
	return s.finishStep(ctx, turn, step, cfg, prov, resp, calls, callSeqs, loop)
}

// streamStep makes the step's model call, retrying what may be retried
// (and compacting once when the provider says the request is too long).
// Each failed attempt leaves an assistant/attempt; a non-nil turnEnd ends
// the turn.
func (s *Session) streamStep(ctx context.Context, turn, step int, cfg event.Config, prov model.Provider, req *model.Request, chunks *chunkStream) (*model.Response, *turnEnd, error) {
	overflows := 0
	var retries stepRetries
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return nil, &turnEnd{abortedReason(ctx)}, nil
		}
		req.Attempt = attempt
		chunks.reset()
		resp, err := prov.Stream(ctx, req, chunks.delta)
		if err == nil {
			err = emptyReply(resp) // retried like any retryable failure
		}
		if err == nil {
			err = recoverTextCalls(resp)
		}
		if err == nil {
			return resp, nil, nil
		}
		info := errorInfo(err)
		if ctx.Err() != nil {
			info = &event.ErrorInfo{Message: "the request was cancelled", Code: string(model.ClassAborted)}
		}
		if cerr := chunks.fail(info, ctx.Err() != nil); cerr != nil {
			return nil, nil, cerr
		}
		att := event.AssistantAttempt{Turn: turn, Step: step, Attempt: attempt, Error: info}
		var failed *model.Error
		if errors.As(err, &failed) {
			att.Usage = failed.Usage
		}
		plan := s.planRetry(ctx, err, attempt, &req, &retries)
		if plan.retry || plan.now {
			ms := plan.wait.Milliseconds()
			att.RetryInMs = &ms
		}
		if plan.overloaded {
			info.Message = overloadedMessage(&retries, info.Message)
		}
		if _, cerr := s.emit(event.TypeAssistantAttempt, att); cerr != nil {
			return nil, nil, cerr
		}
		if ctx.Err() != nil {
			return nil, &turnEnd{abortedReason(ctx)}, nil
		}
		if plan.now {
			continue
		}
		var me *model.Error
		if errors.As(err, &me) && me.Class == model.ClassContextWindow {
			again, rerr := s.recoverOverflow(ctx, overflows, turn, step, cfg, prov, me)
			overflows++
			if rerr != nil {
				return nil, nil, rerr
			}
			if ctx.Err() != nil {
				return nil, &turnEnd{abortedReason(ctx)}, nil
			}
			if again {
				if req, err = s.request(cfg, prov.Caps(cfg.Model)); err != nil {
					return nil, nil, err
				}
				if err := s.recordContext(cfg, s.limits(prov, cfg)); err != nil {
					return nil, nil, err
				}
				s.fitOutput(req, cfg, prov, s.promptEstimate(), 0)
				continue
			}
		}
		if plan.retry {
			select {
			case <-s.rt.cfg.After(plan.wait):
				continue
			case <-ctx.Done():
				return nil, &turnEnd{abortedReason(ctx)}, nil
			}
		}
		return nil, &turnEnd{event.TurnEndReason{Kind: event.ReasonError, Error: info}}, nil
	}
}

// commitStep commits the model's message and the calls it made, with
// each call's facts, in one write; it returns the calls (every one with
// an id) and the seq of each call's tool/call event.
func (s *Session) commitStep(turn, step int, cfg event.Config, prov model.Provider, resp *model.Response, chunks *chunkStream) ([]model.ToolCall, map[string]int64, error) {
	// Commit the model's message exactly as it streamed.
	var content []event.ContentBlock
	if resp.Reasoning != "" {
		content = append(content, event.Reasoning(resp.Reasoning))
	}
	if resp.Text != "" {
		content = append(content, event.Text(resp.Text))
	}
	calls := resp.ToolCalls
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = "call_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		}
		content = append(content, event.ContentBlock{Type: event.BlockToolCall, ID: calls[i].ID, Name: calls[i].Name, Arguments: calls[i].Arguments})
	}
	if content == nil {
		content = []event.ContentBlock{}
	}
	srcSeqs, err := chunks.complete(resp, calls)
	if err != nil {
		return nil, nil, err
	}
	msgID := uuid.NewString()
	server, webEvs, webPayloads := serverBlocks(turn, step, msgID, resp.ServerFields)
	content = append(content, server...)
	am := event.AssistantMessage{Turn: turn, Step: step, Usage: resp.Usage, FinishReason: resp.FinishReason,
		Message: event.Message{ID: msgID, Role: "assistant", Content: content,
			Source: event.Source{Kind: "model", Provider: cfg.Provider, Model: cfg.Model}}}
	am.Cost = s.rt.priceCall(cfg.Model, resp.Usage)
	amEv := event.New(event.TypeAssistantMessage, am)
	amEv.SourceEventSeqs = srcSeqs
	// The message and the calls it made are one write: a crash between
	// them would leave calls that repair answers but no tool/call names.
	evs, payloads := []event.Event{amEv}, []any{am}
	caps := prov.Caps(cfg.Model)
	for _, c := range calls {
		tc := event.ToolCall{Turn: turn, Step: step, CallID: c.ID, Name: c.Name, Arguments: c.Arguments, FromText: c.FromText}
		if t, repaired := s.resolveTool(c.Name); repaired {
			tc.RepairedName = t.Name()
		}
		facts := s.callFacts(c.Name, c.Arguments, s.toolEnv(turn, c.ID, caps))
		tc.Facts = &facts
		evs, payloads = append(evs, event.New(event.TypeToolCall, tc)), append(payloads, tc)
	}
	// The web searches the server ran, after the model's own calls.
	evs, payloads = append(evs, webEvs...), append(payloads, webPayloads...)
	committed, err := s.commitAll(evs, payloads)
	if err != nil {
		return nil, nil, err
	}
	callSeqs := make(map[string]int64, len(calls))
	for i, c := range calls {
		callSeqs[c.ID] = committed[i+1].Seq
	}
	return calls, callSeqs, nil
}

// finishStep runs the calls of a committed message (or records why they
// do not run) and says whether the turn ends here.
func (s *Session) finishStep(ctx context.Context, turn, step int, cfg event.Config, prov model.Provider, resp *model.Response, calls []model.ToolCall, callSeqs map[string]int64, loop *loopDetector) (*turnEnd, error) {
	var end *turnEnd
	switch resp.FinishReason {
	case "length":
		end = &turnEnd{event.TurnEndReason{Kind: event.ReasonMaxTokens}}
	case "content_filter":
		end = &turnEnd{event.TurnEndReason{Kind: event.ReasonRefusal}}
	}
	if len(calls) == 0 {
		if end == nil {
			end = &turnEnd{event.TurnEndReason{Kind: event.ReasonCompleted}}
		}
		return end, nil
	}
	if end != nil && resp.FinishReason == "length" && !loop.cutRecovered {
		// Cut off by the output cap inside the last call: run the complete
		// ones, tell the model the cut one did not run, and go on once.
		loop.cutRecovered = true
		last := calls[len(calls)-1]
		if err := s.runTools(ctx, turn, step, calls[:len(calls)-1], callSeqs, cfg, prov, loop); err != nil {
			return nil, err
		}
		eff, _ := effectiveConfig(cfg, prov.Caps(cfg.Model))
		cut := outcome{res: cutOffResult(eff.MaxTokens), code: event.ToolAbortedBeforeDispatch}
		if err := s.commitResult(turn, step, last, cut, callSeqs[last.ID]); err != nil {
			return nil, err
		}
		end = nil
	} else if end != nil {
		// Cut again, or refused: its calls may be truncated. Never run them.
		for _, c := range calls {
			r := outcome{res: tool.ErrorResult("not run: the response was cut off before the call was complete"), code: event.ToolAbortedBeforeDispatch}
			if err := s.commitResult(turn, step, c, r, callSeqs[c.ID]); err != nil {
				return nil, err
			}
		}
		return end, nil
	} else if err := s.runTools(ctx, turn, step, calls, callSeqs, cfg, prov, loop); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return &turnEnd{abortedReason(ctx)}, nil
	}
	if why := loop.endStep(); why != "" {
		return &turnEnd{event.TurnEndReason{Kind: event.ReasonBlocked, Detail: why}}, nil
	}
	return nil, nil
}

// outcome is one call's result before it is recorded.
type outcome struct {
	res  tool.Result
	code string // error code for the tool/result error field, "" if none
	// instr are the nested instruction files appended to res.
	instr []event.InstructionFile
	// took is how long the call ran (0 for one decided without running).
	took time.Duration
}

// prepared is a call that passed validation and the gate.
type prepared struct {
	call model.ToolCall
	t    tool.Tool
	// repaired: call.Name was not t's name but differed only by case or
	// '-'/'_' (the result says so).
	repaired bool
	args     json.RawMessage
	out      *outcome // set when the call is decided without running
	// paths are the files and folders a file tool touches (its Inspect's),
	// for the nested instructions that apply to them.
	paths []string
}

func (s *Session) runTools(ctx context.Context, turn, step int, calls []model.ToolCall, callSeqs map[string]int64, cfg event.Config, prov model.Provider, loop *loopDetector) error {
	caps := prov.Caps(cfg.Model)
	for i := 0; i < len(calls); {
		// A batch is one call, or a run of parallel-safe calls.
		j := i + 1
		if t, _ := s.resolveTool(calls[i].Name); t != nil && t.ParallelSafe() {
			for j < len(calls) && j-i < maxParallel {
				if t2, _ := s.resolveTool(calls[j].Name); t2 == nil || !t2.ParallelSafe() {
					break
				}
				j++
			}
		}
		batch := make([]prepared, 0, j-i)
		for _, c := range calls[i:j] {
			batch = append(batch, s.prepare(ctx, turn, c, caps))
		}
		var wg sync.WaitGroup
		for k := range batch {
			if batch[k].out != nil {
				continue
			}
			wg.Add(1)
			go func(p *prepared) {
				defer wg.Done()
				o := s.execute(ctx, turn, p, caps)
				p.out = &o
			}(&batch[k])
		}
		wg.Wait()
		for _, p := range batch {
			name := p.call.Name
			if p.t != nil {
				name = p.t.Name()
			}
			if p.repaired {
				p.out.res.Content = append([]event.ContentBlock{repairNote(p.call.Name, name)}, p.out.res.Content...)
			}
			loop.observe(name, p.call, p.out)
			if err := s.commitResult(turn, step, p.call, *p.out, callSeqs[p.call.ID]); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

func (s *Session) toolEnv(turn int, callID string, caps model.Caps) *tool.Env {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &tool.Env{SessionID: s.id, CallID: callID, Turn: turn, Cwd: s.header.Cwd, Files: s.files, Exec: s.exec,
		Reads: s.reads, Record: s.Record, ModelImages: caps.Images, SaveAttachment: s.SaveAttachment, Spill: s.spill, Jobs: s.jobs, BashYield: s.rt.cfg.BashYield,
		PermissionMode: string(s.mode), AdditionalDirs: append([]string(nil), s.dirs...), TmpDir: s.tmpDir()}
}

// prepare validates a call and asks the gate. It returns with out set when
// the call must not run.
func (s *Session) prepare(ctx context.Context, turn int, c model.ToolCall, caps model.Caps) prepared {
	p := prepared{call: c}
	if ctx.Err() != nil {
		p.out = &outcome{res: tool.ErrorResult("not run: the turn was cancelled"), code: event.ToolAbortedBeforeDispatch}
		return p
	}
	p.t, p.repaired = s.resolveTool(c.Name)
	if p.t == nil {
		res, code := s.unknownTool(c.Name)
		p.out = &outcome{res: res, code: code}
		return p
	}
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		p.out = &outcome{res: tool.ErrorResult(invalidArgs(args, err)), code: event.ToolInvalidArguments}
		return p
	}
	p.args = json.RawMessage(args)
	env := s.toolEnv(turn, c.ID, caps)
	acc, err := s.inspect(p.t, p.args, env)
	if err != nil {
		p.out = &outcome{res: tool.ErrorResult("invalid arguments: " + err.Error()), code: event.ToolInvalidArguments}
		return p
	}
	s.admit(ctx, &p, acc, env)
	return p
}

// execute runs a prepared call, turning a panic into an error result.
func (s *Session) execute(ctx context.Context, turn int, p *prepared, caps model.Caps) (o outcome) {
	defer func() {
		if v := recover(); v != nil {
			s.rt.log.Error("tool panicked", "tool", p.call.Name, "panic", v, "stack", string(debug.Stack()))
			o = outcome{res: tool.ErrorResult(fmt.Sprintf("the %s tool failed internally: %v", p.call.Name, v)), code: event.ToolFailed}
		}
	}()
	env := s.toolEnv(turn, p.call.ID, caps)
	// One output budget for every tool: a result that overflows it is
	// spilled whole and cut on lines, once, here.
	start := time.Now()
	res := tool.FitResult(env, p.t.Run(ctx, p.args, env))
	o = outcome{res: res}
	if !res.IsError && ctx.Err() == nil {
		if note := s.postToolHooks(ctx, p.t.Name(), p.call.ID, p.args, res, time.Since(start)); note != "" {
			o.res.Content = append(o.res.Content, event.Text("\n<hook-context>\n"+note+"\n</hook-context>"))
		}
	}
	if ctx.Err() != nil {
		o.code = event.ToolAborted
		o.res.IsError = true
		o.res.Content = append(o.res.Content, event.Text("\n[the call was cancelled]"))
	} else if res.IsError {
		o.code = event.ToolFailed
	} else if text, files := s.nestedInstructions(p.paths); text != "" {
		o.res.Content = append(o.res.Content, event.Text(text))
		o.instr = files
	}
	o.took = time.Since(start)
	return o
}

// commitResult records a call's result (execute has already fitted it to
// the output budget). Its sourceEventSeqs name the call's tool/call event
// (callSeq), as the original's do.
func (s *Session) commitResult(turn, step int, c model.ToolCall, o outcome, callSeq int64) error {
	content := o.res.Content
	if content == nil {
		content = []event.ContentBlock{}
	}
	tr := event.ToolResult{Turn: turn, Step: step, Message: event.Message{
		ID: uuid.NewString(), Role: "user", Source: event.Source{Kind: "tool", CallID: c.ID},
		Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: c.ID, Content: content, IsError: o.res.IsError}},
	}}
	if o.code != "" {
		tr.Error = &event.ToolErrorInfo{Name: "ToolError", Code: o.code}
	}
	tr.Instructions = o.instr
	if o.took > 0 {
		tr.DurationMs = max(o.took.Milliseconds(), 1)
	}
	if o.res.Meta != nil {
		if raw, err := json.Marshal(o.res.Meta); err == nil {
			tr.Meta = raw
		}
	}
	ev := event.New(event.TypeToolResult, tr)
	ev.SourceEventSeqs = []int64{callSeq}
	_, err := s.commitWith(ev, tr)
	return err
}

// errorInfo turns an error into the ErrorInfo of a turn or attempt.
func errorInfo(err error) *event.ErrorInfo {
	var me *model.Error
	if errors.As(err, &me) {
		info := &event.ErrorInfo{Message: me.Message, Code: string(me.Class), Status: me.Status, RequestID: me.RequestID}
		if me.RetryAfter > 0 {
			info.ProviderRetryAfterMs = me.RetryAfter.Milliseconds()
		}
		return info
	}
	return &event.ErrorInfo{Message: err.Error(), Code: "ERROR"}
}
