// Package model talks to chat-completion models: the DeepSeek official API,
// any OpenAI-compatible endpoint, and the offline scripted provider. All of
// them stream through the same Provider interface, so the agent loop cannot
// tell a script from a network model.
package model

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// Message is one chat message of a request, in the provider-neutral shape the
// loop builds from the session log. The client serialises it with a fixed
// field order so identical history gives identical bytes.
type Message struct {
	Role    string // system | user | assistant | tool
	Content string
	// Images are attached to a user message (or a tool result the model
	// should see). Data is the raw bytes; the client base64-encodes them.
	Images []Image
	// Reasoning is the assistant's reasoning_content exactly as streamed.
	// When thinking is on, every assistant message sends the key, "" when
	// there was none (DeepSeek 400s otherwise; spec §1.4).
	Reasoning string
	ToolCalls []ToolCall
	// ServerFields are the members of an assistant reply dsh did not
	// know (the result blocks of DeepSeek's server-side web tools), sent
	// back on the message exactly as received (see ServerField).
	ServerFields []ServerField
	ToolCallID   string // role tool
	// Kind says why the history holds a message, for compaction (never
	// sent): "" for the conversation itself, or one of the MessageKind
	// constants.
	Kind string
}

// ContextTag opens the text of the runtime's context message: a user-role
// message holding environment facts and project instructions, written by
// dsh rather than typed by the user. Providers that choose what to do by
// the first user message (the scripted provider, the fake test server)
// skip messages that start with it, so the user's own first prompt still
// decides.
const ContextTag = "<dsh-context>"

// IsContext reports whether m is a runtime context message.
func IsContext(m Message) bool {
	return m.Role == "user" && strings.HasPrefix(m.Content, ContextTag)
}

// SummaryInstructionStart opens the instruction that ends a compaction's
// summary call, so a server (the fake test server) can tell summary calls
// from steps by their last message.
const SummaryInstructionStart = "Stop the task for a moment and write a summary of the conversation so far."

// Message kinds of the model-facing history (Message.Kind).
const (
	KindContext = "context" // environment and project instructions; kept by every compaction
	KindTask    = "task"    // the session's first prompt, kept by compactions
	KindSummary = "summary" // a compaction's summary
	KindNote    = "note"    // says that older messages were dropped to fit the window
	KindWork    = "work"    // the current turn's last tool round, kept by a compaction
	// KindRetry marks the messages only a retried request carries (the
	// reply being corrected and the correction); they are never committed.
	KindRetry = "retry"
)

// Image is image input for a user message.
type Image struct {
	MediaType string
	Data      []byte
}

// ToolCall is a call the model made. Arguments is the raw string as streamed.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
	// FromText marks a call recovered from markup the model wrote in its
	// reply's text (ParseTextCalls), not sent as a tool call.
	FromText bool
}

// ServerField is a member of a streamed assistant reply that is not one
// dsh reads (content, reasoning, tool calls): with DeepSeek's server-side
// web tools declared, the server returns its search and page results in
// the reply, and its guide asks the client to send them back unchanged in
// the next round. Value is the member's JSON as received: for an array
// streamed over several chunks, their elements in order, each verbatim;
// for a string, the fragments joined; otherwise the last value sent.
type ServerField struct {
	Name  string
	Value json.RawMessage
}

// ToolSpec describes a tool to the model. Parameters is a JSON Schema kept
// as raw bytes so it is sent byte-identical on every request.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Request is one model call.
type Request struct {
	Model           string
	Messages        []Message // the system message first
	Tools           []ToolSpec
	MaxTokens       int
	ReasoningEffort string // "" = provider default; "off" disables thinking
	// Attempt is 0 for the first try of a step, 1.. for retries. The scripted
	// provider uses it to replay injected failures.
	Attempt int
	// ToolChoice is sent as tool_choice when set, except to DeepSeek with
	// thinking on, which does not support it.
	ToolChoice string
	// Summary marks a compaction's summary call (never sent): the tools
	// stay in the request, so the cached prefix is the same, and the last
	// message, starting SummaryInstructionStart, forbids calling them.
	Summary bool
}

// Response is a completed model call.
type Response struct {
	Reasoning    string
	Text         string
	ToolCalls    []ToolCall
	ServerFields []ServerField // only when the provider declares server tools
	FinishReason string        // stop | tool_calls | length | content_filter
	Usage        *event.Usage
	RequestID    string
}

// DeltaKind says what a live Delta carries.
type DeltaKind int

// Delta kinds.
const (
	DeltaReasoning DeltaKind = iota + 1
	DeltaText
	DeltaToolCall // Text holds an argument fragment; Index the call index
	DeltaKeepAlive
)

// Delta is a live fragment of a streaming response. The loop records them
// as assistant/chunk events (never part of the conversation) and hands them
// to a door's progress display.
type Delta struct {
	Kind  DeltaKind
	Index int
	Text  string
	// Name is the tool name on the first fragment of a DeltaToolCall
	// (servers send it once), "" otherwise.
	Name string
	// ID is the call id of a DeltaToolCall, once the provider has sent it
	// ("" before, and from servers that send none).
	ID string
}

// Caps is what a provider says about a model.
type Caps struct {
	Images           bool     // accepts image input
	Efforts          []string // accepted reasoning efforts; empty = none
	DefaultEffort    string
	DefaultMaxTokens int
	ContextWindow    int64
}

// Provider streams model calls. Stream returns a *Error on failure; it must
// return promptly when ctx is cancelled, closing the HTTP request.
type Provider interface {
	Name() string
	Caps(model string) Caps
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// Class is an error class. Its Code is what the session log and the doors
// show.
type Class string

// Error classes.
const (
	ClassAuth              Class = "AUTH"
	ClassQuota             Class = "QUOTA"
	ClassRateLimit         Class = "RATE_LIMIT"
	ClassInvalid           Class = "INVALID_REQUEST"
	ClassContextWindow     Class = "CONTEXT_WINDOW_EXCEEDED"
	ClassServer            Class = "SERVER"
	ClassOverloaded        Class = "INSUFFICIENT_SYSTEM_RESOURCE"
	ClassTransport         Class = "TRANSPORT"
	ClassTimeout           Class = "TIMEOUT"
	ClassStreamClosed      Class = "STREAM_CLOSED"
	ClassMalformed         Class = "MALFORMED_RESPONSE"
	ClassEmpty             Class = "EMPTY_RESPONSE"
	ClassMissingCredential Class = "MISSING_CREDENTIAL"
	ClassAborted           Class = "ABORTED"
	ClassScript            Class = "SCRIPT"
)

// Error is a typed model failure.
type Error struct {
	Class      Class
	Status     int           // HTTP status, 0 if none
	Message    string        // human-readable, never contains the API key
	RetryAfter time.Duration // from Retry-After, 0 if none
	RequestID  string
	Err        error // underlying cause, if any
	// Usage is the usage the server reported before the call failed (a
	// stream can carry its usage chunk and still end badly); nil if none.
	Usage *event.Usage
}

func (e *Error) Error() string { return string(e.Class) + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether a step that failed this way may be tried again.
func (e *Error) Retryable() bool {
	switch e.Class {
	case ClassRateLimit, ClassServer, ClassOverloaded, ClassTransport, ClassTimeout,
		ClassStreamClosed, ClassEmpty:
		return true
	}
	return false
}

// Options configure a provider.
type Options struct {
	BaseURL string
	APIKey  string
	// ScriptPath is the script file of the scripted provider.
	ScriptPath string
	// FirstDataTimeout bounds the wait for the first SSE data line (the
	// server queues with keep-alives for up to 10 minutes). Default 11 min.
	FirstDataTimeout time.Duration
	// StallTimeout bounds the silence between data lines once data flows;
	// keep-alive comments do not reset it. Default 180 s.
	StallTimeout time.Duration
	// MaxLineBytes caps one SSE line. Default 64 MiB.
	MaxLineBytes int
	// WebTools declares DeepSeek's server-side web tools
	// (deepseek_web_search, deepseek_read_url) in every request, and keeps
	// the result blocks of the replies (Response.ServerFields). The
	// DeepSeek provider only, unless WebToolsAnyEndpoint: an
	// OpenAI-compatible endpoint declares them only when told to (a proxy
	// in front of DeepSeek).
	WebTools            bool
	WebToolsAnyEndpoint bool
}
