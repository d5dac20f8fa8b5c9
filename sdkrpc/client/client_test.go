package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/dispatch"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestClient_InitializeSendsAbsoluteCwdAndDefaults(t *testing.T) {
	c, f := newFake(t, Options{}, nil)
	wd, _ := os.Getwd()
	for _, tc := range []struct{ in, want string }{{"sub/dir", filepath.Join(wd, "sub/dir")}, {"", wd}, {"/abs/x/..", "/abs"}} {
		res, err := c.Initialize(tctx(t), protocol.InitializeParams{Cwd: tc.in, MaxTokens: 64, ReasoningEffort: "low"})
		if err != nil || res.ServerInfo.Name != protocol.ServerName {
			t.Fatalf("initialize: %+v %v", res, err)
		}
		calls := f.callsOf(protocol.MethodInitialize)
		got := string(calls[len(calls)-1].Params)
		want := fmt.Sprintf(`{"cwd":%q,"maxTokens":64,"model":"deepseek-flash","provider":"deepseek-official","reasoningEffort":"low"}`, tc.want)
		if got != want {
			t.Errorf("params %s, want %s", got, want)
		}
	}
}

func TestClient_InitializeErrorKeepsCodeAndData(t *testing.T) {
	data := json.RawMessage(`{"hint":"set DEEPSEEK_API_KEY"}`)
	c, _ := newFake(t, Options{}, func(_ context.Context, _ *fakeServer, call *dispatch.Call) (any, error) {
		return nil, &jsonrpc2.Error{Code: -32603, Message: `no adapter registered for provider "acme"`, Data: &data}
	})
	_, err := c.Initialize(tctx(t), protocol.InitializeParams{Provider: "acme"})
	var re *ResponseError
	if !errors.As(err, &re) || re.Code != -32603 || re.Message != `no adapter registered for provider "acme"` || string(re.Data) != string(data) {
		t.Fatalf("err = %#v", err)
	}
	if err.Error() != `no adapter registered for provider "acme"` {
		t.Fatalf("Error() = %q", err.Error())
	}
}

func TestClient_ErrorWithoutMessageFallsBack(t *testing.T) {
	c, _ := newFake(t, Options{}, func(context.Context, *fakeServer, *dispatch.Call) (any, error) {
		return nil, &jsonrpc2.Error{Code: 12}
	})
	var re *ResponseError
	if err := c.Request(tctx(t), "x", nil, nil); !errors.As(err, &re) || re.Message != "JSON-RPC error" || re.Code != 12 {
		t.Fatalf("err = %#v", err)
	}
}

func TestClient_ProtocolErrors(t *testing.T) {
	c, _ := newFake(t, Options{}, func(_ context.Context, _ *fakeServer, call *dispatch.Call) (any, error) {
		switch call.Method {
		case protocol.MethodInitialize:
			return map[string]any{"serverInfo": "nope"}, nil
		case protocol.MethodSessionPrompt:
			return map[string]any{"messageId": 5}, nil
		}
		return protocol.Empty{}, nil
	})
	var pe *ProtocolError
	if _, err := c.Initialize(tctx(t), protocol.InitializeParams{}); !errors.As(err, &pe) || !strings.HasPrefix(pe.Msg, "initialize result requires serverInfo.name") {
		t.Errorf("initialize: %v", err)
	}
	if _, err := c.Session("s").Prompt(tctx(t), Text("hi")); !errors.As(err, &pe) || pe.Msg != "session/prompt result requires a string messageId" {
		t.Errorf("prompt: %v", err)
	}
}

func TestClient_RequestIDsAreReqUUIDHex(t *testing.T) {
	c, f := newFake(t, Options{}, nil)
	c.Initialize(tctx(t), protocol.InitializeParams{})
	c.Initialize(tctx(t), protocol.InitializeParams{})
	re := regexp.MustCompile(`^req_[0-9a-f]{32}$`)
	calls := f.callsOf(protocol.MethodInitialize)
	if len(calls) != 2 || calls[0].ID.Str == calls[1].ID.Str {
		t.Fatalf("calls %v", calls)
	}
	for _, call := range calls {
		if !call.ID.IsString || !re.MatchString(call.ID.Str) {
			t.Errorf("id %s", call.ID)
		}
	}
	if !regexp.MustCompile(`^session-[0-9a-f]{32}$`).MatchString(newSessionID()) {
		t.Error(newSessionID())
	}
}

// runScript is a fake runtime turn: pre-receipt noise, the receipt before
// the response, and the rest of the turn after it, with a child session and
// a foreign session interleaved.
func runScript(kind string) func(context.Context, *fakeServer, *dispatch.Call) (any, error) {
	return func(ctx context.Context, f *fakeServer, c *dispatch.Call) (any, error) {
		if c.Method != protocol.MethodSessionPrompt {
			return f.defaultHandle(ctx, c)
		}
		p := promptParams(f.t, c)
		root := p.SessionID
		text := blockText(f.t, p.ContentBlocks[0])
		// Noise before the receipt: a late idle and a turn end of an earlier
		// turn, a foreign session, and an older receipt.
		f.status(root, protocol.StatusIdle)
		f.turnEnd(root, 0, "aborted")
		f.event("foreign", event.TypeTurnStart, event.TurnStart{Turn: 1})
		f.receipt(root, "older-message", "old")
		f.receipt(root, "m-1", text)
		f.status(root, protocol.StatusRunning)
		f.later(func() {
			f.event(root, event.TypeTurnStart, event.TurnStart{Turn: 1})
			f.event(root, "assistant/chunk", map[string]any{"turn": 1, "step": 1, "chunk": map[string]any{"type": "text-delta", "index": 0, "text": "he"}})
			f.started(root, "child")
			f.event("child", event.TypeTurnStart, event.TurnStart{Turn: 1})
			f.event("foreign", event.TypeTurnEnd, event.TurnEnd{Turn: 1, Reason: event.TurnEndReason{Kind: "completed"}})
			f.assistant("child", 1, event.Text("child says"))
			f.status("child", protocol.StatusIdle)
			f.notify(protocol.NotifySubagentFinished, protocol.SubagentFinishedParams{Provider: "local", AgentID: "child",
				ParentSessionID: root, ChildSessionID: "child", Status: "ok", StopReason: "completed"})
			f.assistant(root, 1, event.Reasoning("thinking"), event.Text("hello "), event.Text("world"))
			f.turnEnd(root, 1, kind)
			f.status("foreign", protocol.StatusIdle)
			f.status(root, protocol.StatusIdle)
			f.event(root, event.TypeSessionTitle, event.SessionTitle{Title: "after idle"})
		})
		return protocol.SessionPromptResult{MessageID: "m-1"}, nil
	}
}

func TestClient_Run_CollectsFromReceiptThroughRootIdle(t *testing.T) {
	c, _ := newFake(t, Options{}, runScript("completed"))
	var seen []string
	res, err := c.Session("root").RunBlocks(tctx(t), []Block{Text("say hello")}, OnNotification(func(n Notification) {
		seen = append(seen, n.Method)
	}))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range res.Events {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, ","); got != "agent/inbox/spliced,turn/start,assistant/chunk,assistant/message,turn/end" {
		t.Errorf("root events %s", got)
	}
	if res.FinalResponse != "hello world" || res.FinishReason != "completed" || res.MessageID != "m-1" || res.SessionID != "root" {
		t.Errorf("result %+v", res)
	}
	var ns []string
	for _, n := range res.Notifications {
		ns = append(ns, n.Method+"@"+n.SessionID()+n.ChildSessionID())
	}
	want := "session.event@root,session.status@root,session.event@root,session.event@root,subagent.started@child," +
		"session.event@child,session.event@child,session.status@child,subagent.finished@child," +
		"session.event@root,session.event@root,session.status@root"
	if got := strings.Join(ns, ","); got != want {
		t.Errorf("tree notifications\n got %s\nwant %s", got, want)
	}
	if len(seen) != len(res.Notifications) {
		t.Errorf("callback saw %d of %d", len(seen), len(res.Notifications))
	}
}

func TestClient_Run_FinishReasonMaxTokens(t *testing.T) {
	c, _ := newFake(t, Options{}, runScript("max-tokens"))
	res, err := c.NewSession().Run(tctx(t), "hi")
	if err != nil || res.FinishReason != "max-tokens" || !strings.HasPrefix(res.SessionID, "session-") {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestClient_Run_ProtocolErrors(t *testing.T) {
	for name, ev := range map[string]string{
		"turn/end event requires a string data.reason.kind":   `{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":5}}}`,
		"assistant/message event requires a content array":    `{"type":"assistant/message","seq":1,"time":0,"data":{"turn":1,"message":{"content":"x"}}}`,
		"session.event notification requires an object event": `[1]`,
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
				if call.Method != protocol.MethodSessionPrompt {
					return f.defaultHandle(ctx, call)
				}
				f.receipt("s", "m", "x")
				f.rawEvent("s", json.RawMessage(ev))
				return protocol.SessionPromptResult{MessageID: "m"}, nil
			})
			res, err := c.Session("s").Run(tctx(t), "x")
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Msg != name {
				t.Fatalf("err = %v", err)
			}
			if res == nil || len(res.Events) == 0 || res.Events[0].Type != event.TypeInboxSpliced {
				t.Fatalf("partial result %+v", res)
			}
		})
	}
}

func TestClient_Run_CtxCancelReturnsPartialResult(t *testing.T) {
	c, _ := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		if call.Method != protocol.MethodSessionPrompt {
			return f.defaultHandle(ctx, call)
		}
		f.receipt("s", "m", "x")
		f.assistant("s", 1, event.Text("partial"))
		return protocol.SessionPromptResult{MessageID: "m"}, nil // and never idle
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := c.Session("s").Run(ctx, "x")
	if !errors.Is(err, context.DeadlineExceeded) || res.FinalResponse != "partial" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestClient_SubscribeSessionTree_MultiHop(t *testing.T) {
	c, f := newFake(t, Options{}, nil)
	tree := c.SubscribeSessionTree("root")
	defer tree.Close()
	mid := c.SubscribeSessionTree("child")
	defer mid.Close()
	f.started("grand-parent", "root") // child == root: included for root's tree
	f.started("root", "child")
	f.started("child", "grandchild")
	f.started("other", "stranger")
	f.started("x", "x") // self-parent: ignored for ancestry
	f.started("", "orphan")
	for _, s := range []string{"root", "child", "grandchild", "stranger", "other", "x", "orphan", "grand-parent"} {
		f.status(s, protocol.StatusRunning)
	}
	f.notify(protocol.NotifySubagentFinished, protocol.SubagentFinishedParams{ParentSessionID: "child", ChildSessionID: "grandchild"})
	f.notify(protocol.NotifySubagentFinished, protocol.SubagentFinishedParams{ParentSessionID: "other", ChildSessionID: "stranger"})
	f.status("end", protocol.StatusIdle)
	sync := c.Subscribe(func(n Notification) bool { return n.SessionID() == "end" })
	defer sync.Close()
	drain := func(s *Subscription) string {
		var out []string
		for {
			n, ok, err := s.TryNext()
			if err != nil || !ok {
				return strings.Join(out, ",")
			}
			out = append(out, strings.TrimPrefix(n.Method, "subagent.")+":"+n.SessionID()+n.ParentSessionID()+">"+n.ChildSessionID())
		}
	}
	// Wait until the last notification arrived.
	f.status("end", protocol.StatusIdle)
	if _, err := sync.Next(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if got, want := drain(tree), "started:grand-parent>root,started:root>child,started:child>grandchild,"+
		"session.status:root>,session.status:child>,session.status:grandchild>,finished:child>grandchild"; got != want {
		t.Errorf("root tree\n got %s\nwant %s", got, want)
	}
	if got, want := drain(mid), "started:root>child,started:child>grandchild,session.status:child>,session.status:grandchild>,finished:child>grandchild"; got != want {
		t.Errorf("child tree\n got %s\nwant %s", got, want)
	}
	// The tree is kept for the client's lifetime: a later subscription still
	// knows grandchild descends from root.
	late := c.SubscribeSessionTree("root")
	defer late.Close()
	f.status("grandchild", protocol.StatusIdle)
	if n, err := late.Next(tctx(t)); err != nil || n.SessionID() != "grandchild" {
		t.Fatalf("%v %v", n, err)
	}
}

func TestClient_NotificationsQueuedBeforeTheResponse(t *testing.T) {
	c, _ := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		for i := range 100 {
			f.status(fmt.Sprint(i), protocol.StatusRunning)
		}
		return "done", nil
	})
	sub := c.Subscribe(nil)
	defer sub.Close()
	if err := c.Request(tctx(t), "go", nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		n, ok, err := sub.TryNext()
		if !ok || err != nil || n.SessionID() != fmt.Sprint(i) {
			t.Fatalf("notification %d: %v %v %v", i, n, ok, err)
		}
	}
}

func TestClient_SlowSubscriberNeverBlocksTheConnection(t *testing.T) {
	const n = 5000
	c, _ := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		if call.Method == "flood" {
			for i := range n {
				f.status(fmt.Sprint(i), protocol.StatusRunning)
			}
		}
		return "ok", nil
	})
	idle := c.Subscribe(nil) // never read
	defer idle.Close()
	if err := c.Request(tctx(t), "flood", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Request(tctx(t), "ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	count := 0
	for {
		_, ok, _ := idle.TryNext()
		if !ok {
			break
		}
		count++
	}
	if count != n {
		t.Fatalf("queued %d of %d", count, n)
	}
}

func TestClient_FilterPanicFailsOnlyItsSubscription(t *testing.T) {
	c, f := newFake(t, Options{}, nil)
	bad := c.Subscribe(func(n Notification) bool { panic("bad filter") })
	good := c.Subscribe(nil)
	defer good.Close()
	f.status("s", protocol.StatusRunning)
	if _, err := good.Next(tctx(t)); err != nil {
		t.Fatal(err)
	}
	var fe *FilterPanicError
	if _, err := bad.Next(tctx(t)); !errors.As(err, &fe) {
		t.Fatalf("bad: %v", err)
	}
	bad.Close()
	if _, err := bad.Next(tctx(t)); !errors.Is(err, ErrSubscriptionClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestClient_Timeouts(t *testing.T) {
	c, _ := newFake(t, Options{RequestTimeout: 50 * time.Millisecond, ShutdownTimeout: 50 * time.Millisecond}, func(ctx context.Context, _ *fakeServer, _ *dispatch.Call) (any, error) {
		<-ctx.Done() // never answers in time
		return nil, ctx.Err()
	})
	start := time.Now()
	_, err := c.Session("s").Prompt(context.Background(), Text("x"))
	var te *TimeoutError
	if !errors.As(err, &te) || err.Error() != "session/prompt timed out after 50ms waiting for the DeepSeek Harness runtime" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("timeout not honoured")
	}
	// The caller's deadline, shorter than RequestTimeout, is reported the same way.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := c.Request(ctx, "x", nil, nil); !errors.As(err, &te) || te.Method != "x" || !strings.Contains(err.Error(), "x timed out after") {
		t.Fatalf("err = %v", err)
	}
	// Cancel is an abort, not a timeout.
	cctx, ccancel := context.WithCancelCause(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); ccancel(errors.New("user pressed stop")) }()
	if err := c.Request(cctx, "y", nil, nil); err == nil || err.Error() != "y: JSON-RPC request aborted: user pressed stop" {
		t.Fatalf("err = %v", err)
	}
	// The connection still works after abandoned requests.
	c2, _ := newFake(t, Options{}, nil)
	if _, err := c2.Initialize(tctx(t), protocol.InitializeParams{}); err != nil {
		t.Fatal(err)
	}
}

func TestClient_TransportDeath(t *testing.T) {
	entered := make(chan struct{})
	c, f := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	sub := c.Subscribe(nil)
	f.status("s", protocol.StatusRunning)
	f.status("s", protocol.StatusIdle)
	errc := make(chan error, 1)
	go func() { errc <- c.Request(context.Background(), "hang", nil, nil) }()
	<-entered
	f.conn.Close() // the runtime's output ends
	err := <-errc
	var tce *TransportClosedError
	if !errors.As(err, &tce) || tce.Reason != "JSON-RPC input closed" {
		t.Fatalf("pending: %v", err)
	}
	<-c.Done()
	// Death keeps the queue drainable, then fails.
	for range 2 {
		if _, err := sub.Next(tctx(t)); err != nil {
			t.Fatalf("drain: %v", err)
		}
	}
	if _, err := sub.Next(tctx(t)); !errors.As(err, &tce) {
		t.Fatalf("after drain: %v", err)
	}
	// Fail fast afterwards, and late subscriptions are born failed.
	if err := c.Request(tctx(t), "x", nil, nil); !errors.As(err, &tce) {
		t.Fatalf("after death: %v", err)
	}
	if _, err := c.Subscribe(nil).Next(tctx(t)); !errors.As(err, &tce) {
		t.Fatalf("late subscription: %v", err)
	}
}

func TestClient_ServerToClientRequests(t *testing.T) {
	c, f := newFake(t, Options{}, nil)
	var gotReq atomic.Value
	c.OnPermissionRequest(func(ctx context.Context, p protocol.RequestPermissionParams) (protocol.RequestPermissionResult, error) {
		gotReq.Store(p)
		return protocol.Select(protocol.OptionAllowOnce), nil
	})
	var res protocol.RequestPermissionResult
	params := protocol.NewRequestPermissionParams("s", "", protocol.PermissionToolCall{CallID: "c1", Tool: "bash", Command: "ls"})
	if err := f.conn.Call(tctx(t), protocol.MethodRequestPermission, params, &res); err != nil {
		t.Fatal(err)
	}
	if a, err := res.Answer(); err != nil || a != protocol.OptionAllowOnce {
		t.Fatalf("%v %v", a, err)
	}
	if p := gotReq.Load().(protocol.RequestPermissionParams); p.ToolCall.Command != "ls" {
		t.Fatalf("%+v", p)
	}
	// Unknown methods: -32601.
	err := f.conn.Call(tctx(t), "fs/read", nil, nil)
	var we *jsonrpc2.Error
	if !errors.As(err, &we) || we.Code != jsonrpc2.CodeMethodNotFound || we.Message != "method not found: fs/read" {
		t.Fatalf("err = %v", err)
	}
	// Handler errors: -32603 with the message.
	c.OnRequest("boom", func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("host failed") })
	if err := f.conn.Call(tctx(t), "boom", nil, nil); !errors.As(err, &we) || we.Code != jsonrpc2.CodeInternalError || we.Message != "host failed" {
		t.Fatalf("err = %v", err)
	}
}

func TestClient_CloseSendsShutdownIdempotently(t *testing.T) {
	c, f := newFake(t, Options{}, nil)
	sub := c.Subscribe(nil)
	f.status("s", protocol.StatusRunning)
	if err := c.Close(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(f.callsOf(protocol.MethodShutdown)); n != 1 {
		t.Fatalf("%d shutdowns", n)
	}
	var tce *TransportClosedError
	if _, err := sub.Next(tctx(t)); !errors.As(err, &tce) || tce.Reason != "JSON-RPC transport closed" {
		t.Fatalf("subscription after close: %v", err)
	}
	if err := c.Request(tctx(t), "x", nil, nil); !errors.As(err, &tce) {
		t.Fatalf("request after close: %v", err)
	}
}

func TestClient_CloseWhileShutdownHangs(t *testing.T) {
	c, _ := newFake(t, Options{ShutdownTimeout: 50 * time.Millisecond}, func(ctx context.Context, _ *fakeServer, _ *dispatch.Call) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	start := time.Now()
	if err := c.Close(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("close took %v", d)
	}
}

func TestClient_CancelAndCloseSession(t *testing.T) {
	c, f := newFake(t, Options{}, func(ctx context.Context, f *fakeServer, call *dispatch.Call) (any, error) {
		return protocol.Empty{}, nil
	})
	if err := c.Session("s1").Cancel(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Session("s2").Close(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := string(f.callsOf(protocol.MethodSessionCancel)[0].Params); got != `{"sessionId":"s1"}` {
		t.Error(got)
	}
	if got := string(f.callsOf(protocol.MethodSessionClose)[0].Params); got != `{"sessionId":"s2"}` {
		t.Error(got)
	}
}

func TestClient_PreAbortedRequestWritesNothing(t *testing.T) {
	c, f := newFake(t, Options{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Request(ctx, "never", nil, nil); err == nil || !strings.Contains(err.Error(), "JSON-RPC request aborted: context canceled") {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Initialize(tctx(t), protocol.InitializeParams{}); err != nil { // a later request goes through
		t.Fatal(err)
	}
	if n := len(f.callsOf("never")); n != 0 {
		t.Fatalf("pre-aborted request was sent %d times", n)
	}
}
