package ndjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rw is an in-memory ReadWriteCloser: reads from r, records writes.
type rw struct {
	r  io.Reader
	mu sync.Mutex
	w  bytes.Buffer
}

func (x *rw) Read(p []byte) (int, error) { return x.r.Read(p) }
func (x *rw) Write(p []byte) (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.w.Write(p)
}
func (x *rw) Close() error { return nil }
func (x *rw) written() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.w.String()
}

// readAll reads messages until EOF, decoding into json.RawMessage (the
// stream accepts any target jsonrpc2 would, and RawMessage shows what the
// library would have been given).
func readAll(t *testing.T, s *Stream) []string {
	t.Helper()
	var out []string
	for {
		var m json.RawMessage
		err := s.ReadObject(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("ReadObject: %v", err)
		}
		out = append(out, string(m))
	}
}

func TestStream_SkipsUnusableLinesAndKeepsReading(t *testing.T) {
	bad := []string{
		``,
		`   `,
		"\t\r",
		`not json`,
		`{"jsonrpc":"2.0","id":1,"method":"x"`, // truncated
		`{"jsonrpc":"2.0","id":1,"method":"x"} trailing`, // garbage after
		`{"a":1}{"b":2}`, // two objects on one line
		`[1,2]`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, // batch
		`42`,
		`"str"`,
		`null`,
		`{"foo":1}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":-1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"x"}`,
		`{"jsonrpc":"2.0","id":01,"method":"x"}`,
		`{"jsonrpc":"2.0","id":true,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":99999999999999999999,"method":"x"}`,
		`{"jsonrpc":"2.0","method":5}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","result":1}`,
		`{"jsonrpc":"2.0","result":1}`,
		`{"jsonrpc":"2.0","id":null,"result":1}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}`,
		`{"jsonrpc":"2.0","id":-3,"result":1}`,
	}
	good := []string{
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{}}`,
		`{"jsonrpc":"2.0","id":"req_1","method":"b"}`,
		`{"jsonrpc":"2.0","method":"note"}`,
		`{"jsonrpc":"2.0","id":null,"method":"note2"}`,
		`{"jsonrpc":"2.0","id":0,"result":null}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m","data":[1]}}`,
		`{"id":9223372036854775807,"method":"max"}`,
	}
	var in strings.Builder
	for i, g := range good {
		in.WriteString(bad[i%len(bad)] + "\n")
		in.WriteString(g + "\n")
	}
	for _, b := range bad {
		in.WriteString(b + "\n")
	}
	s := New(&rw{r: strings.NewReader(in.String())}, Options{})
	got := readAll(t, s)
	if len(got) != len(good) {
		t.Fatalf("got %d messages, want %d:\n%s", len(got), len(good), strings.Join(got, "\n"))
	}
	for i := range good {
		if got[i] != good[i] {
			t.Errorf("message %d = %s, want %s", i, got[i], good[i])
		}
	}
}

func TestStream_TrimsCRSpacesAndBOM(t *testing.T) {
	in := "\xef\xbb\xbf{\"id\":1,\"method\":\"a\"}\r\n  {\"id\":2,\"method\":\"b\"}  \t\r\n{\"id\":3,\"method\":\"c\"}"
	got := readAll(t, New(&rw{r: strings.NewReader(in)}, Options{}))
	want := []string{`{"id":1,"method":"a"}`, `{"id":2,"method":"b"}`, `{"id":3,"method":"c"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestStream_NormalisesMalformedErrorObjects(t *testing.T) {
	in := strings.Join([]string{
		`{"id":"a","error":"boom"}`,
		`{"id":"b","error":{"code":"x","message":"m","data":{"k":1}}}`,
		`{"id":"c","error":{"code":-32000}}`,
		`{"id":"d","error":{"code":1.5,"message":7}}`,
	}, "\n")
	got := readAll(t, New(&rw{r: strings.NewReader(in)}, Options{}))
	want := []string{
		`{"jsonrpc":"2.0","id":"a","error":{"code":0,"message":""}}`,
		`{"jsonrpc":"2.0","id":"b","error":{"code":0,"message":"m","data":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":"c","error":{"code":-32000,"message":""}}`,
		`{"jsonrpc":"2.0","id":"d","error":{"code":0,"message":""}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStream_OversizedLineAnsweredOnceAndSkipped(t *testing.T) {
	for _, size := range []int{33, 100, 200 << 10} { // below and above the 64 KiB read buffer
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			long := `{"id":1,"method":"x","params":"` + strings.Repeat("a", size) + `"}`
			exact := `{"id":2,"method":"y"}`
			in := long + "\n" + exact + "\n" + long + "\n"
			x := &rw{r: strings.NewReader(in)}
			s := New(x, Options{MaxLineBytes: len(exact)})
			got := readAll(t, s)
			if len(got) != 1 || got[0] != exact {
				t.Fatalf("got %q, want only the line at the limit", got)
			}
			reply := fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"frame of %d bytes exceeds the %d-byte limit"}}`+"\n", len(long), len(exact))
			if w := x.written(); w != reply+reply {
				t.Fatalf("written:\n%s\nwant twice:\n%s", w, reply)
			}
		})
	}
}

func TestStream_OversizeReplyCanBeDisabled(t *testing.T) {
	x := &rw{r: strings.NewReader(strings.Repeat("x", 100) + "\n" + `{"id":1,"method":"a"}` + "\n")}
	got := readAll(t, New(x, Options{MaxLineBytes: 50, NoOversizeReply: true}))
	if len(got) != 1 || x.written() != "" {
		t.Fatalf("got %q written %q", got, x.written())
	}
}

func TestStream_UnterminatedOversizedTailAtEOF(t *testing.T) {
	x := &rw{r: strings.NewReader(`{"id":1,"method":"a"}` + "\n" + strings.Repeat("z", 100<<10))}
	got := readAll(t, New(x, Options{MaxLineBytes: 1000}))
	if len(got) != 1 || !strings.Contains(x.written(), "frame of 102400 bytes exceeds the 1000-byte limit") {
		t.Fatalf("got %q written %q", got, x.written())
	}
}

func TestStream_LongLineWithinLimit(t *testing.T) {
	long := `{"id":1,"method":"x","params":{"s":"` + strings.Repeat("é", 300<<10) + `"}}`
	got := readAll(t, New(&rw{r: strings.NewReader(long + "\n" + long)}, Options{}))
	if len(got) != 2 || got[0] != long || got[1] != long {
		t.Fatalf("long lines not delivered intact (%d)", len(got))
	}
}

func TestStream_UTF8SplitAcrossWrites(t *testing.T) {
	pr, pw := io.Pipe()
	s := New(&rw{r: pr}, Options{})
	text := "héllo 你好 🎉 \u2028"
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "n", "params": map[string]string{"t": text}})
	line = append(line, '\n')
	go func() {
		for i := range line { // one byte per write splits every multi-byte rune
			pw.Write(line[i : i+1])
		}
		pw.Close()
	}()
	got := readAll(t, s)
	if len(got) != 1 {
		t.Fatalf("got %d messages", len(got))
	}
	var m struct {
		Params struct{ T string } `json:"params"`
	}
	if err := json.Unmarshal([]byte(got[0]), &m); err != nil || m.Params.T != text {
		t.Fatalf("decoded %q (%v), want %q", m.Params.T, err, text)
	}
}

func TestStream_InvalidUTF8IsReplacedNotFatal(t *testing.T) {
	in := "{\"id\":1,\"method\":\"a\",\"params\":{\"t\":\"\xff\xfe\"}}\n{\"id\":2,\"method\":\"b\"}\n"
	got := readAll(t, New(&rw{r: strings.NewReader(in)}, Options{}))
	if len(got) != 2 {
		t.Fatalf("got %q", got)
	}
	var m struct {
		Params struct{ T string } `json:"params"`
	}
	json.Unmarshal([]byte(got[0]), &m)
	if m.Params.T != "\uFFFD\uFFFD" {
		t.Fatalf("params.t = %q", m.Params.T)
	}
}

func TestStream_ConcurrentWritesNeverInterleave(t *testing.T) {
	x := &rw{r: strings.NewReader("")}
	s := New(x, Options{})
	var wg sync.WaitGroup
	const writers, each = 8, 200
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.WriteObject(map[string]any{"w": w, "i": i, "pad": strings.Repeat("p", 100*w)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(x.written(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("interleaved line: %.80s", l)
		}
	}
}

func TestStream_WriteEscapesLineSeparators(t *testing.T) {
	x := &rw{r: strings.NewReader("")}
	New(x, Options{}).WriteObject(map[string]string{"t": "a\nb\u2028c"})
	if got := x.written(); got != `{"t":"a\nb\u2028c"}`+"\n" {
		t.Fatalf("written %q", got)
	}
}

func TestStream_NotificationHook(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"n1","params":{"a":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"req"}`,
		`{"jsonrpc":"2.0","method":"n2"}`,
		`{"jsonrpc":"2.0","id":"r","result":{}}`,
		`{"jsonrpc":"2.0","method":"n3","params":[1]}`,
	}, "\n")
	var notes []string
	s := New(&rw{r: strings.NewReader(in)}, Options{OnNotification: func(m string, p json.RawMessage) {
		notes = append(notes, m+"="+string(p))
	}})
	got := readAll(t, s)
	if want := "n1={\"a\":1}|n2=|n3=[1]"; strings.Join(notes, "|") != want {
		t.Fatalf("notes %q, want %q", notes, want)
	}
	if len(got) != 2 {
		t.Fatalf("ReadObject got %q, want the request and the response", got)
	}
}

func TestStream_CloseIsIdempotent(t *testing.T) {
	n := 0
	s := NewSplit(strings.NewReader(""), io.Discard, closerFunc(func() error { n++; return nil }), Options{})
	s.Close()
	s.Close()
	if n != 1 {
		t.Fatalf("closed %d times", n)
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func FuzzStream(f *testing.F) {
	f.Add([]byte(`{"id":1,"method":"a"}` + "\n" + `[1]` + "\n{\"id\":\"x\",\"error\":5}\n"))
	f.Add([]byte("\xef\xbb\xbf{\"method\":\"n\",\"params\":null}\r\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x := &rw{r: bytes.NewReader(data)}
		s := New(x, Options{MaxLineBytes: 64})
		for {
			var m json.RawMessage
			if err := s.ReadObject(&m); err != nil {
				break
			}
			if !json.Valid(m) || m[0] != '{' {
				t.Fatalf("delivered a non-object %q", m)
			}
		}
	})
}

type appender string

func (a appender) AppendJSON(dst []byte) ([]byte, error) { return append(dst, a...), nil }

func TestStream_Notify(t *testing.T) {
	x := &rw{r: strings.NewReader("")}
	s := New(x, Options{})
	s.Notify("a.b", nil)
	s.Notify("c", map[string]int{"n": 1})
	s.Notify("d", appender(`{"fast":true}`))
	s.Flush()
	want := `{"jsonrpc":"2.0","method":"a.b"}` + "\n" + `{"jsonrpc":"2.0","method":"c","params":{"n":1}}` + "\n" +
		`{"jsonrpc":"2.0","method":"d","params":{"fast":true}}` + "\n"
	if got := x.written(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := s.Notify("e", func() {}); err == nil || !strings.Contains(err.Error(), "marshal e params") {
		t.Fatalf("err = %v", err)
	}
	// What Notify writes reads back as a notification.
	var got []string
	r := New(&rw{r: strings.NewReader(want)}, Options{OnNotification: func(m string, p json.RawMessage) { got = append(got, m+string(p)) }})
	readAll(t, r)
	if strings.Join(got, "|") != `a.b|c{"n":1}|d{"fast":true}` {
		t.Fatalf("%q", got)
	}
}
