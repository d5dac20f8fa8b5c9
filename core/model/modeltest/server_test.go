package modeltest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// collector captures reports instead of failing the test.
type collector struct {
	mu  sync.Mutex
	got []string
}

func (c *collector) report(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, fmt.Sprintf(format, args...))
}

func (c *collector) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.got, "\n")
}

func post(t *testing.T, url, body string, auth bool) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer k")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const (
	sys     = `{"role":"system","content":"S"}`
	user    = `{"role":"user","content":"task one"}`
	tools   = `[{"type":"function","function":{"name":"bash","description":"d","parameters":{}}}]`
	asstTC  = `{"role":"assistant","content":"","reasoning_content":"r","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]}`
	toolRes = `{"role":"tool","tool_call_id":"c1","content":"out"}`
)

func body(msgs ...string) string {
	return `{"model":"deepseek-flash","messages":[` + strings.Join(msgs, ",") + `],"tools":` + tools +
		`,"stream":true,"stream_options":{"include_usage":true}}`
}

func TestServesAndRecords(t *testing.T) {
	srv := New(t)
	srv.Enqueue(ReasoningReply("why", "because"))
	resp, got := post(t, srv.URL, body(sys, user), true)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{`"reasoning_content":"why"`, `"content":"because"`, `"finish_reason":"stop"`,
		`"choices":[],"usage":{"prompt_tokens":100`, "data: [DONE]"} {
		if !strings.Contains(got, want) {
			t.Errorf("stream lacks %s:\n%s", want, got)
		}
	}
	if srv.Count() != 1 {
		t.Fatalf("count %d", srv.Count())
	}
	r := srv.Last()
	if r.FirstUser != "task one" || len(r.Body.Messages) != 2 || string(r.Body.Messages[0].Raw) != sys || !r.ThinkingMode() {
		t.Fatalf("request %+v", r)
	}
	<-r.Done()
}

func TestCheckerCatchesViolations(t *testing.T) {
	cases := []struct {
		name  string
		auth  bool
		reqs  []string
		wants []string
	}{
		{"no auth", false, []string{body(sys, user)}, []string{"[auth]"}},
		{"not streaming", true, []string{`{"model":"m","messages":[` + sys + `]}`}, []string{`"stream" is not true`, "include_usage"}},
		{"missing reasoning_content", true, []string{body(sys, user,
			`{"role":"assistant","content":"hi"}`, `{"role":"user","content":"more"}`)},
			[]string{"[reasoning] messages[2]"}},
		{"temperature in thinking mode", true, []string{strings.Replace(body(sys, user), `"stream":true`, `"temperature":0.2,"stream":true`, 1)},
			[]string{`[sampling] "temperature"`}},
		{"unanswered call", true, []string{body(sys, user, asstTC, `{"role":"user","content":"x"}`)},
			[]string{`tool call "c1" of messages[2] has no tool result`}},
		{"stray result", true, []string{body(sys, user, toolRes)}, []string{"does not follow an assistant message"}},
		{"empty id", true, []string{body(sys, user, strings.Replace(asstTC, `"c1"`, `""`, 1), strings.Replace(toolRes, `"c1"`, `""`, 1))},
			[]string{"empty id"}},
		{"tools changed", true, []string{body(sys, user), strings.Replace(body(sys, user), `"description":"d"`, `"description":"D"`, 1)},
			[]string{"[stable] the tool list differs"}},
		{"history rewritten", true, []string{
			body(sys, user, asstTC, toolRes),
			body(sys, user, strings.Replace(asstTC, `"{}"`, `"{ }"`, 1), toolRes, `{"role":"assistant","content":"x","reasoning_content":""}`),
		}, []string{"[prefix] messages[2] differs from request #0"}},
		{"history cut", true, []string{body(sys, user, asstTC, toolRes), body(sys, user)}, []string{"history was cut"}},
		{"system changed mid-session", true, []string{
			body(sys, user, asstTC, toolRes),
			body(`{"role":"system","content":"S at 12:01"}`, user, asstTC, toolRes),
		}, []string{"continues a conversation this server has not seen"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var col collector
			srv := New(t, WithReporter(col.report), WithResponder(func(*Request) Reply { return TextReply("ok") }))
			for _, b := range c.reqs {
				post(t, srv.URL, b, c.auth)
			}
			all := col.all()
			for _, w := range c.wants {
				if !strings.Contains(all, w) {
					t.Errorf("reports lack %q:\n%s", w, all)
				}
			}
			if len(srv.Violations()) == 0 {
				t.Error("no violations recorded")
			}
		})
	}
}

func TestCheckerAcceptsGoodConversation(t *testing.T) {
	srv := New(t, WithResponder(func(*Request) Reply { return TextReply("ok") }))
	asst2 := `{"role":"assistant","content":"done","reasoning_content":""}`
	for _, b := range []string{
		body(sys, user),
		body(sys, user, asstTC, toolRes),
		body(sys, user, asstTC, toolRes), // a retry
		body(sys, user, asstTC, toolRes, asst2, `{"role":"user","content":"next turn"}`),
		// another session, concurrently, with its own first message
		body(sys, `{"role":"user","content":"task two"}`),
		// after compaction: a new first user message starts fresh
		body(sys, `{"role":"user","content":"Summary of the conversation so far"}`),
	} {
		post(t, srv.URL, b, true)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
}

func TestWithoutChecks(t *testing.T) {
	srv := New(t, WithoutChecks(CheckAuth, CheckReasoning, CheckPrefix), WithResponder(func(*Request) Reply { return TextReply("ok") }))
	post(t, srv.URL, body(sys, user, `{"role":"assistant","content":"hi"}`, `{"role":"user","content":"more"}`), false)
	for _, v := range srv.Violations() {
		if strings.Contains(v, "[auth]") || strings.Contains(v, "[reasoning]") {
			t.Fatalf("disabled check ran: %s", v)
		}
	}
}

func TestQueuesPerConversation(t *testing.T) {
	srv := New(t)
	srv.Enqueue(TextReply("global"))
	srv.EnqueueFor("two", TextReply("for two"))
	_, a := post(t, srv.URL, body(sys, user), true)
	_, b := post(t, srv.URL, body(sys, `{"role":"user","content":"task two"}`), true)
	if !strings.Contains(a, "global") || !strings.Contains(b, "for two") {
		t.Fatalf("a %s\nb %s", a, b)
	}
}

func TestUnexpectedRequests(t *testing.T) {
	var col collector
	srv := New(t, WithReporter(col.report))
	resp, _ := post(t, srv.URL, body(sys, user), true)
	if resp.StatusCode != 400 || !strings.Contains(col.all(), "no reply queued") {
		t.Fatalf("status %d reports %s", resp.StatusCode, col.all())
	}
	resp, _ = post(t, srv.URL, "not json", true)
	if resp.StatusCode != 400 || !strings.Contains(col.all(), "not a chat-completions request") {
		t.Fatalf("status %d reports %s", resp.StatusCode, col.all())
	}
	r, err := http.Get(srv.URL + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 404 || !strings.Contains(col.all(), "unexpected GET /elsewhere") {
		t.Fatalf("status %d", r.StatusCode)
	}
	r, err = http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("models: %d", r.StatusCode)
	}
}

func TestGateAndDisconnect(t *testing.T) {
	gate := make(chan struct{})
	srv := New(t)
	srv.Enqueue(NewStream().Role().Gate(gate).Text("after gate").Stall().Reply())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/chat/completions", strings.NewReader(body(sys, user)))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, _ := rd.ReadString('\n')
	if !strings.Contains(line, `"role":"assistant"`) {
		t.Fatalf("first line %q", line)
	}
	close(gate)
	rd.ReadString('\n') // blank
	line, _ = rd.ReadString('\n')
	if !strings.Contains(line, "after gate") {
		t.Fatalf("line %q", line)
	}
	cancel()
	select {
	case <-srv.Last().Disconnected():
	case <-time.After(2 * time.Second):
		t.Fatal("disconnect not seen")
	}
}

func TestCloseReleasesStalledHandlers(t *testing.T) {
	srv := New(t)
	srv.Enqueue(NewStream().Role().Stall().Reply(), NewStream().Gate(make(chan struct{})).Reply(),
		NewStream().Delay(time.Hour).Reply())
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/chat/completions", strings.NewReader(body(sys, user)))
			req.Header.Set("Authorization", "Bearer k")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	if !srv.WaitCount(3, 5*time.Second) {
		t.Fatal("requests did not arrive")
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Close hung on a stalled handler")
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
}

func TestBuilders(t *testing.T) {
	parts := Split("héllo wörld ✓", 5)
	if strings.Join(parts, "") != "héllo wörld ✓" || len(parts) != 5 {
		t.Fatalf("split %q", parts)
	}
	for _, p := range parts {
		if !strings.ContainsRune(p, '\uFFFD') && !bytes.Equal([]byte(p), []byte(strings.ToValidUTF8(p, "?"))) {
			t.Fatalf("piece %q splits a rune", p)
		}
	}
	if a := BigArgs(1000); len(a) != 1000 || !strings.HasSuffix(a, `"}`) {
		t.Fatalf("BigArgs len %d", len(a))
	}
	r := ToolCallsReply("", Call{Name: "bash", Args: `{"command":"ls"}`, Fragments: 4})
	var data []string
	for _, c := range r.Chunks {
		data = append(data, string(c.Bytes))
	}
	all := strings.Join(data, "")
	if strings.Count(all, `"index":0,"function":{"arguments"`) != 4 || !strings.Contains(all, `"id":"call_0","type":"function"`) {
		t.Fatalf("stream:\n%s", all)
	}
	if r := ErrorReply(429, "slow").WithHeader("Retry-After", "2"); r.Header.Get("Retry-After") != "2" || r.Status != 429 {
		t.Fatalf("%+v", r)
	}
}
