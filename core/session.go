package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image sizes of attachments
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/snapshot"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// Session is one conversation: its log, its inbox of queued prompts, and at
// most one running turn. All facts go through commit, which appends to the
// log first and publishes after.
type Session struct {
	rt      *Runtime
	id      string
	header  store.Header
	lg      *store.Log
	resumed bool
	reads   *tool.ReadTracker
	spill   *tool.Spill  // outputs too large for one result, under the session's directory
	jobs    *tool.Jobs   // background jobs; all killed by Close
	todos   []event.Todo // the latest todo_write list (commitMu)

	// commitMu serialises commits so seq, log order and history agree.
	commitMu sync.Mutex
	history  []event.Event
	// newer is closed by the next commit (cursors waiting for an event
	// wait on it); final is set once the session has closed. Both are
	// guarded by commitMu (cursor.go).
	newer chan struct{}
	final bool
	conv  conversation // model-facing history, kept in step with history
	// envFacts are the facts of the last context message (nil before the
	// first), so a later turn sends one only when a fact changed.
	envFacts *event.EnvFacts
	// nested are the nested instruction files shown since the last
	// compaction (guarded by mu; see nested.go).
	nested nestedState

	mu      sync.Mutex
	cfg     event.Config
	mode    permission.Mode
	asker   permission.Asker
	files   tool.FileSystem
	exec    tool.Executor
	onDelta func(model.Delta)
	dirs    []string // more workspace roots (SessionOptions.AdditionalDirs)
	inbox   []*Ticket
	running bool
	cancel  context.CancelCauseFunc // of the running turn
	idle    chan struct{}           // closed while idle
	turn    int                     // last turn number
	// turnCmd is what the running turn's command asks of it (nil: none).
	turnCmd *event.CommandTurn
	closed  bool
	// closeDone is made by the first Close and closed when it has
	// finished; closeErr, its result, is written before and read after.
	closeDone chan struct{}
	closeErr  error
	titled    bool
	header0   string // system prompt of the last request/header
	lastHdr   event.Config
	hdrTools  []byte // tool list of the last request/header
	hdrSeen   bool
	// lastReqCtx is the last request/context recorded (under commitMu).
	lastReqCtx event.RequestContext
	// inTurn: a turn/start was committed and its turn/end not yet (under
	// commitMu).
	inTurn bool
	// learnedWindow is the context window a provider's refusal named, when
	// it is smaller than the configured one (0 = none).
	learnedWindow int64
	ts            *toolset // the model's tools; swapped at turn boundaries

	// mcp is the session's MCP servers (nil: none); ownMCP says whether
	// the session started them (an in-process child shares its parent's).
	mcp    *mcp.Set
	ownMCP bool
	// Server reports wait until the runtime has announced the session.
	mcpMu      sync.Mutex
	mcpLive    bool
	mcpPending []mcp.Status

	// ext is what the session read of its extension files when it
	// opened; started says its SessionStart hooks have run.
	ext     extState
	started bool
	// snaps is the session's workspace snapshot store (nil: none), made
	// on first use.
	snapOnce sync.Once
	snaps    *snapshot.Store
}

// Ticket follows one queued prompt to the end of the turn that took it.
type Ticket struct {
	MessageID string
	// ReceiptSeq is the seq of the agent/inbox/spliced receipt.
	ReceiptSeq int64
	msg        event.Message
	done       chan struct{}
	result     TurnResult
}

// Done is closed when the turn that took the prompt has ended.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// Result is valid after Done is closed.
func (t *Ticket) Result() TurnResult { return t.result }

// TurnResult is how a turn ended.
type TurnResult struct {
	Turn   int
	Reason event.TurnEndReason
	// Text is the last non-empty assistant text of the turn.
	Text string
	// Seq is the seq of the turn/end event (-1 if the turn never started).
	Seq int64
}

func (r *Runtime) newSession(lg *store.Log, events []event.Event, opts SessionOptions, cfg event.Config, resumed bool, exts extState) (*Session, error) {
	s := &Session{
		rt: r, id: lg.Header().ID, header: lg.Header(), lg: lg, resumed: resumed, ext: exts,
		reads: tool.NewReadTracker(), spill: tool.NewSpill(lg.Dir()), cfg: cfg, mode: opts.PermissionMode, asker: opts.Asker,
		files: opts.Files, exec: opts.Exec, onDelta: opts.OnDelta, idle: make(chan struct{}),
	}
	close(s.idle)
	s.jobs = tool.NewJobs(s.spill, r.cfg.Exec)
	if s.mode == "" {
		s.mode = r.cfg.PermissionMode
	}
	if s.files == nil {
		s.files = r.cfg.Files
	}
	if s.exec == nil {
		s.exec = r.cfg.Exec
	}
	s.history = make([]event.Event, 0, len(events)+64)
	for _, ev := range events {
		s.absorb(ev, nil)
	}
	if resumed {
		s.requeueUnclaimed()
	}
	// A config that was explicitly requested on resume wins over the log.
	if opts.Config != (event.Config{}) && resumed {
		want := s.cfg
		if opts.Config.Provider != "" {
			want.Provider = opts.Config.Provider
		}
		if opts.Config.Model != "" {
			want.Model = opts.Config.Model
		}
		if opts.Config.ReasoningEffort != "" {
			want.ReasoningEffort = opts.Config.ReasoningEffort
		}
		if opts.Config.MaxTokens > 0 {
			want.MaxTokens = opts.Config.MaxTokens
		}
		if want != s.cfg {
			if err := s.SetConfig(want); err != nil {
				return nil, err
			}
		}
	}
	// A new session records its roots as its first fact; a resumed one
	// has them from its log (a door that replaces them says so).
	if !resumed && len(opts.AdditionalDirs) > 0 {
		if err := s.SetAdditionalDirs(opts.AdditionalDirs); err != nil {
			return nil, err
		}
	}
	s.startMCP(opts)
	return s, nil
}

// absorb folds a committed (or replayed) event into the in-memory state.
// Callers hold commitMu or own the session exclusively.
//
// payload, when not nil, is the typed value ev.Data was marshalled from:
// the loop's own commits pass it so nothing it just wrote is decoded
// again; events replayed from the log (or recorded by tools) are decoded.
func (s *Session) absorb(ev event.Event, payload any) {
	s.history = append(s.history, ev)
	s.conv.add(ev, payload)
	switch ev.Type {
	case event.TypeTurnStart:
		if d, err := payloadOf[event.TurnStart](ev, payload); err == nil && d.Turn > s.turn {
			s.turn = d.Turn
		}
		s.inTurn = true
	case event.TypeTurnEnd:
		s.inTurn = false
	case event.TypeSessionTitle:
		s.mu.Lock()
		s.titled = true
		s.mu.Unlock()
	case event.TypeRequestContext:
		if d, err := payloadOf[event.RequestContext](ev, payload); err == nil {
			s.lastReqCtx = d
		}
	case event.TypeRequestHeader:
		if d, err := payloadOf[event.RequestHeader](ev, payload); err == nil {
			s.hdrSeen = true
			s.header0 = d.Header.System
			s.lastHdr = d.RequestedConfig()
			s.hdrTools = d.Header.Tools
		}
	case event.TypeEnvironment:
		if d, err := payloadOf[event.Environment](ev, payload); err == nil {
			s.envFacts = &d.Facts
		}
	case event.TypeToolResult:
		if ins := resultInstructions(ev, payload); len(ins) > 0 {
			s.mu.Lock()
			s.noteNested(ins)
			s.mu.Unlock()
		}
	case event.TypeCompactionCheckpoint:
		if d, err := payloadOf[event.CompactionCheckpoint](ev, payload); err == nil && d.State != nil && d.State.Environment != nil {
			s.envFacts = d.State.Environment
		}
		s.mu.Lock()
		s.nested = nestedState{} // the results they rode on are summarised away
		s.mu.Unlock()
		s.atCheckpoint(ev, payload)
	case event.TypeTodoWrite:
		if d, err := payloadOf[event.TodoWrite](ev, payload); err == nil {
			s.todos = d.Todos // the latest list, for a compaction's working state
		}
	case event.TypeSessionDirs:
		if d, err := payloadOf[event.SessionDirs](ev, payload); err == nil {
			s.mu.Lock()
			s.dirs = slices.Clone(d.AdditionalDirectories)
			s.mu.Unlock()
		}
	case event.TypeConfigChange:
		if d, err := payloadOf[event.ConfigChange](ev, payload); err == nil {
			// cfg, mode and titled are read under mu (absorb runs under
			// commitMu; the lock order is commitMu, then mu).
			s.mu.Lock()
			s.cfg = d.Config
			if d.PermissionMode != "" {
				s.mode = permission.Mode(d.PermissionMode)
			}
			s.mu.Unlock()
		}
	}
}

// resultInstructions returns the nested instruction files a tool/result
// carries. A replayed result is decoded only when it names some: most do
// not, and decoding a whole result (its content blocks) for nothing was an
// eighth of a long session's wake.
func resultInstructions(ev event.Event, payload any) []event.InstructionFile {
	if tr, ok := payload.(event.ToolResult); ok {
		return tr.Instructions
	}
	if !bytes.Contains(ev.Data, []byte(`"instructions"`)) {
		return nil
	}
	var d struct {
		Instructions []event.InstructionFile `json:"instructions"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return nil
	}
	return d.Instructions
}

// payloadOf returns the typed payload when the committer passed it, else
// decodes the event.
func payloadOf[T any](ev event.Event, payload any) (T, error) {
	if v, ok := payload.(T); ok {
		return v, nil
	}
	return event.Decode[T](ev)
}

// emit builds an event from a typed payload and commits it.
func (s *Session) emit(typ string, data any) (event.Event, error) {
	return s.commitWith(event.New(typ, data), data)
}

// requeueUnclaimed puts back in the inbox the prompts a crashed process
// had queued but that never reached the conversation: their receipts were
// committed (a host holds their message ids), so they must not be lost.
// A prompt counts as delivered only once its user/message is in the log —
// a crash between a turn's claim and its user/message would otherwise
// lose it. They are not run on their own either: the next prompt's turn
// claims them first, as it would have without the crash.
func (s *Session) requeueUnclaimed() {
	var inserted []event.Message
	delivered := map[string]bool{}
	if len(s.history) > 0 && s.history[0].Type == event.TypeCompactionCheckpoint {
		// Resumed from a checkpoint: the prompts receipted before it and
		// still waiting then are in its state.
		if cp, err := event.Decode[event.CompactionCheckpoint](s.history[0]); err == nil && cp.State != nil {
			inserted = append(inserted, cp.State.Unclaimed...)
		}
	}
	for _, ev := range s.history {
		switch ev.Type {
		case event.TypeInboxSpliced:
			if d, err := event.Decode[event.InboxSpliced](ev); err == nil {
				inserted = append(inserted, d.Inserted...)
				if d.Outcome == event.InboxCanceled {
					// Everything queued so far was dropped, not delivered.
					for _, m := range inserted {
						delivered[m.ID] = true
					}
				}
			}
		case event.TypeUserMessage:
			if m, err := event.Decode[event.Message](ev); err == nil {
				delivered[m.ID] = true
			}
		}
	}
	for _, m := range inserted {
		if delivered[m.ID] {
			continue
		}
		delivered[m.ID] = true // once, even if receipted twice
		s.inbox = append(s.inbox, &Ticket{MessageID: m.ID, msg: m, done: make(chan struct{}), ReceiptSeq: -1})
	}
}

// commit appends ev to the log, folds it into memory and publishes it.
func (s *Session) commit(ev event.Event) (event.Event, error) { return s.commitWith(ev, nil) }

func (s *Session) commitWith(ev event.Event, payload any) (event.Event, error) {
	s.commitMu.Lock()
	ev, err := s.commitLocked(ev, payload)
	s.commitMu.Unlock()
	if err == nil {
		s.rt.signal(s, ev.Seq)
	}
	return ev, err
}

// commitAll commits evs (with their typed payloads, same length) as one
// log write, so a crash keeps all of them or none, then folds each in
// order and wakes the readers once.
func (s *Session) commitAll(evs []event.Event, payloads []any) ([]event.Event, error) {
	s.commitMu.Lock()
	next := s.lg.NextSeq()
	for i := range evs {
		evs[i].Seq = next + int64(i)
	}
	if err := s.lg.AppendAll(evs...); err != nil {
		s.commitMu.Unlock()
		return evs, fmt.Errorf("session %s: commit %s and %d more: %w", s.id, evs[0].Type, len(evs)-1, err)
	}
	for i, ev := range evs {
		s.absorb(ev, payloads[i])
	}
	s.committedLocked()
	s.commitMu.Unlock()
	s.rt.signal(s, next)
	return evs, nil
}

// commitLocked is commitWith for a caller that holds commitMu. The caller
// signals the subscribers (rt.signal) once it has released commitMu: the
// readers of the history never run under the commit lock.
func (s *Session) commitLocked(ev event.Event, payload any) (event.Event, error) {
	ev.Seq = s.lg.NextSeq()
	if err := s.lg.Append(ev); err != nil {
		return ev, fmt.Errorf("session %s: commit %s: %w", s.id, ev.Type, err)
	}
	s.absorb(ev, payload)
	s.committedLocked()
	return ev, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Header returns the session's header.
func (s *Session) Header() store.Header { return s.header }

// Cwd returns the session's workspace.
func (s *Session) Cwd() string { return s.header.Cwd }

// Dir returns the session's directory in the store.
func (s *Session) Dir() string { return s.lg.Dir() }

// Events returns a copy of the session's committed history.
func (s *Session) Events() []event.Event {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return append([]event.Event(nil), s.history...)
}

// Config returns the session's model configuration.
func (s *Session) Config() event.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Mode returns the session's permission mode.
func (s *Session) Mode() permission.Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// SetConfig changes the model configuration from the next model call on,
// recording the change in the log so a resume restores it.
func (s *Session) SetConfig(cfg event.Config) error {
	if _, err := s.rt.Provider(cfg.Provider); err != nil {
		return err
	}
	return s.changeConfig(func(c *event.ConfigChange) { c.Config = cfg })
}

// SetMode changes the permission mode, recorded in the log.
func (s *Session) SetMode(m permission.Mode) error {
	return s.changeConfig(func(c *event.ConfigChange) { c.PermissionMode = string(m) })
}

// changeConfig commits a config/change that is the current config and mode
// with edit applied. Every config/change carries both fields, so the read
// of the current values and the commit happen under commitMu: a concurrent
// SetConfig and SetMode then each see the other's committed change, and
// neither writes back a stale copy of the field it did not change. absorb
// updates cfg and mode as part of the commit.
func (s *Session) changeConfig(edit func(*event.ConfigChange)) error {
	s.commitMu.Lock()
	s.mu.Lock()
	c := event.ConfigChange{Config: s.cfg, PermissionMode: string(s.mode)}
	s.mu.Unlock()
	edit(&c)
	ev, err := s.commitLocked(event.New(event.TypeConfigChange, c), c)
	s.commitMu.Unlock()
	if err == nil {
		s.rt.signal(s, ev.Seq)
	}
	return err
}

// Bind replaces the door-supplied parts of a session (a door that loads or
// resumes a session binds its own asker, files and executor). Nil keeps
// the current value.
func (s *Session) Bind(asker permission.Asker, files tool.FileSystem, exec tool.Executor, onDelta func(model.Delta)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if asker != nil {
		s.asker = asker
	}
	if files != nil {
		s.files = files
	}
	if exec != nil {
		s.exec = exec
	}
	if onDelta != nil {
		s.onDelta = onDelta
	}
}

// Running reports whether a turn is running or queued.
func (s *Session) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// MaxQueuedPrompts bounds a session's inbox: the prompts waiting for the
// running turn. A host that sends more is told so (ErrQueueFull) instead
// of the session holding every prompt it is ever sent.
const MaxQueuedPrompts = 256

// MaxQueuedPromptBytes bounds the text the inbox holds besides (images are
// attachments on disk): 256 prompts the size of one frame each would be
// gigabytes. A prompt that alone is larger still queues into an empty
// inbox, so no prompt is refused only for its size.
const MaxQueuedPromptBytes = 32 << 20

// promptBytes is what a prompt's content holds in memory.
func promptBytes(content []event.ContentBlock) int {
	n := 0
	for _, b := range content {
		n += len(b.Text) + len(b.Arguments) + promptBytes(b.Content)
	}
	return n
}

// inboxFull says why the inbox cannot take a prompt of size bytes, or "".
// Called with mu held.
func (s *Session) inboxFull(size int) string {
	if len(s.inbox) >= MaxQueuedPrompts {
		return fmt.Sprintf("%d prompts are already waiting for the running turn", MaxQueuedPrompts)
	}
	held := 0
	for _, t := range s.inbox {
		held += promptBytes(t.msg.Content)
	}
	if len(s.inbox) > 0 && held+size > MaxQueuedPromptBytes {
		return fmt.Sprintf("the waiting prompts hold %d bytes; this one's %d would pass the bound of %d", held, size, MaxQueuedPromptBytes)
	}
	return ""
}

// Prompt queues a user message for the next turn and returns once its
// agent/inbox/spliced receipt is committed (and so published): a door that
// answers with the message id after Prompt returns has already sent the
// receipt. A turn starts at once when none is running.
func (s *Session) Prompt(ctx context.Context, content []event.ContentBlock) (*Ticket, error) {
	return s.prompt(ctx, content, PromptOptions{})
}

func (s *Session) prompt(ctx context.Context, content []event.ContentBlock, opts PromptOptions) (*Ticket, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(content) == 0 {
		return nil, fmt.Errorf("%w: empty prompt", ErrBadInput)
	}
	attached := s.mentionBlocks(content)
	n := len(content)
	content, err := s.promptHooks(ctx, content)
	if err != nil {
		return nil, err
	}
	if len(attached) > 0 {
		// The files the prompt names follow its text, before any hook's
		// context (promptHooks keeps content as a prefix).
		content = append(append(append([]event.ContentBlock(nil), content[:n]...), attached...), content[n:]...)
	}
	t := &Ticket{MessageID: uuid.NewString(), done: make(chan struct{})}
	t.msg = event.Message{ID: t.MessageID, Role: "user", Content: content, Source: event.Source{Kind: "user"}, Command: opts.Command}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	if why := s.inboxFull(promptBytes(content)); why != "" {
		s.mu.Unlock()
		return nil, fmt.Errorf("session %s: %w: %s", s.id, ErrQueueFull, why)
	}
	start := len(s.inbox)
	s.inbox = append(s.inbox, t)
	startTurn := !s.running
	if startTurn {
		s.running = true
		s.idle = make(chan struct{})
	}
	s.mu.Unlock()

	receipt, err := s.emit(event.TypeInboxSpliced, event.InboxSpliced{
		Target: "next-turn", Start: start, Inserted: []event.Message{t.msg}})
	if err != nil {
		s.mu.Lock()
		for i, x := range s.inbox {
			if x == t {
				s.inbox = append(s.inbox[:i], s.inbox[i+1:]...)
				break
			}
		}
		if startTurn {
			s.running = false
			close(s.idle)
		}
		s.mu.Unlock()
		return nil, err
	}
	t.ReceiptSeq = receipt.Seq
	if startTurn {
		s.rt.publish(s, Notice{Kind: NoticeStatus, SessionID: s.id, Status: StatusRunning})
		go s.runTurns()
	}
	return t, nil
}

// Cancel aborts the running turn (its tools are stopped and every call gets
// a result). Queued prompts stay queued. It returns at once.
func (s *Session) Cancel(cause error) {
	if cause == nil {
		cause = errCancelledByUser
	}
	s.mu.Lock()
	c := s.cancel
	s.mu.Unlock()
	if c != nil {
		c(cause)
	}
}

// CancelAll aborts the running turn and drops queued prompts.
func (s *Session) CancelAll(cause error) {
	s.mu.Lock()
	dropped := s.inbox
	s.inbox = nil
	s.mu.Unlock()
	if n := len(dropped); n > 0 {
		// Record that the receipted prompts were dropped (the original's
		// outcome "canceled"), so a resume does not run them after all.
		if _, err := s.emit(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", RemovedCount: &n,
			Inserted: []event.Message{}, Outcome: event.InboxCanceled}); err != nil {
			s.rt.log.Warn("dropped prompts not recorded", "session", s.id, "err", err)
		}
	}
	for _, t := range dropped {
		t.result = TurnResult{Seq: -1, Reason: event.TurnEndReason{Kind: event.ReasonAborted, Reason: &event.KindOnly{Kind: "user"}}}
		close(t.done)
	}
	s.Cancel(cause)
}

// Wait blocks until the session is idle (no turn running or queued).
func (s *Session) Wait(ctx context.Context) error {
	s.mu.Lock()
	ch := s.idle
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close cancels the running turn, drops queued prompts, waits for the turn
// to settle, kills its background jobs and closes the log (flushing and
// releasing its lease). The session leaves the runtime. Idempotent: a later
// or concurrent call waits for the first to finish and returns its result,
// or ctx's error if ctx ends first — never success while the log is still
// being flushed.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		done := s.closeDone
		s.mu.Unlock()
		select {
		case <-done:
			return s.closeErr // written before done was closed
		case <-ctx.Done():
			return fmt.Errorf("session %s: waiting for another Close: %w", s.id, ctx.Err())
		}
	}
	s.closed = true
	s.closeDone = make(chan struct{})
	s.mu.Unlock()
	s.CancelAll(errDisposed)
	if err := s.Wait(ctx); err != nil {
		// The turn did not settle in time; close the log anyway so the
		// lease is released. The turn's late commits fail with ErrClosed.
		s.rt.log.Warn("session did not settle before close", "session", s.id, "err", err)
	}
	s.jobs.Close() // no background job outlives its session
	s.removeTmp()
	mcpErr := s.closeMCP(ctx)
	err := errors.Join(s.lg.Close(), mcpErr)
	s.rt.forget(s)
	s.closeErr = err
	close(s.closeDone)
	s.finish()
	s.rt.sessionClosed(s)
	return err
}

// Closed reports whether Close was called.
func (s *Session) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// turnText is the last non-empty assistant text of turn in history.
func turnText(history []event.Event, turn int) string {
	for i := len(history) - 1; i >= 0; i-- {
		ev := history[i]
		if ev.Type == event.TypeTurnStart {
			if d, err := event.Decode[event.TurnStart](ev); err == nil && d.Turn == turn {
				return ""
			}
		}
		if ev.Type != event.TypeAssistantMessage {
			continue
		}
		am, err := event.Decode[event.AssistantMessage](ev)
		if err != nil || am.Turn != turn {
			continue
		}
		if t := event.JoinText(am.Message.Content); t != "" {
			return t
		}
	}
	return ""
}

// ErrImageRefused is returned by SaveAttachment for an image that cannot
// be decoded safely (too many pixels or decoded bytes): a client's bad
// input, not dsh's failure.
var ErrImageRefused = errors.New("image refused")

// SaveAttachment stores image bytes in the session's attachment folder,
// named by content hash, and returns the durable reference. Every image
// passes the checks of read's (tool.FitImage): bounded decoded size,
// scaled down to what the model takes — whoever sent it (a client's
// prompt, an MCP server, a file).
func (s *Session) SaveAttachment(mediaType string, data []byte) (*event.Attachment, error) {
	if strings.HasPrefix(mediaType, "image/") && mediaType != "image/gif" {
		mt, fitted, _, _, _, err := tool.FitImage(mediaType, data)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrImageRefused, err)
		}
		mediaType, data = mt, fitted
	}
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])
	dir := filepath.Join(s.lg.Dir(), "attachments")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("attachment store: %w", err)
	}
	path := filepath.Join(dir, "sha256-"+hexsum)
	if _, err := os.Stat(path); err != nil {
		tmp, err := os.CreateTemp(dir, ".tmp-*")
		if err != nil {
			return nil, fmt.Errorf("attachment store: %w", err)
		}
		_, werr := tmp.Write(data)
		serr := tmp.Sync()
		cerr := tmp.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			_ = os.Remove(tmp.Name())
			return nil, fmt.Errorf("attachment store: %w", err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			_ = os.Remove(tmp.Name())
			return nil, fmt.Errorf("attachment store: %w", err)
		}
	}
	a := &event.Attachment{AttachmentID: "sha256:" + hexsum, MediaType: mediaType, Bytes: int64(len(data))}
	if c, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		a.Width, a.Height = c.Width, c.Height
	}
	return a, nil
}

// LoadAttachment reads the bytes of a stored attachment.
func (s *Session) LoadAttachment(a *event.Attachment) ([]byte, error) {
	if a == nil || len(a.AttachmentID) != len("sha256:")+64 || a.AttachmentID[:7] != "sha256:" {
		return nil, fmt.Errorf("%w: bad attachment reference", ErrBadInput)
	}
	if _, err := hex.DecodeString(a.AttachmentID[7:]); err != nil {
		return nil, fmt.Errorf("%w: bad attachment reference", ErrBadInput)
	}
	return os.ReadFile(filepath.Join(s.lg.Dir(), "attachments", "sha256-"+a.AttachmentID[7:]))
}

// AdditionalDirs are the session's workspace roots besides its cwd.
func (s *Session) AdditionalDirs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.dirs...)
}

// SetAdditionalDirs replaces them with dirs (absolute paths; a door
// checks that they are directories), recording a session/directories
// event when the set differs from the one in force, so a resume in
// another process restores it. The same set again records nothing.
func (s *Session) SetAdditionalDirs(dirs []string) error {
	clean := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("%w: additional directory %q is not an absolute path", ErrBadInput, d)
		}
		clean = append(clean, filepath.Clean(d))
	}
	s.commitMu.Lock()
	s.mu.Lock()
	same := slices.Equal(s.dirs, clean)
	s.mu.Unlock()
	if same {
		s.commitMu.Unlock()
		return nil
	}
	d := event.SessionDirs{AdditionalDirectories: clean}
	ev, err := s.commitLocked(event.New(event.TypeSessionDirs, d), d)
	s.commitMu.Unlock()
	if err == nil {
		s.rt.signal(s, ev.Seq)
	}
	return err
}

// Rules are the remembered permission rules of the session's project.
func (s *Session) Rules() *permission.Rules { return s.rt.rulesFor(s.header.Cwd) }

// Decide runs the session's permission gate for a request (the subagent
// gateway answers a child's permission requests with its parent's gate).
func (s *Session) Decide(ctx context.Context, req permission.Request) permission.Decision {
	return s.decide(ctx, req, nil)
}

// decide is Decide with the gate adjusted by with (a hook's verdict, a
// command's grants) when with is not nil.
func (s *Session) decide(ctx context.Context, req permission.Request, with func(*permission.Gate)) permission.Decision {
	s.mu.Lock()
	g := permission.Gate{Mode: s.mode, Rules: s.rt.rulesFor(s.header.Cwd), Asker: s.asker, Lists: s.rt.cfg.ToolLists,
		Turn: turnGrants(s.turnCmd)}
	s.mu.Unlock()
	if with != nil {
		with(&g)
	}
	if req.Workspace == "" {
		req.Workspace = s.header.Cwd
		req.Roots = s.AdditionalDirs()
	}
	req.SessionID = s.id
	return g.Decide(ctx, req)
}

// Record commits an event on behalf of a tool (todo_write, subagent links).
func (s *Session) Record(ev event.Event) error {
	if err := ev.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	_, err := s.commit(ev)
	return err
}

// Runtime returns the runtime the session lives in.
func (s *Session) Runtime() *Runtime { return s.rt }
