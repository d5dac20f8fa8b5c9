// Package modeltest is a fake DeepSeek chat-completions server for tests of
// any package, including e2e tests that point the built binary at it with
// DEEPSEEK_BASE_URL. It serves scripted SSE replies (with delays, gates and
// stalls) on 127.0.0.1, records every request, and checks on every request
// the invariants a real DeepSeek session depends on (see Check): a test that
// breaks prefix-cache stability or forgets reasoning_content fails even if
// it never looks at the requests.
//
// Typical use:
//
//	srv := modeltest.New(t) // closed in t.Cleanup; violations call t.Errorf
//	srv.Enqueue(
//		modeltest.ToolCallsReply("look first", modeltest.Call{Name: "bash", Args: `{"command":"ls"}`, Fragments: 3}),
//		modeltest.ErrorReply(429, "slow down").WithHeader("Retry-After", "1"),
//		modeltest.TextReply("done"),
//	)
//	p, _ := model.New("deepseek-official", model.Options{BaseURL: srv.URL, APIKey: "k"})
//	// or, for the built binary: cmd.Env = append(os.Environ(), srv.Env()...)
//	... run ...
//	reqs := srv.Requests() // decoded bodies (Body), raw bytes (Raw), headers
//
// Replies come from a Responder (Handle), per-conversation queues
// (EnqueueFor, matched on the first user message) or the global queue
// (Enqueue), in that order. A request nothing answers is reported and gets
// a 400, which the loop does not retry.
//
// It deliberately does not import package model: it checks the bytes on the
// wire, not our own types.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Responder chooses the reply to a request. It runs on the server's handler
// goroutine, outside the server's lock (it may call the Server's methods).
type Responder func(req *Request) Reply

// Server is the fake endpoint. Its zero value is not usable; call New.
type Server struct {
	// URL is the base URL ("http://127.0.0.1:port"); requests go to
	// URL+"/chat/completions" (or URL+"/v1/chat/completions").
	URL string

	srv      *httptest.Server
	report   func(format string, args ...any)
	disabled map[Check]bool
	closing  chan struct{}
	once     sync.Once

	mu         sync.Mutex
	requests   []*Request
	responder  Responder
	queue      []Reply
	convQueues []*convQueue
	convs      map[string]*convState
	violations []string
	changed    chan struct{} // closed and replaced on every new request
	// contextLimit, when positive, is the window requests must fit
	// (WithContextLimit); cache holds the prefixes of recent requests.
	contextLimit int64
	// countMaxTokens counts max_tokens against contextLimit, as DeepSeek
	// does (WithMaxTokensCounted).
	countMaxTokens bool
	cache          [][]byte
}

type convQueue struct {
	match   string
	replies []Reply
}

// Option configures a Server.
type Option func(*Server)

// WithoutChecks disables invariant checks, e.g. CheckReasoning for an
// openai-compatible client, or CheckPrefix for a session resumed from a
// hand-written log.
func WithoutChecks(c ...Check) Option {
	return func(s *Server) {
		for _, x := range c {
			s.disabled[x] = true
		}
	}
}

// WithReporter sends invariant violations and unexpected requests to f
// instead of tb.Errorf (the checker's own tests use it).
func WithReporter(f func(format string, args ...any)) Option {
	return func(s *Server) { s.report = f }
}

// WithResponder sets the responder from the start (see Handle).
func WithResponder(r Responder) Option {
	return func(s *Server) { s.responder = r }
}

// New starts a server on 127.0.0.1 and closes it in tb.Cleanup. Violations
// are reported with tb.Errorf. tb may be nil (e.g. in TestMain) if
// WithReporter is given; then the caller must Close the server.
func New(tb testing.TB, opts ...Option) *Server {
	s := &Server{
		disabled: map[Check]bool{},
		closing:  make(chan struct{}),
		convs:    map[string]*convState{},
		changed:  make(chan struct{}),
	}
	if tb != nil {
		tb.Helper()
		s.report = tb.Errorf
	}
	for _, o := range opts {
		o(s)
	}
	if s.report == nil {
		panic("modeltest.New: a nil testing.TB needs WithReporter")
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// TestKey is the API key Env hands to the binary under test.
const TestKey = "sk-modeltest"

// Env is the environment that points a dsh binary at this server as its
// deepseek-official provider, for e2e tests (append it to os.Environ()).
func (s *Server) Env() []string {
	return []string{
		"DSH_PROVIDER=deepseek-official",
		"DEEPSEEK_BASE_URL=" + s.URL,
		"DEEPSEEK_API_KEY=" + TestKey,
	}
}

// Close releases every waiting handler (delays, gates, stalls) and shuts
// the server down. It is idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// Handle sets the responder, which then answers every request (queues are
// ignored while it is set). nil removes it.
func (s *Server) Handle(r Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = r
}

// Enqueue appends replies to the global queue, served first in, first out
// to requests no conversation queue claims.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// EnqueueFor appends replies for the conversations whose first user
// message contains match, so concurrent sessions can each get their own
// script. The first queue with a matching key and replies left wins.
func (s *Server) EnqueueFor(match string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.convQueues {
		if q.match == match {
			q.replies = append(q.replies, replies...)
			return
		}
	}
	s.convQueues = append(s.convQueues, &convQueue{match: match, replies: replies})
}

// Requests returns the chat-completion requests received so far, in
// arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Count is the number of chat-completion requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Last is the latest request, nil if none.
func (s *Server) Last() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

// WaitCount waits until at least n requests have arrived, up to timeout,
// and reports whether they did.
func (s *Server) WaitCount(n int, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		got, ch := len(s.requests), s.changed
		s.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-s.closing:
			return false
		}
	}
}

// Violations returns every invariant violation seen so far (each was also
// reported).
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/chat/completions", "/v1/chat/completions":
	case "/models", "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"deepseek-flash","object":"model","owned_by":"deepseek"},{"id":"deepseek-v4-pro","object":"model","owned_by":"deepseek"}]}`)
		return
	default:
		s.report("modeltest: unexpected %s %s (want POST /chat/completions)", r.Method, r.URL.Path)
		writeReply(w, ErrorReply(http.StatusNotFound, "no such endpoint: "+r.URL.Path))
		return
	}
	if r.Method != http.MethodPost {
		s.report("modeltest: %s %s, want POST", r.Method, r.URL.Path)
		writeReply(w, ErrorReply(http.StatusMethodNotAllowed, "use POST"))
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return // client went away while sending
	}
	req := &Request{
		Method:       r.Method,
		Path:         r.URL.Path,
		Header:       r.Header.Clone(),
		Raw:          raw,
		disconnected: make(chan struct{}),
		done:         make(chan struct{}),
	}
	defer close(req.done)
	decodeErr := req.decode()

	s.mu.Lock()
	req.Seq = len(s.requests)
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	var problems []string
	if decodeErr != nil {
		problems = []string{fmt.Sprintf("body is not a chat-completions request: %v", decodeErr)}
	} else {
		problems = s.check(req)
	}
	s.violations = append(s.violations, prefixAll(req, problems)...)
	responder := s.responder
	var reply Reply
	picked := false
	if decodeErr == nil {
		s.measureCache(req)
		completion := int64(0)
		if s.countMaxTokens && req.Body.MaxTokens != nil {
			completion = int64(*req.Body.MaxTokens)
		}
		if s.contextLimit > 0 && req.PromptTokens+completion > s.contextLimit {
			req.Refused = true
			reply, picked, responder = contextLimitReply(s.contextLimit, req.PromptTokens, completion), true, nil
		}
	}
	if responder == nil && decodeErr == nil && !picked {
		reply, picked = s.popLocked(req)
	}
	s.mu.Unlock()

	for _, p := range problems {
		s.report("modeltest: request #%d (conversation %q): %s", req.Seq, shorten(req.FirstUser, 60), p)
	}
	switch {
	case decodeErr != nil:
		reply = ErrorReply(http.StatusBadRequest, "modeltest: "+decodeErr.Error())
	case responder != nil:
		reply = responder(req)
	case !picked:
		s.report("modeltest: request #%d (conversation %q): no reply queued", req.Seq, shorten(req.FirstUser, 60))
		// 400 is not retryable, so the client stops instead of hammering.
		reply = ErrorReply(http.StatusBadRequest, "modeltest: no reply queued for this request")
	}
	s.serveReply(w, r, req, reply)
}

func prefixAll(req *Request, problems []string) []string {
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = fmt.Sprintf("request #%d: %s", req.Seq, p)
	}
	return out
}

func (s *Server) popLocked(req *Request) (Reply, bool) {
	for _, q := range s.convQueues {
		if len(q.replies) > 0 && strings.Contains(req.FirstUser, q.match) {
			r := q.replies[0]
			q.replies = q.replies[1:]
			return r, true
		}
	}
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r, true
	}
	return Reply{}, false
}

func writeReply(w http.ResponseWriter, rep Reply) {
	for k, vs := range rep.Header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(rep.Body)
}

// serveReply writes rep, honouring delays, gates and stalls. It notes on
// req when it sees the client go away.
func (s *Server) serveReply(w http.ResponseWriter, r *http.Request, req *Request, rep Reply) {
	if rep.Body != nil {
		writeReply(w, rep)
		return
	}
	for k, vs := range rep.Header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	gone := func() { req.markDisconnected() }
	for _, c := range rep.Chunks {
		if c.Delay > 0 {
			t := time.NewTimer(c.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				gone()
				return
			case <-s.closing:
				t.Stop()
				return
			}
		}
		if c.Gate != nil {
			select {
			case <-c.Gate:
			case <-r.Context().Done():
				gone()
				return
			case <-s.closing:
				return
			}
		}
		if c.Hang {
			select {
			case <-r.Context().Done():
				gone()
			case <-s.closing:
			}
			return
		}
		if len(c.Bytes) == 0 {
			continue
		}
		if _, err := w.Write(c.Bytes); err != nil {
			gone()
			return
		}
		if err := rc.Flush(); err != nil {
			gone()
			return
		}
	}
}

// Request is one received chat-completions request.
type Request struct {
	Seq    int // 0-based arrival order
	Method string
	Path   string
	Header http.Header
	Raw    []byte // the body exactly as received
	Body   Body   // Raw decoded
	// Fields holds the top-level fields of the body, raw, to check for
	// presence (e.g. "temperature").
	Fields map[string]json.RawMessage
	// FirstUser is the text of the first user message; Conversation is
	// the key requests are grouped by: the system message and the first
	// user message, as raw bytes.
	FirstUser    string
	Conversation string
	// PromptTokens is the prompt estimated at four bytes of text a token;
	// CachedTokens the part of it a prefix cache over the server's recent
	// requests holds; Refused that it was over WithContextLimit.
	PromptTokens int64
	CachedTokens int64
	Refused      bool

	discOnce     sync.Once
	disconnected chan struct{}
	done         chan struct{}
}

// Disconnected is closed when the server saw the client leave while it was
// still streaming the reply (the client closed the request).
func (r *Request) Disconnected() <-chan struct{} { return r.disconnected }

// Done is closed when the server finished handling the request.
func (r *Request) Done() <-chan struct{} { return r.done }

func (r *Request) markDisconnected() { r.discOnce.Do(func() { close(r.disconnected) }) }

// ThinkingMode reports whether the request runs in DeepSeek thinking mode:
// on unless "thinking":{"type":"disabled"} (V4 thinks by default).
func (r *Request) ThinkingMode() bool {
	return r.Body.Thinking == nil || r.Body.Thinking.Type != "disabled"
}

// Body is the decoded request body.
type Body struct {
	Model           string         `json:"model"`
	Messages        []Message      `json:"-"`
	Tools           []Tool         `json:"tools"`
	MaxTokens       *int           `json:"max_tokens"`
	Stream          bool           `json:"stream"`
	StreamOptions   *StreamOptions `json:"stream_options"`
	Thinking        *Thinking      `json:"thinking"`
	ReasoningEffort string         `json:"reasoning_effort"`
	ToolChoice      string         `json:"tool_choice"`
}

// StreamOptions is "stream_options".
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Thinking is DeepSeek's "thinking" switch.
type Thinking struct {
	Type string `json:"type"`
}

// Message is one decoded message; Raw is its bytes as sent.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ReasoningContent is nil when the key is absent (or null).
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []ToolCall      `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Raw              json.RawMessage `json:"-"`
}

// Text is the message content as text: the string, or the text parts of
// the array form joined with "\n".
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var texts []string
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// Images counts the image_url parts of the content.
func (m Message) Images() int {
	var parts []struct {
		Type string `json:"type"`
	}
	n := 0
	if json.Unmarshal(m.Content, &parts) == nil {
		for _, p := range parts {
			if p.Type == "image_url" {
				n++
			}
		}
	}
	return n
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is one entry of "tools": a function tool, or one of DeepSeek's
// server tools ({"type": "deepseek_web_search", "name": ...}).
type Tool struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (r *Request) decode() error {
	if err := json.Unmarshal(r.Raw, &r.Fields); err != nil {
		return err
	}
	if err := json.Unmarshal(r.Raw, &r.Body); err != nil {
		return err
	}
	var msgs []json.RawMessage
	if raw, ok := r.Fields["messages"]; ok {
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return fmt.Errorf("messages: %w", err)
		}
	}
	r.Body.Messages = make([]Message, len(msgs))
	var sys, first json.RawMessage
	for i, raw := range msgs {
		m := &r.Body.Messages[i]
		if err := json.Unmarshal(raw, m); err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		m.Raw = raw
		if m.Role == "system" && sys == nil && first == nil {
			sys = m.Content
		}
		if m.Role == "user" && first == nil && !strings.HasPrefix(m.Text(), ContextTag) {
			first = m.Content
			r.FirstUser = m.Text()
		}
	}
	r.Conversation = string(sys) + "\x00" + string(first)
	return nil
}

// ContextTag opens the text of dsh's context message (environment facts
// and project instructions, sent as a user message before the first
// prompt). A conversation is keyed by the user's own first message, so the
// context message is skipped. It equals model.ContextTag (a core test
// checks); it is repeated here because this package checks wire bytes and
// imports none of our types.
const ContextTag = "<dsh-context>"

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
