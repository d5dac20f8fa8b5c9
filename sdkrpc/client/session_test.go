package client

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/dispatch"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

func ptr[T any](v T) *T { return &v }

// chunk sends an assistant/chunk.
func (f *fakeServer) chunk(sessionID string, c event.Chunk) {
	f.event(sessionID, event.TypeAssistantChunk, event.AssistantChunk{Turn: 1, Step: 1, Chunk: c})
}

// streamingTurn answers a prompt with a streamed text answer.
func streamingTurn(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
	if call.Method != protocol.MethodSessionPrompt {
		return f.defaultHandle(ctx, call)
	}
	sid := promptParams(f.t, call).SessionID
	f.receipt(sid, "m", "x")
	f.status(sid, protocol.StatusRunning)
	f.chunk(sid, event.Chunk{Type: event.ChunkBlockStart, Index: ptr(0), BlockType: event.BlockReasoning})
	f.chunk(sid, event.Chunk{Type: event.ChunkReasoningDelta, Index: ptr(0), Text: ptr("hmm")})
	f.chunk(sid, event.Chunk{Type: event.ChunkBlockStart, Index: ptr(1), BlockType: event.BlockText})
	for _, d := range []string{"hel", "lo"} {
		f.chunk(sid, event.Chunk{Type: event.ChunkTextDelta, Index: ptr(1), Text: ptr(d)})
	}
	f.chunk(sid, event.Chunk{Type: event.ChunkFinish, Reason: &event.FinishReason{Kind: event.FinishStop}})
	f.assistant(sid, 1, event.Reasoning("hmm"), event.Text("hello"))
	f.turnEnd(sid, 1, event.ReasonCompleted)
	f.status(sid, protocol.StatusIdle)
	return protocol.SessionPromptResult{MessageID: "m"}, nil
}

func TestSession_RunStreamsTextDeltas(t *testing.T) {
	c, _ := newFake(t, Options{}, streamingTurn)
	var text, reasoning strings.Builder
	var stops []StopReason
	res, err := c.Session("s").Run(tctx(t), "x", OnText(func(d string) { text.WriteString(d) }),
		OnReasoning(func(d string) { reasoning.WriteString(d) }),
		OnEvent(func(e Event) {
			if r, ok := e.Stop(); ok {
				stops = append(stops, r)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != "hello" || reasoning.String() != "hmm" || len(stops) != 1 || stops[0] != StopEndTurn {
		t.Fatalf("text %q reasoning %q stops %v", text.String(), reasoning.String(), stops)
	}
	if res.FinishReason != FinishCompleted || res.FinalResponse != "hello" {
		t.Fatalf("result %+v", res)
	}
}

func TestSession_EventsIterator(t *testing.T) {
	c, _ := newFake(t, Options{}, streamingTurn)
	s := c.NewSession()
	ctx := tctx(t)
	events := s.Events(ctx) // subscribed from here on
	if _, err := s.Prompt(ctx, Text("x")); err != nil {
		t.Fatal(err)
	}
	got := make(chan []string, 1)
	go func() {
		var types []string
		for ev, err := range events {
			if err != nil {
				t.Error(err)
				break
			}
			types = append(types, ev.Type)
			if r, ok := ev.TurnEnd(); ok {
				if r != FinishCompleted {
					t.Errorf("turn ended %s", r)
				}
				break
			}
		}
		got <- types
	}()
	types := <-got
	if want := "agent/inbox/spliced,assistant/chunk,assistant/chunk,assistant/chunk,assistant/chunk,assistant/chunk,assistant/chunk,assistant/message,turn/end"; strings.Join(types, ",") != want {
		t.Fatalf("events %v", types)
	}
	if n := len(*c.subs.Load()); n != 0 {
		t.Fatalf("%d subscriptions left after the loop broke", n)
	}
}

// TestSession_RunCtxCancelCancelsTheTurn: a host that gives up on Run (its
// ctx ends) cancels the turn on the runtime, and Run returns once the
// aborted turn has ended, with what it collected.
func TestSession_RunCtxCancelCancelsTheTurn(t *testing.T) {
	c, f := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		switch call.Method {
		case protocol.MethodInitialize:
			return protocol.InitializeResult{ServerInfo: protocol.ServerInfo{Name: protocol.ServerName},
				Capabilities: &protocol.ServerCapabilities{Cancel: true}}, nil
		case protocol.MethodSessionPrompt:
			f.receipt("s", "m", "x")
			f.status("s", protocol.StatusRunning)
			f.assistant("s", 1, event.Text("partial"))
			return protocol.SessionPromptResult{MessageID: "m"}, nil // runs until cancelled
		case protocol.MethodSessionCancel:
			f.turnEnd("s", 1, event.ReasonAborted)
			f.status("s", protocol.StatusIdle)
			return protocol.Empty{}, nil
		}
		return f.defaultHandle(ctx, call)
	})
	if _, err := c.Initialize(tctx(t), protocol.InitializeParams{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, err := c.Session("s").Run(ctx, "x", OnEvent(func(e Event) {
		if e.Type == event.TypeAssistantMessage {
			cancel() // the host gives up mid-turn
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if len(f.callsOf(protocol.MethodSessionCancel)) != 1 {
		t.Fatal("the turn was not cancelled on the runtime")
	}
	if res.FinishReason != FinishAborted || res.FinalResponse != "partial" {
		t.Fatalf("result %+v", res)
	}
}

// TestSubscription_OverflowFailsOnlyTheSlowSubscriber: a subscriber that
// never reads is failed once its unread notifications pass the bound; what
// it had queued stays readable, and the connection and a reading
// subscriber get everything.
func TestSubscription_OverflowFailsOnlyTheSlowSubscriber(t *testing.T) {
	const n = 2000
	c, _ := newFake(t, Options{SubscriptionBufferBytes: 4096}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		if call.Method == "flood" {
			for range n {
				f.status("s", protocol.StatusRunning)
			}
			f.status("other", protocol.StatusIdle)
		}
		return "ok", nil
	})
	slow := c.Subscribe(nil)
	defer slow.Close()
	other := c.Subscribe(func(n Notification) bool { return n.SessionID() == "other" })
	defer other.Close()
	if err := c.Request(tctx(t), "flood", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Request(tctx(t), "ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := other.Next(tctx(t)); err != nil || n.SessionID() != "other" {
		t.Fatalf("another subscription: %v %v", n, err)
	}
	queued := 0
	var err error
	for {
		if _, err = slow.Next(tctx(t)); err != nil {
			break
		}
		queued++
	}
	var oe *OverflowError
	if !errors.As(err, &oe) || queued == 0 || queued >= n || oe.Queued != queued || oe.Bytes > 4096 {
		t.Fatalf("slow subscriber: %d queued, then %v", queued, err)
	}
}

func TestBlocks(t *testing.T) {
	b, _ := Image("image/png", []byte{1, 2, 3}).MarshalJSON()
	want := `{"type":"image","data":"` + base64.StdEncoding.EncodeToString([]byte{1, 2, 3}) + `","mimeType":"image/png"}`
	if string(b) != want {
		t.Fatalf("image block %s", b)
	}
	if _, err := (Block{}).MarshalJSON(); err == nil {
		t.Fatal("the zero block marshalled")
	}
	c, f := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		return protocol.SessionPromptResult{MessageID: "m"}, nil
	})
	if _, err := c.Session("s").Prompt(tctx(t), Text("a"), Image("image/png", []byte{1})); err != nil {
		t.Fatal(err)
	}
	p := promptParams(t, f.callsOf(protocol.MethodSessionPrompt)[0])
	if len(p.ContentBlocks) != 2 || blockText(t, p.ContentBlocks[0]) != "a" || !strings.Contains(string(p.ContentBlocks[1]), `"data":"AQ=="`) {
		t.Fatalf("prompt params %s", f.callsOf(protocol.MethodSessionPrompt)[0].Params)
	}
	if _, err := c.Session("s").Prompt(tctx(t)); err == nil {
		t.Fatal("an empty prompt was sent")
	}
}

// commandServer answers session/commands with a menu and a "/mcp" prompt
// as a command dsh answered itself.
func commandServer(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
	switch call.Method {
	case protocol.MethodSessionCommands:
		return protocol.SessionCommandsResult{Commands: []protocol.CommandInfo{{Name: "mcp", Description: "List MCP servers"},
			{Name: "compact", Description: "Summarise", Hint: "focus"}}}, nil
	case protocol.MethodSessionPrompt:
		return protocol.SessionPromptResult{Command: &protocol.CommandOutcome{Name: "mcp", Reply: "No MCP servers."}}, nil
	}
	return f.defaultHandle(ctx, call)
}

func TestSession_CommandsAndACommandPrompt(t *testing.T) {
	c, _ := newFake(t, Options{}, commandServer)
	s := c.Session("s")
	cmds, err := s.Commands(tctx(t))
	if err != nil || len(cmds) != 2 || cmds[1].Hint != "focus" {
		t.Fatalf("commands %+v (%v)", cmds, err)
	}
	// Run returns at once with the reply: no turn runs for it.
	res, err := s.Run(tctx(t), "/mcp")
	if err != nil || res.Command == nil || res.FinalResponse != "No MCP servers." || res.MessageID != "" {
		t.Fatalf("run /mcp: %+v (%v)", res, err)
	}
	id, err := s.Prompt(tctx(t), Text("/mcp"))
	if err != nil || id != "" {
		t.Fatalf("prompt /mcp: %q (%v)", id, err)
	}
}
