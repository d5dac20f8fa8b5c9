package dispatch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
)

// recordingPipe is the server end of a connection whose input is fixed and
// whose output is recorded, so a hook can check what is on the wire.
type recordingPipe struct {
	io.Reader
	mu  sync.Mutex
	out strings.Builder
}

func (p *recordingPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *recordingPipe) written() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *recordingPipe) Close() error { return nil }

// TestHooks_ReadInOrderRepliedOnTheWire: OnRead sees every call in wire
// order and its value reaches the handler; OnReplied runs once per request,
// after the response is written.
func TestHooks_ReadInOrderRepliedOnTheWire(t *testing.T) {
	const n = 50
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m","params":{}}`, i))
		lines = append(lines, `{"jsonrpc":"2.0","method":"note"}`)
	}
	// The input stays open until every reply is in: at the end of input
	// jsonrpc2 closes the connection and replies fail (OnReplied still runs).
	in, feed := io.Pipe()
	go func() { _, _ = io.WriteString(feed, strings.Join(lines, "\n")+"\n") }()
	pipe := &recordingPipe{Reader: in}
	var mu sync.Mutex
	var order []string
	replied := make(chan jsonrpc2.ID, n)
	var problems []string
	h := New(func(_ context.Context, c *Call) (any, error) {
		if !c.Notif && c.Value != c.ID.String() {
			return nil, fmt.Errorf("value %v for id %s", c.Value, c.ID)
		}
		return "ok", nil
	}, Options{
		OnRead: func(c *Call) any {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, c.Method+" "+c.ID.String())
			return c.ID.String()
		},
		OnReplied: func(c *Call) {
			mu.Lock()
			defer mu.Unlock()
			if c.Notif {
				problems = append(problems, "OnReplied for a notification")
			}
			if !strings.Contains(pipe.written(), fmt.Sprintf(`"id":%s,`, c.ID)) {
				problems = append(problems, "OnReplied before the response of "+c.ID.String()+" was written: "+pipe.written())
			}
			replied <- c.ID
		},
	})
	conn := jsonrpc2.NewConn(context.Background(), ndjson.New(pipe, ndjson.Options{}), h, jsonrpc2.SetLogger(nopLogger{}))
	for i := 0; i < n; i++ {
		<-replied
	}
	feed.Close()
	<-conn.DisconnectNotify()
	h.Close()
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		if order[2*i] != fmt.Sprintf("m %d", i) || order[2*i+1] != "note 0" {
			t.Fatalf("read order %v", order[:2*i+2])
		}
	}
	if len(problems) > 0 {
		t.Fatal(problems)
	}
}

// TestHooks_NotificationQueueBounded: with a slow notification handler the
// queue never holds more than MaxQueuedNotifications; the reader waits.
func TestHooks_NotificationQueueBounded(t *testing.T) {
	const n, max = 300, 4
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":{"i":%d}}`, i))
	}
	pipe := &recordingPipe{Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")}
	handled := make(chan struct{}, n)
	var h *Handler
	peak := 0
	h = New(func(context.Context, *Call) (any, error) {
		// A slow handler: some work per notification, so the reader
		// outruns it.
		sum := sha256.Sum256([]byte("x"))
		for i := 0; i < 2000; i++ {
			sum = sha256.Sum256(sum[:])
		}
		handled <- struct{}{}
		return nil, nil
	}, Options{MaxQueuedNotifications: max, OnRead: func(*Call) any {
		h.mu.Lock()
		peak = maxInt(peak, len(h.queue))
		h.mu.Unlock()
		return nil
	}})
	conn := jsonrpc2.NewConn(context.Background(), ndjson.New(pipe, ndjson.Options{}), h, jsonrpc2.SetLogger(nopLogger{}))
	for i := 0; i < n; i++ {
		<-handled
	}
	<-conn.DisconnectNotify()
	h.Close()
	if peak > max {
		t.Fatalf("queue held %d notifications, bound %d", peak, max)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
