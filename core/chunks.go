package core

import (
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// chunkStream records the live stream of one model call as assistant/chunk
// events, in the original's shapes and order: a block-start before each
// block's first delta (blocks numbered in the order they first stream), the
// deltas, and once the call is complete a block-end per block in index
// order, then usage, then finish. Chunks are commits like any event (seq,
// log, publish) but not commit points: the store appends them without
// fsync, and the conversation never folds them. Each chunk is one log line;
// they are not coalesced on disk.
//
// It runs on the provider's streaming goroutine (deltas arrive one at a
// time, in order), and passes every delta on to the door's own progress
// callback after recording it.
type chunkStream struct {
	s          *Session
	turn, step int
	next       func(model.Delta)

	blocks    []chunkBlock
	reasoning int         // block index of the reasoning block, -1 if none
	text      int         // block index of the text block, -1 if none
	calls     map[int]int // provider call index -> block index
	seqs      []int64     // seqs of this attempt's chunks
	err       error       // first failure to record a chunk
}

type chunkBlock struct {
	kind     string // event.Block*
	id, name string // tool calls
}

func (s *Session) newChunkStream(turn, step int, next func(model.Delta)) *chunkStream {
	c := &chunkStream{s: s, turn: turn, step: step, next: next}
	c.reset()
	return c
}

// reset starts a new attempt.
func (c *chunkStream) reset() {
	c.blocks = c.blocks[:0]
	c.reasoning, c.text = -1, -1
	c.calls = map[int]int{}
	c.seqs = nil
}

// delta is the provider's onDelta.
func (c *chunkStream) delta(d model.Delta) {
	switch d.Kind {
	case model.DeltaReasoning:
		i := c.open(&c.reasoning, event.BlockReasoning)
		c.emit(event.Chunk{Type: event.ChunkReasoningDelta, Index: &i, Text: &d.Text})
	case model.DeltaText:
		i := c.open(&c.text, event.BlockText)
		c.emit(event.Chunk{Type: event.ChunkTextDelta, Index: &i, Text: &d.Text})
	case model.DeltaToolCall:
		i, ok := c.calls[d.Index]
		if !ok {
			i = -1
			c.open(&i, event.BlockToolCall)
			c.calls[d.Index] = i
		}
		b := &c.blocks[i]
		if b.id == "" {
			b.id = d.ID
		}
		if b.name == "" {
			b.name = d.Name
		}
		c.emit(event.Chunk{Type: event.ChunkToolCallDelta, Index: &i, ID: b.id, Name: b.name, ArgumentsDelta: &d.Text})
	}
	c.next(d)
}

// open returns the block index held in *idx, starting the block first if
// *idx is -1.
func (c *chunkStream) open(idx *int, kind string) int {
	if *idx < 0 {
		*idx = len(c.blocks)
		c.blocks = append(c.blocks, chunkBlock{kind: kind})
		i := *idx
		c.emit(event.Chunk{Type: event.ChunkBlockStart, Index: &i, BlockType: kind})
	}
	return *idx
}

func (c *chunkStream) emit(ch event.Chunk) {
	if c.err != nil {
		return
	}
	ev, err := c.s.emit(event.TypeAssistantChunk, event.AssistantChunk{Turn: c.turn, Step: c.step, Chunk: ch})
	if err != nil {
		c.err = err
		return
	}
	c.seqs = append(c.seqs, ev.Seq)
}

// complete closes the stream of a successful call: a block-end per block
// with the block as it will be committed (calls carry their final ids),
// usage, finish. Blocks the provider returned without streaming them are
// started here. It returns the seqs of the attempt's chunks, for the
// assistant/message's sourceEventSeqs.
func (c *chunkStream) complete(resp *model.Response, calls []model.ToolCall) ([]int64, error) {
	if resp.Reasoning != "" {
		c.open(&c.reasoning, event.BlockReasoning)
	}
	if resp.Text != "" {
		c.open(&c.text, event.BlockText)
	}
	// The k-th call block to stream is the k-th call of the response.
	callBlocks := make([]int, 0, len(calls))
	for i, b := range c.blocks {
		if b.kind == event.BlockToolCall {
			callBlocks = append(callBlocks, i)
		}
	}
	for len(callBlocks) < len(calls) {
		i := -1
		c.open(&i, event.BlockToolCall)
		callBlocks = append(callBlocks, i)
	}
	ends := make([]event.ContentBlock, len(c.blocks))
	for i, b := range c.blocks {
		ends[i] = event.ContentBlock{Type: b.kind}
	}
	if c.reasoning >= 0 {
		ends[c.reasoning] = event.Reasoning(resp.Reasoning)
	}
	if c.text >= 0 {
		ends[c.text] = event.Text(resp.Text)
	}
	for k, call := range calls {
		ends[callBlocks[k]] = event.ContentBlock{Type: event.BlockToolCall, ID: call.ID, Name: call.Name, Arguments: call.Arguments}
	}
	for i := range ends {
		c.emit(event.Chunk{Type: event.ChunkBlockEnd, Index: &i, Block: &ends[i]})
	}
	if resp.Usage != nil {
		c.emit(event.Chunk{Type: event.ChunkUsage, Usage: resp.Usage})
	}
	c.emit(event.Chunk{Type: event.ChunkFinish, Reason: &event.FinishReason{Kind: finishKind(resp.FinishReason, len(calls))}})
	return c.seqs, c.err
}

// fail closes the stream of a failed attempt with a finish of kind error
// (or aborted), so a host rendering the partial blocks knows to drop them.
// An attempt that streamed nothing records nothing.
func (c *chunkStream) fail(info *event.ErrorInfo, aborted bool) error {
	if len(c.blocks) > 0 {
		r := &event.FinishReason{Kind: event.FinishError, Failure: info}
		if aborted {
			r = &event.FinishReason{Kind: event.FinishAborted}
		}
		c.emit(event.Chunk{Type: event.ChunkFinish, Reason: r})
	}
	return c.err
}

// finishKind maps a provider finish_reason onto the original's finish kinds.
func finishKind(reason string, calls int) string {
	switch reason {
	case "length":
		return event.FinishMaxTokens
	case "content_filter":
		return event.FinishRefusal
	}
	if calls > 0 {
		return event.FinishToolCalls
	}
	return event.FinishStop
}
