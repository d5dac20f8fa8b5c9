package client

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/dispatch"
	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

type pipeRWC struct {
	r *os.File
	w *os.File
}

func (p pipeRWC) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeRWC) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeRWC) Close() error {
	p.r.Close()
	return p.w.Close()
}

// BenchmarkNotifications measures session.event notifications per second
// from a server jsonrpc2.Conn, through an OS pipe and the ndjson stream, to
// a client subscriber: the path every event of a turn takes to a host.
// The event is a typical assistant/message (~600 bytes on the wire).
func BenchmarkNotifications(b *testing.B) {
	b.Run("stream.Notify", func(b *testing.B) {
		benchNotifications(b, func(_ *jsonrpc2.Conn, s *ndjson.Stream, m string, p any) error { return s.Notify(m, p) })
	})
	b.Run("conn.Notify", func(b *testing.B) {
		benchNotifications(b, func(c *jsonrpc2.Conn, _ *ndjson.Stream, m string, p any) error {
			return c.Notify(context.Background(), m, p)
		})
	})
}

func benchNotifications(b *testing.B, notify func(*jsonrpc2.Conn, *ndjson.Stream, string, any) error) {
	s2cR, s2cW, _ := os.Pipe()
	c2sR, c2sW, _ := os.Pipe()
	h := dispatch.New(nil, dispatch.Options{})
	stream := ndjson.New(pipeRWC{c2sR, s2cW}, ndjson.Options{})
	server := jsonrpc2.NewConn(context.Background(), stream, h, jsonrpc2.SetLogger(printfLogger{discard()}))
	c := NewClient(pipeRWC{s2cR, c2sW}, Options{})
	sub := c.Subscribe(nil)

	one := int64(12)
	ev := event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: 3, Step: 2, Message: event.Message{
		ID: "msg-0123456789abcdef", Role: "assistant",
		Content: []event.ContentBlock{event.Reasoning("Let me look at the file first."), event.Text(strings.Repeat("The answer is here. ", 16))},
		Source:  event.Source{Kind: "model", Provider: "deepseek-official", Model: "deepseek-flash"},
	}, Usage: &event.Usage{InputTokens: 1200, OutputTokens: 96, CacheReadTokens: &one}})
	params := protocol.SessionEventParams{SessionID: "session-0123456789abcdef0123456789abcdef", Event: ev}

	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for i := 0; i < b.N; i++ {
			params.Event.Seq = int64(i)
			if err := notify(server, stream, protocol.NotifySessionEvent, params); err != nil {
				return
			}
		}
	}()
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := sub.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
	server.Close()
	c.Close(ctx)
	h.Close()
}

// BenchmarkStartInitialize measures spawn → initialize response → close of a
// real runtime. It runs only when DSH_BENCH_CMD names one, e.g.
//
//	DSH_BENCH_CMD="/tmp/dsh sdk" DSH_PROVIDER=scripted DSH_SCRIPT=examples/hello.json \
//	  go test -run '^$' -bench StartInitialize ./sdkrpc/client/
//
// The close ladder is included in ns/op; "init-ms" is spawn → initialize.
func BenchmarkStartInitialize(b *testing.B) {
	cmd := strings.Fields(os.Getenv("DSH_BENCH_CMD"))
	if len(cmd) == 0 {
		b.Skip("set DSH_BENCH_CMD to a runtime command line")
	}
	dir := b.TempDir()
	env := append(os.Environ(), "DSH_SESSION_ROOT="+dir)
	var initTotal time.Duration
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c, _, err := Start(ctx, Config{Command: cmd, Env: env}, protocol.InitializeParams{Cwd: dir,
			Provider: os.Getenv("DSH_PROVIDER"), Model: os.Getenv("DSH_MODEL")})
		if err != nil {
			b.Fatal(err)
		}
		initTotal += time.Since(start)
		if err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(initTotal.Microseconds())/1000/float64(b.N), "init-ms")
}
