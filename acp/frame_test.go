package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func TestReadFrame(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 100) + "\n" + "tail-no-newline"
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	fr, err := readFrame(r, 50)
	if err != nil || string(fr.line) != "short\n" || fr.size != 6 {
		t.Fatalf("frame 1: %q %d %v", fr.line, fr.size, err)
	}
	fr, err = readFrame(r, 50)
	if err != nil || fr.line != nil || fr.size != 100 || len(fr.head) < 51 {
		t.Fatalf("frame 2: line %q size %d head %d %v", fr.line, fr.size, len(fr.head), err)
	}
	fr, err = readFrame(r, 50)
	if err != io.EOF || string(fr.line) != "tail-no-newline" {
		t.Fatalf("frame 3: %q %v", fr.line, err)
	}
}

func TestPeekFrame(t *testing.T) {
	for _, tc := range []struct {
		head, tail string
		id, method string
		response   bool
	}{
		{`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"x":"aaaa`, `aaa"}}`, "5", "session/prompt", false},
		{`{"jsonrpc":"2.0","method":"session/prompt","params":{"x":"aaa`, `aa"},"id":"a-1"}`, `"a-1"`, "session/prompt", false},
		{`{"params":{"x":"aa`, `aa"},"id":9,"method":"m"}`, "9", "m", false},
		{`{"jsonrpc":"2.0","id":3,"result":{"content":"aaa`, `aa"}}`, "3", "", true},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{"x":"a`, `a"}}`, "", "session/cancel", false},
		{`not json at all`, `at all`, "", "", false},
	} {
		id, method, resp := peekFrame([]byte(tc.head), []byte(tc.tail))
		if string(id) != tc.id || method != tc.method || resp != tc.response {
			t.Errorf("%s…%s: got %s %q %v", tc.head, tc.tail, id, method, resp)
		}
	}
}

func TestLineWriterTracksPrompts(t *testing.T) {
	var out bytes.Buffer
	w := newLineWriter(&out)
	if !w.claimPrompt("7", "s1") || w.claimPrompt("8", "s1") || !w.claimPrompt("9", "s2") {
		t.Fatal("claims")
	}
	// Our own request with id 7 does not release the prompt.
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{}}` + "\n"))
	if w.claimPrompt("10", "s1") {
		t.Fatal("a request of ours released the prompt")
	}
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}` + "\n"))
	if !w.claimPrompt("11", "s1") {
		t.Fatal("the response did not release the prompt")
	}
	fired := 0
	w.afterResponse(func() { fired++ }, []byte(`"sessionId":"s3"`), []byte(`"configOptions":`))
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{"sessions":[{"sessionId":"s3"}]}}` + "\n"))
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":3,"result":{"configOptions":[],"sessionId":"s3"}}` + "\n"))
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":4,"result":{"configOptions":[],"sessionId":"s3"}}` + "\n"))
	if fired != 1 {
		t.Fatalf("hook fired %d times", fired)
	}
	w.close()
	if _, err := w.Write([]byte("x\n")); err == nil {
		t.Fatal("write after close")
	}
}

// BenchmarkFilterPrompt measures the frame filter on 1 MiB prompt frames
// (the extra cost in front of the SDK: validation and the prompt claim).
func BenchmarkFilterPrompt(b *testing.B) {
	text := strings.Repeat("a", 1<<20)
	var frames bytes.Buffer
	const n = 16
	for i := 0; i < n; i++ {
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "session/prompt",
			"params": map[string]any{"sessionId": fmt.Sprintf("s%d", i), "prompt": []any{map[string]any{"type": "text", "text": text}}}})
		frames.Write(append(line, '\n'))
	}
	data := frames.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f := &filter{in: bufio.NewReaderSize(bytes.NewReader(data), 64<<10), sdk: io.Discard, w: newLineWriter(io.Discard),
			maxFrame: DefaultMaxFrameBytes, log: slog.New(slog.DiscardHandler)}
		if err := f.run(); err != nil {
			b.Fatal(err)
		}
	}
}
