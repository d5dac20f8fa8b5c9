package core

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// streamed is a step that streams its answer as deltas before returning it,
// as a real provider does.
func streamed(reasoning, text []string, calls ...model.ToolCall) func(ctx context.Context, req *model.Request, on func(model.Delta)) (*model.Response, error) {
	return func(_ context.Context, _ *model.Request, on func(model.Delta)) (*model.Response, error) {
		resp := &model.Response{FinishReason: "stop", Usage: &event.Usage{InputTokens: 10, OutputTokens: 2}}
		for _, r := range reasoning {
			on(model.Delta{Kind: model.DeltaReasoning, Text: r})
			resp.Reasoning += r
		}
		for _, t := range text {
			on(model.Delta{Kind: model.DeltaText, Text: t})
			resp.Text += t
		}
		for i, c := range calls {
			on(model.Delta{Kind: model.DeltaToolCall, Index: i, ID: c.ID, Name: c.Name})
			for _, piece := range []string{c.Arguments[:len(c.Arguments)/2], c.Arguments[len(c.Arguments)/2:]} {
				on(model.Delta{Kind: model.DeltaToolCall, Index: i, ID: c.ID, Text: piece})
			}
			resp.ToolCalls = append(resp.ToolCalls, c)
			resp.FinishReason = "tool_calls"
		}
		return resp, nil
	}
}

// streamProvider is testProvider for steps that stream deltas.
type streamProvider struct {
	steps []func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error)
	reqs  []*model.Request
}

func (p *streamProvider) Name() string { return "test" }
func (p *streamProvider) Caps(string) model.Caps {
	return model.Caps{Efforts: []string{"off", "high"}, DefaultEffort: "high", DefaultMaxTokens: 4096}
}
func (p *streamProvider) Stream(ctx context.Context, req *model.Request, on func(model.Delta)) (*model.Response, error) {
	cp := *req
	cp.Messages = slices.Clone(req.Messages)
	p.reqs = append(p.reqs, &cp)
	if len(p.steps) == 0 {
		return nil, &model.Error{Class: model.ClassScript, Message: "exhausted"}
	}
	f := p.steps[0]
	p.steps = p.steps[1:]
	return f(ctx, req, on)
}

func streamHarness(t *testing.T, p *streamProvider) *Session {
	t.Helper()
	h := newHarness(t)
	h.rt.cfg.NewProvider = func(string) (model.Provider, error) { return p, nil }
	h.rt.providers = map[string]model.Provider{}
	return h.session()
}

// chunkKinds renders the chunks and committed events of evs from seq from
// on, as the differential test against the original's transcripts does.
func chunkKinds(t *testing.T, evs []event.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Type != event.TypeAssistantChunk {
			out = append(out, ev.Type)
			continue
		}
		c, err := event.Decode[event.AssistantChunk](ev)
		if err != nil {
			t.Fatal(err)
		}
		k := c.Chunk.Type
		if c.Chunk.Index != nil {
			k += fmt.Sprintf("[%d]", *c.Chunk.Index)
		}
		out = append(out, k)
	}
	return out
}

func TestChunksOfATextStep(t *testing.T) {
	p := &streamProvider{steps: []func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error){
		streamed([]string{"thinking about:", " hi"}, []string{"ECHO: ", "h", "i"}),
		streamed(nil, []string{"again"}),
	}}
	s := streamHarness(t, p)
	var passed []model.Delta
	s.Bind(nil, nil, nil, func(d model.Delta) { passed = append(passed, d) })
	if res := run(t, s, "hi"); res.Reason.Kind != event.ReasonCompleted || res.Text != "ECHO: hi" {
		t.Fatalf("result %+v", res)
	}
	evs := s.Events()
	got := strings.Join(chunkKinds(t, evs), " ")
	want := "agent/inbox/spliced turn/start agent/inbox/spliced checkpoint/files step/start context/environment user/message session/title request/header request/context " +
		"block-start[0] reasoning-delta[0] reasoning-delta[0] block-start[1] text-delta[1] text-delta[1] text-delta[1] " +
		"block-end[0] block-end[1] usage finish assistant/message step/end checkpoint/files turn/end"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if len(passed) != 5 {
		t.Fatalf("the door's onDelta got %d deltas, want 5", len(passed))
	}
	var chunkSeqs []int64
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeAssistantChunk:
			chunkSeqs = append(chunkSeqs, ev.Seq)
			if ev.SurfaceOp != nil || ev.Ignorable {
				t.Fatalf("chunk envelope %+v", ev)
			}
		case event.TypeAssistantMessage:
			if !slices.Equal(ev.SourceEventSeqs, chunkSeqs) {
				t.Fatalf("sourceEventSeqs %v, want %v", ev.SourceEventSeqs, chunkSeqs)
			}
		case event.TypeSessionTitle:
			var raw map[string]json.RawMessage
			_ = json.Unmarshal(ev.Data, &raw)
			if string(raw["messageSeqs"]) != "[6]" || string(raw["source"]) != `{"kind":"fallback"}` {
				t.Fatalf("session/title %s", ev.Data)
			}
		case event.TypeRequestHeader:
			h, _ := event.Decode[event.RequestHeader](ev)
			c := h.Header.Config
			if c.MaxTokens != 4096 || c.ReasoningEffort != "high" || h.Header.AdapterDefaults == nil ||
				!h.Header.AdapterDefaults.MaxTokens || !h.Header.AdapterDefaults.ReasoningEffort {
				t.Fatalf("request/header %s", ev.Data)
			}
		}
	}
	// Block-ends carry the blocks as committed; finish says why.
	end1, _ := event.Decode[event.AssistantChunk](evs[18])
	if b := end1.Chunk.Block; b == nil || b.Type != event.BlockText || b.Text != "ECHO: hi" {
		t.Fatalf("block-end %s", evs[18].Data)
	}
	fin, _ := event.Decode[event.AssistantChunk](evs[20])
	if fin.Chunk.Reason == nil || fin.Chunk.Reason.Kind != event.FinishStop {
		t.Fatalf("finish %s", evs[20].Data)
	}

	// The model never sees a chunk: the next turn's request holds the
	// conversation only, and the header is not re-recorded (the defaults
	// it shows are the provider's, not a config change).
	run(t, s, "again")
	msgs := p.reqs[1].Messages
	if len(msgs) != 5 || msgs[3].Role != "assistant" || msgs[3].Content != "ECHO: hi" || msgs[4].Content != "again" {
		t.Fatalf("second request messages %+v", msgs)
	}
	headers := 0
	for _, ev := range s.Events() {
		if ev.Type == event.TypeRequestHeader {
			headers++
		}
	}
	if headers != 1 {
		t.Fatalf("%d request/header events, want 1", headers)
	}
}

func TestChunksOfAToolStep(t *testing.T) {
	call := model.ToolCall{ID: "call_0", Name: "read", Arguments: `{"file_path":"missing.txt"}`}
	p := &streamProvider{steps: []func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error){
		streamed([]string{"look"}, nil, call),
		streamed(nil, []string{"done"}),
	}}
	s := streamHarness(t, p)
	run(t, s, "read it")
	evs := s.Events()
	got := strings.Join(chunkKinds(t, evs), " ")
	want := "block-start[0] reasoning-delta[0] block-start[1] tool-call-delta[1] tool-call-delta[1] tool-call-delta[1] " +
		"block-end[0] block-end[1] usage finish assistant/message"
	if !strings.Contains(got, want) {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	var callSeq int64 = -1
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeAssistantChunk:
			c, _ := event.Decode[event.AssistantChunk](ev)
			if c.Chunk.Type == event.ChunkToolCallDelta && (c.Chunk.ID != "call_0" || c.Chunk.Name != "read" || c.Chunk.ArgumentsDelta == nil) {
				t.Fatalf("tool-call-delta %s", ev.Data)
			}
			if c.Chunk.Type == event.ChunkFinish && c.Turn == 1 && c.Step == 1 && c.Chunk.Reason.Kind != event.FinishToolCalls {
				t.Fatalf("finish %s", ev.Data)
			}
		case event.TypeToolCall:
			callSeq = ev.Seq
		case event.TypeToolResult:
			if !slices.Equal(ev.SourceEventSeqs, []int64{callSeq}) {
				t.Fatalf("tool/result sourceEventSeqs %v, want [%d]", ev.SourceEventSeqs, callSeq)
			}
		}
	}
}

func TestChunksOfAFailedAttempt(t *testing.T) {
	broken := func(_ context.Context, _ *model.Request, on func(model.Delta)) (*model.Response, error) {
		on(model.Delta{Kind: model.DeltaText, Text: "par"})
		return nil, &model.Error{Class: model.ClassServer, Message: "dropped"}
	}
	p := &streamProvider{steps: []func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error){
		broken, streamed(nil, []string{"whole"}),
	}}
	s := streamHarness(t, p)
	run(t, s, "go")
	evs := s.Events()
	got := strings.Join(chunkKinds(t, evs), " ")
	want := "block-start[0] text-delta[0] finish assistant/attempt block-start[0] text-delta[0] block-end[0] usage finish assistant/message"
	if !strings.Contains(got, want) {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	var second []int64
	for _, ev := range evs {
		if ev.Type == event.TypeAssistantAttempt {
			second = second[:0]
		}
		if ev.Type == event.TypeAssistantChunk {
			second = append(second, ev.Seq)
		}
		if ev.Type == event.TypeAssistantMessage && !slices.Equal(ev.SourceEventSeqs, second) {
			t.Fatalf("sourceEventSeqs %v, want the retry's chunks %v", ev.SourceEventSeqs, second)
		}
	}
	for _, ev := range evs {
		if ev.Type == event.TypeAssistantChunk {
			c, _ := event.Decode[event.AssistantChunk](ev)
			if c.Chunk.Type == event.ChunkFinish && c.Chunk.Reason.Kind == event.FinishError {
				if c.Chunk.Reason.Failure == nil || c.Chunk.Reason.Failure.Code != string(model.ClassServer) {
					t.Fatalf("failed finish %s", ev.Data)
				}
				return
			}
		}
	}
	t.Fatal("no finish of kind error for the failed attempt")
}

// TestChunksCostNoFsync: a step that streams a thousand deltas fsyncs as
// often as one that streams one (chunks are not commit points; a reply of
// no text at all would be retried as EMPTY_RESPONSE).
func TestChunksCostNoFsync(t *testing.T) {
	syncsOf := func(pieces int) int64 {
		text := make([]string, pieces)
		for i := range text {
			text[i] = "x"
		}
		p := &streamProvider{steps: []func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error){
			streamed(nil, text)}}
		s := streamHarness(t, p)
		before := s.lg.Syncs()
		run(t, s, "go")
		return s.lg.Syncs() - before
	}
	quiet, loud := syncsOf(1), syncsOf(1000)
	if quiet == 0 || loud != quiet {
		t.Fatalf("fsyncs per turn: %d with one delta, %d with 1000", quiet, loud)
	}
}

// TestWakeLeavesLiveStreamBehind: a resumed session holds its committed
// events with their own seqs but not the chunks of earlier processes; its
// conversation is the one the live session had; a cursor from any seq,
// chunk seqs included, reads the committed events in order and then the
// new process's live chunks; the transcript has no chunk of the past.
func TestWakeLeavesLiveStreamBehind(t *testing.T) {
	p := &streamProvider{steps: []func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error){
		streamed([]string{"think", "ing"}, []string{"ECHO: ", "h", "i"}),
		streamed(nil, []string{"second ", "answer"}),
		streamed(nil, []string{"after ", "the wake"}),
	}}
	h := newHarness(t)
	h.rt.cfg.NewProvider = func(string) (model.Provider, error) { return p, nil }
	h.rt.providers = map[string]model.Provider{}
	s := h.session()
	run(t, s, "hi")
	run(t, s, "again")
	before := s.Events()
	var committed []event.Event
	for _, ev := range before {
		if ev.Type != event.TypeAssistantChunk {
			committed = append(committed, ev)
		}
	}
	if len(committed) == len(before) {
		t.Fatal("the fixture streamed no chunks")
	}
	live := fmt.Sprint(s.conv.build(s, s.header0, true))

	s2 := reopen(t, s, h.rt)
	got := s2.Events()
	if len(got) < len(committed) {
		t.Fatalf("resumed with %d events, want at least the %d committed", len(got), len(committed))
	}
	for i, ev := range committed {
		if got[i].Seq != ev.Seq || got[i].Type != ev.Type || string(got[i].Data) != string(ev.Data) {
			t.Fatalf("event %d: got %s seq %d, want %s seq %d", i, got[i].Type, got[i].Seq, ev.Type, ev.Seq)
		}
	}
	if again := fmt.Sprint(s2.conv.build(s2, s2.header0, true)); again != live {
		t.Fatalf("resumed conversation differs:\n live %s\nagain %s", live, again)
	}
	for _, from := range []int64{-1, before[len(before)/2].Seq, before[len(before)-1].Seq} {
		cur := s2.Follow(from)
		var seqs []int64
		for {
			evs, _, err := cur.Read(3)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				seqs = append(seqs, ev.Seq)
			}
		}
		var want []int64
		for _, ev := range got {
			if ev.Seq > from {
				want = append(want, ev.Seq)
			}
		}
		if !slices.Equal(seqs, want) {
			t.Fatalf("cursor after %d read %v, want %v", from, seqs, want)
		}
	}

	cur := s2.Follow(s2.LastSeq())
	run(t, s2, "once more")
	var kinds []string
	for {
		evs, _, err := cur.Read(100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		kinds = append(kinds, chunkKinds(t, evs)...)
	}
	if !slices.Contains(kinds, "text-delta[0]") {
		t.Fatalf("the new turn's live chunks were not read: %v", kinds)
	}
	tr, err := s2.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range tr {
		if ev.Type == event.TypeAssistantChunk && ev.Seq <= before[len(before)-1].Seq {
			t.Fatalf("the transcript holds chunk %d of the earlier process", ev.Seq)
		}
	}
}
