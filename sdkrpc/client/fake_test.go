package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/dispatch"
	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// fakeServer is an in-process SDK runtime over a pipe, scripted per test.
// It is built from the same ndjson stream and dispatcher as the real server
// so the client is tested against real framing.
type fakeServer struct {
	t    *testing.T
	conn *jsonrpc2.Conn
	h    *dispatch.Handler

	mu    sync.Mutex
	seq   map[string]int64
	calls []*dispatch.Call
	// handle serves a request; nil answers initialize/shutdown/prompt with
	// defaults.
	handle func(ctx context.Context, c *dispatch.Call) (any, error)
	bg     sync.WaitGroup
}

func newFake(t *testing.T, opts Options, handle func(ctx context.Context, f *fakeServer, c *dispatch.Call) (any, error)) (*Client, *fakeServer) {
	t.Helper()
	ca, cb := net.Pipe()
	f := &fakeServer{t: t, seq: map[string]int64{}}
	if handle != nil {
		f.handle = func(ctx context.Context, c *dispatch.Call) (any, error) { return handle(ctx, f, c) }
	}
	f.h = dispatch.New(f.serve, dispatch.Options{})
	f.conn = jsonrpc2.NewConn(context.Background(), ndjson.New(cb, ndjson.Options{}), f.h, jsonrpc2.SetLogger(printfLogger{discard()}))
	c := NewClient(ca, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Close(ctx)
		f.stop()
	})
	return c, f
}

func (f *fakeServer) stop() {
	f.conn.Close()
	<-f.conn.DisconnectNotify()
	f.h.Close()
	f.bg.Wait()
}

func (f *fakeServer) serve(ctx context.Context, c *dispatch.Call) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.handle != nil {
		return f.handle(ctx, c)
	}
	return f.defaultHandle(ctx, c)
}

func (f *fakeServer) defaultHandle(_ context.Context, c *dispatch.Call) (any, error) {
	switch c.Method {
	case protocol.MethodInitialize:
		return protocol.InitializeResult{ServerInfo: protocol.ServerInfo{Name: protocol.ServerName, Version: "0.0.1"}}, nil
	case protocol.MethodShutdown:
		return protocol.Empty{}, nil
	}
	return nil, protocol.UnknownMethodError(c.Method)
}

func (f *fakeServer) callsOf(method string) []*dispatch.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*dispatch.Call
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeServer) notify(method string, params any) {
	// A turn may still be talking when the test closes the client.
	if err := f.conn.Notify(context.Background(), method, params); err != nil && !errors.Is(err, jsonrpc2.ErrClosed) {
		f.t.Errorf("notify %s: %v", method, err)
	}
}

// event sends a session.event with the next seq of sessionID.
func (f *fakeServer) event(sessionID, typ string, data any) {
	f.mu.Lock()
	seq := f.seq[sessionID]
	f.seq[sessionID]++
	f.mu.Unlock()
	ev := event.New(typ, data)
	ev.Seq = seq
	f.notify(protocol.NotifySessionEvent, protocol.SessionEventParams{SessionID: sessionID, Event: ev})
}

func (f *fakeServer) rawEvent(sessionID string, ev json.RawMessage) {
	f.notify(protocol.NotifySessionEvent, map[string]any{"sessionId": sessionID, "event": ev})
}

func (f *fakeServer) status(sessionID, st string) {
	f.notify(protocol.NotifySessionStatus, protocol.SessionStatusParams{SessionID: sessionID, Status: st})
}

func (f *fakeServer) started(parent, child string) {
	f.notify(protocol.NotifySubagentStarted, protocol.SubagentStartedParams{ParentSessionID: parent, ChildSessionID: child})
}

// receipt sends the enqueue receipt of messageID.
func (f *fakeServer) receipt(sessionID, messageID, text string) {
	f.event(sessionID, event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Inserted: []event.Message{
		{ID: messageID, Role: "user", Content: []event.ContentBlock{event.Text(text)}, Source: event.Source{Kind: "user"}},
	}})
}

func (f *fakeServer) assistant(sessionID string, turn int, blocks ...event.ContentBlock) {
	f.event(sessionID, event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 1, Message: event.Message{
		ID: "a", Role: "assistant", Content: blocks, Source: event.Source{Kind: "model", Provider: "p", Model: "m"},
	}})
}

func (f *fakeServer) turnEnd(sessionID string, turn int, kind string) {
	f.event(sessionID, event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: event.TurnEndReason{Kind: kind}})
}

// later runs fn after the current handler returns (a turn continuing after
// the prompt's response).
func (f *fakeServer) later(fn func()) {
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		time.Sleep(5 * time.Millisecond)
		fn()
	}()
}

func promptParams(t *testing.T, c *dispatch.Call) protocol.SessionPromptParams {
	p, err := protocol.ParseSessionPromptParams(c.Params)
	if err != nil {
		t.Errorf("prompt params: %v", err)
	}
	return p
}

func blockText(t *testing.T, raw json.RawMessage) string {
	var b event.ContentBlock
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Errorf("block: %v", err)
	}
	return b.Text
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
