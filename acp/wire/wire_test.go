package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestIDKey(t *testing.T) {
	same := [][]string{{`1`, `1.0`, `1e0`, `10e-1`}, {`"a"`, `"\u0061"`}, {`null`}, {`-3`, `-3.00`}}
	for _, group := range same {
		for _, id := range group {
			if IDKey(json.RawMessage(id)) != IDKey(json.RawMessage(group[0])) {
				t.Errorf("%s and %s are one id", id, group[0])
			}
		}
	}
	if IDKey(json.RawMessage(`1`)) == IDKey(json.RawMessage(`"1"`)) {
		t.Error("the number 1 and the string \"1\" are two ids")
	}
	if k := IDKey(json.RawMessage(`1e999999999`)); !strings.HasPrefix(k, "?:") {
		t.Errorf("a huge exponent is compared as text, got %q", k)
	}
}

// The skim of an oversized frame finds the id and method wherever they are,
// through strings with escaped quotes and nested values.
func TestSkim(t *testing.T) {
	for _, tc := range []struct {
		frame, id, method string
		response          bool
	}{
		{`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"x":"aaaa"}}`, "5", "session/prompt", false},
		{`{"jsonrpc":"2.0","method":"session\/prompt","params":{"x":"a\"}{,","y":[1,{"z":"]"}]},"id":"a-1"}`, `"a-1"`, "session/prompt", false},
		{`{"params":{"x":"aa"},"id":9,"method":"m"}`, "9", "m", false},
		{`{"jsonrpc":"2.0","id":3,"result":{"content":"aaa"}}`, "3", "", true},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, "", "session/cancel", false},
		{`not json at all`, "", "", false},
	} {
		sk := skim([]byte(tc.frame))
		if string(sk.id) != tc.id || sk.method != tc.method || sk.response != tc.response {
			t.Errorf("%s: got id %s method %q response %v", tc.frame, sk.id, sk.method, sk.response)
		}
	}
}

func TestFrameReader(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"x","params":{"p":"` + strings.Repeat("a", 200<<10) + `"},"id":"late"}`
	in := "\xef\xbb\xbf{\"a\":1}\r\n\n  \n" + big + "\n" + `{"b":2}`
	fr := newFrameReader(strings.NewReader(in), 100<<10)
	f, err := fr.next()
	if err != nil || string(f.line) != `{"a":1}` {
		t.Fatalf("frame 1: %q %v", f.line, err)
	}
	for i := 0; i < 2; i++ { // the blank lines
		if f, err = fr.next(); err != nil || len(f.line) != 0 || f.over != nil {
			t.Fatalf("blank: %q %v", f.line, err)
		}
	}
	f, err = fr.next()
	if err != nil || f.over == nil || string(f.over.id) != `"late"` || f.size != len(big) {
		t.Fatalf("oversized: %+v size %d (want %d) %v", f.over, f.size, len(big), err)
	}
	if f, err = fr.next(); err != nil || string(f.line) != `{"b":2}` {
		t.Fatalf("last line without newline: %q %v", f.line, err)
	}
	if _, err = fr.next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
}

type echo struct{ notes chan string }

func (e echo) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == "block" {
		<-ctx.Done()
		return nil, Errorf(CodeRequestCancelled, "cancelled")
	}
	return map[string]string{"method": method}, nil
}

func (e echo) HandleNotification(_ context.Context, method string, _ json.RawMessage) {
	e.notes <- method
}

// Two connections back to back: calls, notifications in order, and a call
// whose context ends sends $/cancel_request, which cancels the handler.
func TestConnCallNotifyCancel(t *testing.T) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	notes := make(chan string, 4)
	a := New(ar, aw, echo{notes: notes}, Options{})
	b := New(br, bw, echo{notes: notes}, Options{})
	go func() { _ = a.Run() }()
	go func() { _ = b.Run() }()
	defer func() {
		_ = aw.Close()
		_ = bw.Close()
		a.Wait()
		b.Wait()
	}()
	var got map[string]string
	if err := a.Call(context.Background(), "hello", map[string]int{"x": 1}, &got); err != nil || got["method"] != "hello" {
		t.Fatalf("call: %v %v", got, err)
	}
	for _, m := range []string{"n1", "n2"} {
		if err := a.Notify(m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if x, y := <-notes, <-notes; x != "n1" || y != "n2" {
		t.Fatalf("notifications out of order: %s %s", x, y)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Call(ctx, "block", nil, nil); err != context.DeadlineExceeded {
		t.Fatalf("blocked call: %v", err)
	}
	// The peer's handler was cancelled by $/cancel_request: nothing is left
	// in flight there.
	b.Wait()
}

// Raw bytes in, raw bytes out: what a server answers to bad frames.
func TestConnAnswersBadFrames(t *testing.T) {
	in := strings.Join([]string{`{"jsonrpc":"2.0","id":1,"method":"m"`, `[]`, `{"jsonrpc":"2.0","id":2}`, `{"jsonrpc":"2.0","id":true,"method":"m"}`}, "\n") + "\n"
	pr, pw := io.Pipe()
	c := New(strings.NewReader(in), pw, echo{notes: make(chan string, 1)}, Options{})
	go func() { _ = c.Run(); c.Wait(); _ = pw.Close() }()
	sc := bufio.NewScanner(pr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	want := []string{`"id":null,"error":{"code":-32700`, `"id":null,"error":{"code":-32600`, `"id":null,"error":{"code":-32600`, `"id":null,"error":{"code":-32600`}
	if len(lines) != len(want) {
		t.Fatalf("answers %q", lines)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("answer %d %s, want %s", i, lines[i], w)
		}
	}
}

// Answer is the one typed-handler shape of both ends: bad params are
// -32602, a cancelled handler -32800, any other failure -32603.
func TestAnswerMapsErrors(t *testing.T) {
	type req struct {
		N int `json:"n"`
	}
	fail := func(err error) func(context.Context, req) (int, error) {
		return func(context.Context, req) (int, error) { return 0, err }
	}
	for _, tc := range []struct {
		params string
		err    error
		code   int
	}{
		{`{"n":"x"}`, nil, CodeInvalidParams},
		{`{"n":1}`, fmt.Errorf("handler: %w", context.Canceled), CodeRequestCancelled},
		{`{"n":1}`, errors.New("boom"), CodeInternalError},
	} {
		_, err := Answer(context.Background(), json.RawMessage(tc.params), fail(tc.err))
		var we *Error
		if !errors.As(err, &we) || we.Code != tc.code {
			t.Errorf("%s / %v: got %v, want code %d", tc.params, tc.err, err, tc.code)
		}
	}
	if res, err := Answer(context.Background(), nil, func(_ context.Context, r req) (int, error) { return r.N + 1, nil }); err != nil || res != 1 {
		t.Errorf("absent params: %v %v", res, err)
	}
}
