package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/core/atomicfile"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/snapshot"
)

// Errors of a rewind. Doors map them to wire codes at their edge.
var (
	// ErrBusy refuses a rewind while a turn runs.
	ErrBusy = errors.New("a turn is running")
	// ErrRewindConflict refuses a rewind that would overwrite files changed
	// outside the agent (see ConflictError).
	ErrRewindConflict = errors.New("files changed outside the agent")
	// ErrNothingToUndo: no rewind is left to undo.
	ErrNothingToUndo = errors.New("there is no rewind to undo")
)

// ConflictError names the files a rewind refused to overwrite: changed
// outside the agent after the snapshot they would be restored from, or
// not captured by any snapshot.
type ConflictError struct{ Files []string }

func (e *ConflictError) Error() string {
	list := e.Files
	more := ""
	if len(list) > 10 {
		list, more = list[:10], fmt.Sprintf(" and %d more", len(e.Files)-10)
	}
	return fmt.Sprintf("rewind refused: %d file(s) changed outside the agent would be overwritten: %s%s (force to overwrite them; their current content is kept for undo where it can be)",
		len(e.Files), strings.Join(list, ", "), more)
}

func (e *ConflictError) Unwrap() error { return ErrRewindConflict }

// RewindRequest asks for a rewind to before Turn, or with Undo for the
// undo of the last rewind. Scope is all (default), files or conversation.
type RewindRequest struct {
	Turn  int
	Scope string
	Undo  bool
	Force bool
}

// RewindResult is what a rewind did: the session/rewind event's payload
// and its seq.
type RewindResult struct {
	event.Rewind
	Seq int64
	// LastSeq is the seq of the last event the rewind committed (its
	// conversation checkpoint, when the conversation was in scope).
	LastSeq int64 `json:"-"`
}

// planFile is where a rewind writes what it is about to do before doing
// it, so a rewind cut short by a crash is finished on the next open.
const planFile = "rewind-plan.json"

// rewindPlan is a rewind decided but not yet committed: the restore of
// each root, then the events to commit (unsequenced; Post filled when
// the files are restored).
type rewindPlan struct {
	ID     string           `json:"id"`
	Roots  []*snapshot.Plan `json:"roots,omitempty"`
	Rewind event.Rewind     `json:"rewind"`
	// Checkpoint is the conversation to continue from, when the
	// conversation is in scope.
	Checkpoint *event.CompactionCheckpoint `json:"checkpoint,omitempty"`
}

// Rewind takes the session back to before a turn — its files, its
// conversation or both — or undoes the last rewind. It refuses while a
// turn runs, for a turn that does not exist or was rewound already, and
// when files changed outside the agent would be overwritten (unless
// forced). Later turns stay in the log, marked rewound.
func (s *Session) Rewind(ctx context.Context, req RewindRequest) (*RewindResult, error) {
	switch req.Scope {
	case "":
		req.Scope = event.ScopeAll
	case event.ScopeAll, event.ScopeFiles, event.ScopeConversation:
	default:
		return nil, fmt.Errorf("%w: rewind scope %q: want all, files or conversation", ErrBadInput, req.Scope)
	}
	if !req.Undo && req.Turn < 1 {
		return nil, fmt.Errorf("%w: rewind needs a turn number (1 or more)", ErrBadInput)
	}
	if err := s.claimForRewind(ctx); err != nil {
		return nil, err
	}
	defer s.releaseClaim()
	if err := s.repairRewind(ctx); err != nil {
		return nil, err
	}
	evs, err := s.Transcript()
	if err != nil {
		return nil, err
	}
	p, err := s.planRewind(ctx, scanTimeline(evs), evs, req)
	if err != nil {
		return nil, err
	}
	return s.finishRewind(ctx, p, true)
}

// claimForRewind marks the session running for a rewind. A running turn
// is refused (a rewind never waits for one: its outcome would decide what
// to rewind); a turn that has just ended, or a compaction, is waited for.
func (s *Session) claimForRewind(ctx context.Context) error {
	for {
		s.commitMu.Lock()
		inTurn := s.inTurn
		s.mu.Lock()
		s.commitMu.Unlock()
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("session %s: %w", s.id, ErrClosed)
		}
		if !s.running {
			s.running, s.idle = true, make(chan struct{})
			s.mu.Unlock()
			return nil
		}
		if inTurn || len(s.inbox) > 0 {
			s.mu.Unlock()
			return fmt.Errorf("session %s: %w: cancel it or wait for it to end, then rewind", s.id, ErrBusy)
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

// releaseClaim ends a rewind's claim: the session goes idle at once, or
// runs the prompts queued meanwhile.
func (s *Session) releaseClaim() {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inbox) > 0 {
		go s.runTurns()
		return
	}
	s.running, s.cancel = false, nil
	close(s.idle)
}

// planRewind decides what a rewind does, touching nothing but the
// snapshot store (the undo checkpoint is taken here).
func (s *Session) planRewind(ctx context.Context, tl *timeline, evs []event.Event, req RewindRequest) (*rewindPlan, error) {
	p := &rewindPlan{ID: uuid.NewString()}
	rw := &p.Rewind
	rw.ID, rw.Scope, rw.Turn, rw.Forced = p.ID, req.Scope, req.Turn, req.Force
	var target map[string]string // root → manifest to restore
	from := -1                   // index in tl.marks of the snapshot restored to
	var convBefore int64         // fold the conversation of the events before this seq
	if req.Undo {
		last, err := lastRewind(tl)
		if err != nil {
			return nil, err
		}
		rw.Undo, rw.Undoes, rw.Turn, rw.Scope = true, last.seq, last.rw.Turn, last.rw.Scope
		target, from, convBefore = rootMap(last.rw.Pre), last.mark, last.seq
		for _, t := range tl.turns {
			if t.Seq > last.seq && !t.Rewound {
				rw.RewoundTurns = append(rw.RewoundTurns, t.Turn)
			}
		}
	} else {
		t, ok := tl.turn(req.Turn)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: session %s has no turn %d%s", ErrBadInput, s.id, req.Turn, turnRange(tl))
		case t.Rewound:
			return nil, fmt.Errorf("%w: turn %d was rewound already (undo that rewind to bring it back)", ErrBadInput, req.Turn)
		}
		rw.FromSeq, convBefore = t.from, t.from
		if i, ok := tl.starts[req.Turn]; ok {
			target, from = tl.marks[i].roots, i
		}
		for _, x := range tl.turns {
			if x.Seq >= t.Seq && !x.Rewound {
				rw.RewoundTurns = append(rw.RewoundTurns, x.Turn)
			}
		}
	}
	if rw.Scope != event.ScopeConversation {
		if target == nil {
			return nil, s.noSnapshot(tl, req)
		}
		if err := s.planFiles(ctx, p, tl, target, from); err != nil {
			return nil, err
		}
	}
	if rw.Scope != event.ScopeFiles {
		p.Checkpoint = s.rewindCheckpoint(evs, convBefore)
	}
	return p, nil
}

// lastRewind is the rewind an undo undoes: the last one, unless that one
// was undone already.
func lastRewind(tl *timeline) (rewindAt, error) {
	if len(tl.rewinds) == 0 {
		return rewindAt{}, ErrNothingToUndo
	}
	last := tl.rewinds[len(tl.rewinds)-1]
	if last.rw.Undo {
		return rewindAt{}, fmt.Errorf("%w: the last rewind was undone already", ErrNothingToUndo)
	}
	return last, nil
}

func turnRange(tl *timeline) string {
	if len(tl.turns) == 0 {
		return " (it has no turns yet)"
	}
	return fmt.Sprintf(" (its turns are %d to %d)", tl.turns[0].Turn, tl.turns[len(tl.turns)-1].Turn)
}

// noSnapshot says why a rewind cannot restore files.
func (s *Session) noSnapshot(tl *timeline, req RewindRequest) error {
	if s.snapshots() == nil {
		return fmt.Errorf("%w: workspace checkpoints are off for this session, so only its conversation can be rewound", ErrBadInput)
	}
	if req.Undo {
		return fmt.Errorf("%w: the last rewind kept no snapshot of the files", ErrBadInput)
	}
	why := tl.errs[req.Turn]
	if why == "" {
		why = "none was taken"
	}
	return fmt.Errorf("%w: turn %d has no snapshot of the workspace (%s); rewind its conversation only", ErrBadInput, req.Turn, why)
}

// planFiles takes the undo checkpoint (the files as they are now), plans
// the restore of every root of target, and finds the conflicts: files the
// restore would overwrite that changed outside the agent since the
// snapshot at marks[from], or that no snapshot holds.
func (s *Session) planFiles(ctx context.Context, p *rewindPlan, tl *timeline, target map[string]string, from int) error {
	st := s.snapshots()
	roots := s.roots()
	for r := range target {
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	now, err := st.Take(ctx, roots)
	if err != nil {
		return fmt.Errorf("rewind: snapshot the files as they are now: %w", err)
	}
	p.Rewind.Pre = now.Roots
	cur := rootMap(now.Roots)
	outside := s.outsideChanges(tl, from, cur)
	var conflicts []string
	for _, root := range slices.Sorted(mapsKeys(target)) {
		tm, err := st.Load(target[root])
		if err != nil {
			return fmt.Errorf("rewind: %w", err)
		}
		cm := &snapshot.Manifest{Root: root}
		if id, ok := cur[root]; ok {
			if cm, err = st.Load(id); err != nil {
				return fmt.Errorf("rewind: %w", err)
			}
		}
		plan, err := st.PlanRestore(cm, tm)
		if err != nil {
			return fmt.Errorf("rewind: %w", err)
		}
		for _, op := range plan.Ops {
			if outside[root][op.Path] || slices.Contains(plan.Uncaptured, op.Path) {
				conflicts = append(conflicts, filepath.Join(root, filepath.FromSlash(op.Path)))
			}
		}
		for _, path := range plan.NotRestored {
			p.Rewind.NotRestored = append(p.Rewind.NotRestored, filepath.Join(root, filepath.FromSlash(path)))
		}
		p.Roots = append(p.Roots, plan)
	}
	if len(conflicts) > 0 && !p.Rewind.Forced {
		return &ConflictError{Files: conflicts}
	}
	p.Rewind.Conflicts = conflicts
	for _, plan := range p.Roots {
		for _, op := range plan.Ops {
			p.Rewind.ChangeCount++
			if len(p.Rewind.Changes) < event.MaxListedChanges {
				p.Rewind.Changes = append(p.Rewind.Changes, event.FileChange{Root: plan.Root, Path: op.Path, Op: op.Kind})
			}
		}
	}
	return nil
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// outsideChanges returns, per root, the paths changed outside the agent
// since marks[from]: between each end mark and the next start mark, and
// between the last end mark and now.
func (s *Session) outsideChanges(tl *timeline, from int, now map[string]string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	if from < 0 {
		return out
	}
	marks := append(slices.Clone(tl.marks[from:]), snapMark{phase: event.PhaseStart, roots: now})
	for i := 0; i+1 < len(marks); i++ {
		a, b := marks[i], marks[i+1]
		if a.phase != event.PhaseEnd || b.phase != event.PhaseStart {
			continue
		}
		for root, ida := range a.roots {
			idb, ok := b.roots[root]
			if !ok || ida == idb {
				continue
			}
			ma, err1 := s.snaps.Load(ida)
			mb, err2 := s.snaps.Load(idb)
			if err1 != nil || err2 != nil {
				continue
			}
			for _, path := range snapshot.Changed(ma, mb) {
				if out[root] == nil {
					out[root] = map[string]bool{}
				}
				out[root][path] = true
			}
		}
	}
	return out
}

// rewindCheckpoint is the checkpoint that continues the conversation from
// the events before seq before: their model-facing history, folded as a
// resume would fold them, with the session's current state.
func (s *Session) rewindCheckpoint(evs []event.Event, before int64) *event.CompactionCheckpoint {
	var c conversation
	var env *event.EnvFacts
	for _, ev := range evs {
		if ev.Seq >= before {
			break
		}
		c.add(ev, nil)
		switch ev.Type {
		case event.TypeEnvironment:
			if d, err := event.Decode[event.Environment](ev); err == nil {
				env = &d.Facts
			}
		case event.TypeCompactionCheckpoint:
			if d, err := event.Decode[event.CompactionCheckpoint](ev); err == nil && d.State != nil {
				env = d.State.Environment
			}
		}
	}
	c.closePending()
	hist := make([]event.CheckpointMessage, 0, len(c.msgs))
	for i, m := range c.msgs {
		cm := event.CheckpointMessage{Kind: m.Kind, Role: m.Role, Content: m.Content, Reasoning: m.Reasoning,
			ToolCallID: m.ToolCallID, Attachments: c.atts[i]}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, event.CheckpointToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		cm.ServerFields = checkpointServerFields(m.ServerFields)
		hist = append(hist, cm)
	}
	s.commitMu.Lock()
	st := s.checkpointState()
	replaced := len(s.conv.msgs)
	s.commitMu.Unlock()
	st.Environment = env
	return &event.CompactionCheckpoint{Trigger: event.CompactRewind, Turn: st.Turn, History: hist,
		ReplacedMessages: replaced, State: st}
}

// finishRewind writes the plan (when fresh), restores the files, commits
// the rewind and removes the plan. Every step may be done again: a plan
// found on open is finished by the same function.
func (s *Session) finishRewind(ctx context.Context, p *rewindPlan, fresh bool) (*RewindResult, error) {
	path := filepath.Join(s.lg.Dir(), planFile)
	if fresh {
		data, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("rewind: encode the plan: %w", err)
		}
		if err := atomicfile.Write(path, data, true); err != nil {
			return nil, fmt.Errorf("rewind: write the plan: %w", err)
		}
	}
	for _, plan := range p.Roots {
		if err := s.snaps.Apply(context.WithoutCancel(ctx), plan); err != nil {
			return nil, fmt.Errorf("rewind: %w (the rewind is finished when the session is next opened)", err)
		}
	}
	if len(p.Roots) > 0 {
		roots := make([]string, 0, len(p.Roots))
		for _, plan := range p.Roots {
			roots = append(roots, plan.Root)
		}
		if post, err := s.snaps.Take(context.WithoutCancel(ctx), roots); err == nil {
			p.Rewind.Post = post.Roots
		}
	}
	evs := []event.Event{event.New(event.TypeRewind, p.Rewind)}
	payloads := []any{p.Rewind}
	if p.Checkpoint != nil {
		p.Checkpoint.ReplacedThroughSeq = s.NextSeq() - 1
		evs = append(evs, event.New(event.TypeCompactionCheckpoint, *p.Checkpoint))
		payloads = append(payloads, *p.Checkpoint)
	}
	committed, err := s.commitAll(evs, payloads)
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.rt.log.Warn("rewind plan not removed", "session", s.id, "err", err)
	}
	return &RewindResult{Rewind: p.Rewind, Seq: committed[0].Seq, LastSeq: committed[len(committed)-1].Seq}, nil
}

// repairRewind finishes a rewind a crash cut short: its plan is on disk
// and its event is not in the log. The files are restored again (each
// step may be done twice) and the event committed, so the workspace ends
// wholly restored, never half.
func (s *Session) repairRewind(ctx context.Context) error {
	path := filepath.Join(s.lg.Dir(), planFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the rewind plan: %w", err)
	}
	var p rewindPlan
	if err := json.Unmarshal(data, &p); err != nil || p.ID == "" {
		// Written whole and synced before any file was touched: a plan
		// that does not decode was never acted on.
		return os.Remove(path)
	}
	evs, err := s.Transcript()
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.Type == event.TypeRewind {
			if rw, err := event.Decode[event.Rewind](ev); err == nil && rw.ID == p.ID {
				return os.Remove(path) // committed; only the clean-up was lost
			}
		}
	}
	if len(p.Roots) > 0 && s.snapshots() == nil {
		return errors.New("the rewind plan restores files but workspace checkpoints are off")
	}
	s.rt.log.Info("finishing a rewind cut short", "session", s.id, "plan", p.ID)
	_, err = s.finishRewind(ctx, &p, false)
	return err
}
