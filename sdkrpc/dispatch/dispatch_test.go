package dispatch

// These tests mirror the original's transport.spec.ts (spec dsh-protocols.md
// §9): jsonrpc2.Conn + the ndjson stream + this Handler are our transport.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type peer struct {
	conn *jsonrpc2.Conn
	h    *Handler
}

func newPeer(t *testing.T, rwc io.ReadWriteCloser, fn HandlerFunc, opts ndjson.Options) *peer {
	t.Helper()
	h := New(fn, Options{})
	conn := jsonrpc2.NewConn(context.Background(), ndjson.New(rwc, opts), h, jsonrpc2.SetLogger(nopLogger{}))
	p := &peer{conn: conn, h: h}
	t.Cleanup(func() {
		conn.Close()
		<-conn.DisconnectNotify()
		h.Close()
	})
	return p
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func pair(t *testing.T, fnA, fnB HandlerFunc) (a, b *peer) {
	ca, cb := net.Pipe()
	return newPeer(t, ca, fnA, ndjson.Options{}), newPeer(t, cb, fnB, ndjson.Options{})
}

// raw serves fn on one end of a pipe and returns the other end for the test
// to write and read raw lines.
type raw struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func rawServer(t *testing.T, fn HandlerFunc, opts ndjson.Options) *raw {
	ca, cb := net.Pipe()
	newPeer(t, ca, fn, opts)
	t.Cleanup(func() { cb.Close() })
	return &raw{t: t, c: cb, r: bufio.NewReader(cb)}
}

func (r *raw) send(lines ...string) {
	r.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(r.c, l+"\n"); err != nil {
			r.t.Fatalf("write %q: %v", l, err)
		}
	}
}

// sendAsync writes lines from another goroutine (net.Pipe blocks a write
// until it is read) and reports the outcome on the channel, so the test
// goroutine is the one that fails.
func (r *raw) sendAsync(lines ...string) <-chan error {
	errc := make(chan error, 1)
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(r.c, l+"\n"); err != nil {
				errc <- fmt.Errorf("write %q: %w", l, err)
				return
			}
		}
		errc <- nil
	}()
	return errc
}

func (r *raw) recv() map[string]any {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := r.r.ReadBytes('\n')
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		r.t.Fatalf("bad line %q: %v", line, err)
	}
	return m
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestTransport_BidirectionalTraffic(t *testing.T) {
	var mu sync.Mutex
	var notes []string
	var a, b *peer
	a, b = pair(t,
		func(ctx context.Context, c *Call) (any, error) {
			if c.Notif {
				mu.Lock()
				notes = append(notes, c.Method)
				mu.Unlock()
				return nil, nil
			}
			return "answer from A", nil
		},
		func(ctx context.Context, c *Call) (any, error) {
			c.Conn.Notify(ctx, "progress.1", nil)
			var back string
			// A request back to the caller while its own request is pending:
			// works only because handlers do not run in the read loop.
			if err := c.Conn.Call(ctx, "back", map[string]int{"n": 1}, &back); err != nil {
				return nil, err
			}
			c.Conn.Notify(ctx, "progress.2", nil)
			return "B got " + back, nil
		})
	_ = b
	var got string
	if err := a.conn.Call(ctx(t), "ask", map[string]string{"q": "?"}, &got); err != nil {
		t.Fatal(err)
	}
	if got != "B got answer from A" {
		t.Fatalf("got %q", got)
	}
	// Notifications run on their own ordered worker, so the response may
	// overtake the last one; their order is what is promised.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		joined := strings.Join(notes, ",")
		mu.Unlock()
		if joined == "progress.1,progress.2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notes %q", joined)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTransport_HandlerErrorIsInternalErrorWithMessage(t *testing.T) {
	a, _ := pair(t, nil, func(context.Context, *Call) (any, error) {
		return nil, errors.New("SDK server is not initialized")
	})
	err := a.conn.Call(ctx(t), "session/prompt", nil, nil)
	var we *jsonrpc2.Error
	if !errors.As(err, &we) || we.Code != jsonrpc2.CodeInternalError || we.Message != "SDK server is not initialized" {
		t.Fatalf("err = %#v", err)
	}
}

func TestTransport_ErrorCodeAndDataKeptThroughWrapping(t *testing.T) {
	data := json.RawMessage(`{"retryAfterMs":5}`)
	a, _ := pair(t, nil, func(context.Context, *Call) (any, error) {
		return nil, fmt.Errorf("context: %w", &jsonrpc2.Error{Code: -32001, Message: "busy", Data: &data})
	})
	err := a.conn.Call(ctx(t), "x", nil, nil)
	var we *jsonrpc2.Error
	if !errors.As(err, &we) || we.Code != -32001 || we.Message != "busy" || we.Data == nil || string(*we.Data) != string(data) {
		t.Fatalf("err = %#v", err)
	}
}

func TestTransport_NoHandlerIsMethodNotFound(t *testing.T) {
	a, _ := pair(t, nil, nil)
	err := a.conn.Call(ctx(t), "x", nil, nil)
	var we *jsonrpc2.Error
	if !errors.As(err, &we) || we.Code != jsonrpc2.CodeMethodNotFound || we.Message != "method not found: x" {
		t.Fatalf("err = %#v", err)
	}
}

func TestTransport_HandlerPanicIsInternalError(t *testing.T) {
	a, _ := pair(t, nil, func(context.Context, *Call) (any, error) { panic("kaboom") })
	err := a.conn.Call(ctx(t), "x", nil, nil)
	var we *jsonrpc2.Error
	if !errors.As(err, &we) || we.Code != jsonrpc2.CodeInternalError || !strings.Contains(we.Message, "kaboom") {
		t.Fatalf("err = %#v", err)
	}
	// The connection survives.
	if err := a.conn.Call(ctx(t), "y", nil, nil); err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("second call: %v", err)
	}
}

func TestTransport_NonObjectParamsBecomeEmptyObject(t *testing.T) {
	r := rawServer(t, func(_ context.Context, c *Call) (any, error) { return c.Params, nil }, ndjson.Options{})
	cases := map[string]string{
		`"params":[1,2]`:   `{}`,
		`"params":5`:       `{}`,
		`"params":"s"`:     `{}`,
		`"params":null`:    `{}`,
		`"params":true`:    `{}`,
		``:                 `{}`,
		`"params":{"a":1}`: `{"a":1}`,
	}
	i := 0
	for params, want := range cases {
		i++
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo"`, i)
		if params != "" {
			line += "," + params
		}
		r.send(line + "}")
		m := r.recv()
		got, _ := json.Marshal(m["result"])
		if string(got) != want {
			t.Errorf("%s: result %s, want %s", params, got, want)
		}
	}
}

func TestTransport_MalformedLinesIgnoredTrafficContinues(t *testing.T) {
	r := rawServer(t, func(_ context.Context, c *Call) (any, error) { return c.Method, nil }, ndjson.Options{})
	r.send(`garbage`, `{"jsonrpc":"2.0",`, `[1,2,3]`, `{"foo":1}`, ``, `{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":"a","method":"after"}`)
	m := r.recv()
	if m["id"] != "a" || m["result"] != "after" {
		t.Fatalf("got %v", m)
	}
}

func TestTransport_UTF8SplitAcrossWrites(t *testing.T) {
	r := rawServer(t, func(_ context.Context, c *Call) (any, error) {
		var p struct{ T string }
		json.Unmarshal(c.Params, &p)
		return p.T, nil
	}, ndjson.Options{})
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"t":"日本語 ✓ 🎉"}}` + "\n")
	go func() {
		for i := range line {
			r.c.Write(line[i : i+1])
		}
	}()
	if m := r.recv(); m["result"] != "日本語 ✓ 🎉" {
		t.Fatalf("got %v", m)
	}
}

func TestTransport_OversizedFrameGetsClearErrorAndServingContinues(t *testing.T) {
	r := rawServer(t, func(_ context.Context, c *Call) (any, error) { return "ok", nil }, ndjson.Options{MaxLineBytes: 100})
	big := `{"jsonrpc":"2.0","id":7,"method":"x","params":{"s":"` + strings.Repeat("x", 500) + `"}}`
	sent := r.sendAsync(big)
	m := r.recv()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	e, _ := m["error"].(map[string]any)
	if m["id"] != nil || e["code"] != float64(-32600) || e["message"] != fmt.Sprintf("frame of %d bytes exceeds the 100-byte limit", len(big)) {
		t.Fatalf("got %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":8,"method":"x"}`)
	if m := r.recv(); m["id"] != float64(8) || m["result"] != "ok" {
		t.Fatalf("got %v", m)
	}
}

func TestTransport_UnmatchedResponseIdsIgnored(t *testing.T) {
	r := rawServer(t, func(_ context.Context, c *Call) (any, error) { return "ok", nil }, ndjson.Options{})
	r.send(`{"jsonrpc":"2.0","id":"nobody","result":1}`, `{"jsonrpc":"2.0","id":42,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"}`)
	if m := r.recv(); m["id"] != float64(1) || m["result"] != "ok" {
		t.Fatalf("got %v", m)
	}
}

func TestTransport_NullIDErrorNeverResolvesCallZero(t *testing.T) {
	ca, cb := net.Pipe()
	a := newPeer(t, ca, nil, ndjson.Options{})
	t.Cleanup(func() { cb.Close() })
	r := &raw{t: t, c: cb, r: bufio.NewReader(cb)}
	done := make(chan error, 1)
	var got string
	go func() { done <- a.conn.Call(ctx(t), "first", nil, &got) }() // jsonrpc2's first numeric id is 0
	req := r.recv()
	if req["id"] != float64(0) {
		t.Fatalf("request %v", req)
	}
	r.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"frame too big"}}`,
		`{"jsonrpc":"2.0","id":0,"result":"real"}`)
	if err := <-done; err != nil || got != "real" {
		t.Fatalf("call resolved by the id-null error: %v %q", err, got)
	}
}

func TestTransport_RequestsServedConcurrentlyRepliesOutOfOrder(t *testing.T) {
	release := make(chan struct{})
	r := rawServer(t, func(ctx context.Context, c *Call) (any, error) {
		if c.Method == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else {
			close(release)
		}
		return c.Method, nil
	}, ndjson.Options{})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`, `{"jsonrpc":"2.0","id":2,"method":"fast"}`)
	// slow can only finish once fast has run, so both replies prove the
	// two were served concurrently. Which is written first is a race once
	// release is closed (fast's reply is written after its handler
	// returns), so the order is not checked.
	got := map[any]any{}
	for range 2 {
		m := r.recv()
		got[m["id"]] = m["result"]
	}
	if got[float64(1)] != "slow" || got[float64(2)] != "fast" {
		t.Fatalf("replies %v", got)
	}
}

func TestTransport_NotificationsHandledInOrder(t *testing.T) {
	const n = 500
	var got []int
	done := make(chan struct{})
	r := rawServer(t, func(_ context.Context, c *Call) (any, error) {
		var p struct{ I int }
		json.Unmarshal(c.Params, &p)
		got = append(got, p.I) // the single worker: no lock needed, -race checks it
		if len(got) == n {
			close(done)
		}
		return nil, nil
	}, ndjson.Options{})
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"i":%d}}`, i)
	}
	sent := r.sendAsync(lines...)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("notifications not all handled")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("notification %d handled as %d", i, v)
		}
	}
}

func TestTransport_PendingCallsFailOnInputEnd(t *testing.T) {
	ca, cb := net.Pipe()
	a := newPeer(t, ca, nil, ndjson.Options{})
	r := &raw{t: t, c: cb, r: bufio.NewReader(cb)}
	done := make(chan error, 1)
	go func() { done <- a.conn.Call(ctx(t), "x", nil, nil) }()
	r.recv()
	cb.Close() // the peer's output ends
	if err := <-done; !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Fatalf("err = %v", err)
	}
}

func TestTransport_PendingCallsFailOnClose(t *testing.T) {
	ca, cb := net.Pipe()
	a := newPeer(t, ca, nil, ndjson.Options{})
	t.Cleanup(func() { cb.Close() })
	r := &raw{t: t, c: cb, r: bufio.NewReader(cb)}
	done := make(chan error, 1)
	go func() { done <- a.conn.Call(ctx(t), "x", nil, nil) }()
	r.recv()
	a.conn.Close()
	if err := <-done; !errors.Is(err, jsonrpc2.ErrClosed) {
		t.Fatalf("err = %v", err)
	}
}

type failingWriter struct{ io.Reader }

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }
func (failingWriter) Close() error              { return nil }

func TestTransport_WriteFailureFailsTheCall(t *testing.T) {
	pr, pw := io.Pipe()
	a := newPeer(t, failingWriter{pr}, nil, ndjson.Options{})
	t.Cleanup(func() { pw.Close() })
	err := a.conn.Call(ctx(t), "x", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
}

func TestHandler_CloseCancelsRunningHandlersAndWaits(t *testing.T) {
	started := make(chan struct{})
	var ended bool
	h := New(func(ctx context.Context, c *Call) (any, error) {
		close(started)
		<-ctx.Done()
		ended = true
		return nil, ctx.Err()
	}, Options{})
	ca, cb := net.Pipe()
	conn := jsonrpc2.NewConn(context.Background(), ndjson.New(ca, ndjson.Options{}), h, jsonrpc2.SetLogger(nopLogger{}))
	go io.Copy(io.Discard, cb)
	io.WriteString(cb, `{"jsonrpc":"2.0","id":1,"method":"block"}`+"\n")
	<-started
	h.Close()
	if !ended {
		t.Fatal("Close returned before the handler did")
	}
	conn.Close()
	cb.Close()
	<-conn.DisconnectNotify()
}

func TestObjectParams(t *testing.T) {
	raw := func(s string) *json.RawMessage { r := json.RawMessage(s); return &r }
	for in, want := range map[string]string{` {"a":1}`: ` {"a":1}`, `[]`: `{}`, `1`: `{}`, `null`: `{}`, ``: `{}`} {
		if got := string(ObjectParams(raw(in))); got != want {
			t.Errorf("ObjectParams(%q) = %q", in, got)
		}
	}
	if string(ObjectParams(nil)) != `{}` {
		t.Error("nil params")
	}
}

func TestWireError(t *testing.T) {
	if e := WireError(errors.New("x")); e.Code != jsonrpc2.CodeInternalError || e.Message != "x" {
		t.Errorf("%#v", e)
	}
	if e := WireError(fmt.Errorf("w: %w", &jsonrpc2.Error{Message: "zero"})); e.Code != jsonrpc2.CodeInternalError || e.Message != "zero" {
		t.Errorf("code 0 must become -32603: %#v", e)
	}
	if e := WireError(&jsonrpc2.Error{Code: -32602, Message: "p"}); e.Code != -32602 {
		t.Errorf("%#v", e)
	}
}
