package client

import (
	"github.com/dsh-dev/dsh/core/event"
)

// FinishReason is how a turn ended: the reason.kind of its turn/end.
type FinishReason string

// Finish reasons of a turn.
const (
	FinishCompleted   FinishReason = event.ReasonCompleted   // the model answered without asking for tools
	FinishAborted     FinishReason = event.ReasonAborted     // cancelled (by the host, a parent, or disposal)
	FinishError       FinishReason = event.ReasonError       // the model or the runtime failed
	FinishMaxTokens   FinishReason = event.ReasonMaxTokens   // the model hit its output cap
	FinishBlocked     FinishReason = event.ReasonBlocked     // the step cap, or a loop of identical calls
	FinishInterrupted FinishReason = event.ReasonInterrupted // the runtime stopped mid-turn (crash repair)
	FinishRefusal     FinishReason = event.ReasonRefusal     // the provider's content filter
)

// StopReason is how one model call ended: the reason.kind of its finish
// chunk.
type StopReason string

// Stop reasons of a model call.
const (
	StopEndTurn   StopReason = event.FinishStop      // an answer with no tool calls
	StopToolCalls StopReason = event.FinishToolCalls // the model asked for tools
	StopMaxTokens StopReason = event.FinishMaxTokens // cut at the output cap
	StopAborted   StopReason = event.FinishAborted   // cancelled mid-stream
	StopError     StopReason = event.FinishError     // the attempt failed; its partial blocks are void
	StopRefusal   StopReason = event.FinishRefusal   // the provider's content filter
)

// Event is one session event as the runtime sent it, with typed views of
// the kinds a host renders.
type Event struct {
	SessionID string
	event.Event
}

// Chunk returns the live-stream chunk of an assistant/chunk event.
func (e Event) Chunk() (event.AssistantChunk, bool) {
	if e.Type != event.TypeAssistantChunk {
		return event.AssistantChunk{}, false
	}
	c, err := event.Decode[event.AssistantChunk](e.Event)
	return c, err == nil
}

// TextDelta returns the text of a text-delta chunk.
func (e Event) TextDelta() (string, bool) { return e.delta(event.ChunkTextDelta) }

// ReasoningDelta returns the text of a reasoning-delta chunk.
func (e Event) ReasoningDelta() (string, bool) { return e.delta(event.ChunkReasoningDelta) }

func (e Event) delta(kind string) (string, bool) {
	c, ok := e.Chunk()
	if !ok || c.Chunk.Type != kind || c.Chunk.Text == nil {
		return "", false
	}
	return *c.Chunk.Text, true
}

// Stop returns the stop reason of a finish chunk.
func (e Event) Stop() (StopReason, bool) {
	c, ok := e.Chunk()
	if !ok || c.Chunk.Type != event.ChunkFinish || c.Chunk.Reason == nil {
		return "", false
	}
	return StopReason(c.Chunk.Reason.Kind), true
}

// Message returns the committed message of an assistant/message event.
func (e Event) Message() (event.AssistantMessage, bool) {
	if e.Type != event.TypeAssistantMessage {
		return event.AssistantMessage{}, false
	}
	m, err := event.Decode[event.AssistantMessage](e.Event)
	return m, err == nil
}

// TurnEnd returns how a turn ended, for a turn/end event.
func (e Event) TurnEnd() (FinishReason, bool) {
	if e.Type != event.TypeTurnEnd {
		return "", false
	}
	k, err := turnEndKind(e.Event)
	return k, err == nil
}
