package client

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// Block is one block of prompt content: Text or Image.
type Block struct {
	raw json.RawMessage
}

// Text is a text block.
func Text(s string) Block { return Block{raw: protocol.TextBlock(s)} }

// Image is an image block: the bytes of a PNG, JPEG, WebP or GIF image,
// sent base64-encoded (the runtime stores it and the model sees it when it
// takes images).
func Image(mimeType string, data []byte) Block {
	b, _ := json.Marshal(struct {
		Type     string `json:"type"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	}{"image", base64.StdEncoding.EncodeToString(data), mimeType})
	return Block{raw: b}
}

// MarshalJSON implements json.Marshaler.
func (b Block) MarshalJSON() ([]byte, error) {
	if b.raw == nil {
		return nil, errors.New("client: the zero Block has no content; use Text or Image")
	}
	return b.raw, nil
}

// Session is a handle on one session of the runtime. The session itself is
// created by the runtime on its first prompt (or resumed from its log when
// the id names a stored session). A Session is cheap and safe for
// concurrent use; several handles may name the same session.
type Session struct {
	c  *Client
	id string
}

// Session returns a handle on the session named id (an empty id gets a
// fresh `session-<uuid hex>`, as the original clients make them).
func (c *Client) Session(id string) *Session {
	if id == "" {
		id = newSessionID()
	}
	return &Session{c: c, id: id}
}

// NewSession returns a handle on a new session with a fresh id.
func (c *Client) NewSession() *Session { return c.Session("") }

// ID is the session id.
func (s *Session) ID() string { return s.id }

// Prompt enqueues blocks as the session's next user message and returns
// its message id: an enqueue receipt, not an answer (a turn starts at once
// when none is running; otherwise the message waits its turn). Read the
// answer with Events, or use Run. A prompt that is one of the session's
// slash commands dsh answers itself ("/mcp") queues nothing: Prompt then
// returns "" (Send returns what the command did).
func (s *Session) Prompt(ctx context.Context, blocks ...Block) (string, error) {
	res, err := s.Send(ctx, blocks...)
	return res.MessageID, err
}

// Send is Prompt returning the whole answer: the message id, or, for a
// slash command dsh answered itself (our extension), what it did.
func (s *Session) Send(ctx context.Context, blocks ...Block) (protocol.SessionPromptResult, error) {
	var out protocol.SessionPromptResult
	if len(blocks) == 0 {
		return out, errors.New("client: a prompt needs at least one block")
	}
	var res struct {
		MessageID json.RawMessage          `json:"messageId"`
		Command   *protocol.CommandOutcome `json:"command"`
	}
	params := struct {
		SessionID     string  `json:"sessionId"`
		ContentBlocks []Block `json:"contentBlocks"`
	}{s.id, blocks}
	if err := s.c.Request(ctx, protocol.MethodSessionPrompt, params, &res); err != nil {
		return out, err
	}
	if res.Command != nil {
		out.Command = res.Command
		return out, nil
	}
	if json.Unmarshal(res.MessageID, &out.MessageID) != nil || out.MessageID == "" {
		return out, &ProtocolError{Msg: "session/prompt result requires a string messageId"}
	}
	return out, nil
}

// Commands lists the slash commands the session offers (our
// session/commands), for a menu; send one as a prompt, "/name args".
func (s *Session) Commands(ctx context.Context) ([]protocol.CommandInfo, error) {
	var res protocol.SessionCommandsResult
	err := s.c.Request(ctx, protocol.MethodSessionCommands, protocol.SessionCommandsParams{SessionID: s.id}, &res)
	return res.Commands, err
}

// Cancel ends the session's running turn `aborted` (our session/cancel;
// queued prompts stay queued).
func (s *Session) Cancel(ctx context.Context) error {
	return s.c.Request(ctx, protocol.MethodSessionCancel, protocol.SessionCancelParams{SessionID: s.id}, nil)
}

// Close disposes the session in the runtime and closes its log (our
// session/close). The handle may prompt again: that resumes the session.
func (s *Session) Close(ctx context.Context) error {
	return s.c.Request(ctx, protocol.MethodSessionClose, protocol.SessionCloseParams{SessionID: s.id}, nil)
}

// Compact compacts the session's history now (our session/compact),
// focusing the summary on focus if not empty; it returns once the
// checkpoint is committed.
func (s *Session) Compact(ctx context.Context, focus string) (protocol.SessionCompactResult, error) {
	var res protocol.SessionCompactResult
	err := s.c.Request(ctx, protocol.MethodSessionCompact, protocol.SessionCompactParams{SessionID: s.id, Focus: focus}, &res)
	return res, err
}

// Rewind takes the session back to before a turn, or undoes the last
// rewind (our session/rewind); the answer says what was restored.
func (s *Session) Rewind(ctx context.Context, p protocol.SessionRewindParams) (protocol.SessionRewindResult, error) {
	var res protocol.SessionRewindResult
	p.SessionID = s.id
	err := s.c.Request(ctx, protocol.MethodSessionRewind, p, &res)
	return res, err
}

// Events returns the session's events from the moment it is called, as an
// iterator to range over once: the live stream (Event.TextDelta,
// Event.ReasoningDelta, Event.Stop) and every committed event, as they
// arrive, until ctx ends, the loop breaks, or the transport closes (the
// error is then yielded once). Subscribing at the call, not at the loop,
// lets a host take the iterator, prompt, then range without missing the
// start of the answer. Only this session's own events are yielded (use
// SubscribeSessionTree for its subagents too). It is bounded like every
// subscription (Options.SubscriptionBufferBytes); its subscription ends
// with the loop, or with ctx if the iterator is never ranged over.
func (s *Session) Events(ctx context.Context) iter.Seq2[Event, error] {
	sub := s.c.Subscribe(func(n Notification) bool {
		return n.Method == protocol.NotifySessionEvent && n.sessionID == s.id
	})
	stop := context.AfterFunc(ctx, sub.Close)
	return func(yield func(Event, error) bool) {
		defer stop()
		defer sub.Close()
		for {
			n, err := sub.Next(ctx)
			if err != nil {
				yield(Event{}, err)
				return
			}
			p, err := n.Event()
			if err != nil {
				if !yield(Event{}, err) {
					return
				}
				continue
			}
			if !yield(Event{SessionID: p.SessionID, Event: p.Event}, nil) {
				return
			}
		}
	}
}

// RunOption adjusts one Run.
type RunOption func(*runOptions)

type runOptions struct {
	onText, onReasoning func(string)
	onEvent             func(Event)
	onNotification      func(Notification)
}

// OnText has Run call f with each live text delta of the session's model
// calls, as it streams (a failed attempt's partial text is followed by a
// finish chunk of kind error; see Event.Chunk).
func OnText(f func(delta string)) RunOption { return func(o *runOptions) { o.onText = f } }

// OnReasoning is OnText for reasoning deltas.
func OnReasoning(f func(delta string)) RunOption {
	return func(o *runOptions) { o.onReasoning = f }
}

// OnEvent has Run call f with each of the session's events as it arrives.
func OnEvent(f func(Event)) RunOption { return func(o *runOptions) { o.onEvent = f } }

// OnNotification has Run call f with every notification of the session
// tree it collects (the original clients' onNotification).
func OnNotification(f func(Notification)) RunOption {
	return func(o *runOptions) { o.onNotification = f }
}

// cancelGrace bounds how long Run waits, after its ctx ended, for the
// runtime to end the cancelled turn.
const cancelGrace = 5 * time.Second

// Run prompts the session with input as one text block and waits for the
// session to go idle: the original clients' owned run (see RunBlocks).
func (s *Session) Run(ctx context.Context, input string, opts ...RunOption) (*RunResult, error) {
	return s.RunBlocks(ctx, []Block{Text(input)}, opts...)
}

// RunBlocks is the original clients' owned run (spec §3.1): subscribe to
// the session tree, prompt, skip notifications until the receipt (the
// root's agent/inbox/spliced inserting our message id), then collect until
// the root's session.status idle, inclusive. Callbacks run on the caller's
// goroutine, in wire order.
//
// When ctx ends before the session is idle, Run cancels the turn on the
// runtime (when it offers session/cancel, as dsh does), collects the
// turn's end for a few seconds more, and returns what it collected with an
// error wrapping ctx's cause. On any error the result holds what was
// collected so far, so a caller can report partial output.
func (s *Session) RunBlocks(ctx context.Context, blocks []Block, opts ...RunOption) (*RunResult, error) {
	var o runOptions
	for _, f := range opts {
		f(&o)
	}
	res := &RunResult{SessionID: s.id}
	sub := s.c.SubscribeSessionTree(s.id)
	defer sub.Close()
	sent, err := s.Send(ctx, blocks...)
	if err != nil {
		return res, err
	}
	if sent.Command != nil {
		// A slash command dsh answered: no turn runs.
		res.Command, res.FinalResponse = sent.Command, sent.Command.Reply
		return res, nil
	}
	res.MessageID = sent.MessageID
	c := collector{res: res, root: s.id, opts: &o}
	err = c.collect(ctx, sub)
	if err == nil || ctx.Err() == nil || !s.c.cancels() {
		return res, err
	}
	// The host gave up: end the turn on the runtime too, and collect its
	// end (the aborted turn/end) within a short grace.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
	defer cancel()
	if cerr := s.Cancel(cctx); cerr != nil {
		return res, errors.Join(err, fmt.Errorf("cancel the turn: %w", cerr))
	}
	_ = c.collect(cctx, sub)
	return res, err
}

// cancels reports whether the runtime offers session/cancel.
func (c *Client) cancels() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info.Capabilities != nil && c.info.Capabilities.Cancel
}

// newRequestID returns a fresh request id `req_<uuid hex>`.
func newRequestID() string {
	u := uuid.New()
	return "req_" + hex.EncodeToString(u[:])
}

// newSessionID returns a fresh session id `session-<uuid hex>`.
func newSessionID() string {
	u := uuid.New()
	return "session-" + hex.EncodeToString(u[:])
}
