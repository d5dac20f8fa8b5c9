// Package protocol is the SDK JSON-RPC wire contract shared by the server
// (`dsh sdk`) and Go clients: method names, the params and results of every
// request, the notification payloads, and the original's error messages.
//
// The shapes are the original DeepSeek Harness SDK protocol (spec
// dsh-protocols.md §1.2–1.5), byte-compatible so the original TypeScript and
// Python clients drive `dsh sdk` unchanged. Our additions are marked "ours";
// each is optional on the wire, so an original client that never sends or
// reads them is unaffected.
package protocol

import (
	"encoding/json"

	"github.com/dsh-dev/dsh/core/event"
)

// Requests (client → server).
const (
	MethodInitialize    = "initialize"
	MethodSessionPrompt = "session/prompt"
	MethodShutdown      = "shutdown"
	// MethodSessionCancel is ours: end the running turn of a session
	// `aborted` (the original has no cancel; its clients close the process).
	MethodSessionCancel = "session/cancel"
	// MethodSessionClose is ours: dispose one session and flush its log.
	MethodSessionClose = "session/close"
	// MethodSessionCompact is ours: compact a session's history now.
	MethodSessionCompact = "session/compact"
	// MethodSessionRewind is ours: take a session back to before a turn,
	// or undo the last rewind.
	MethodSessionRewind = "session/rewind"
	// MethodSessionCommands is ours: list the slash commands a session
	// offers (built-ins, the project's and user's command files, MCP
	// prompts), for a host's menu. A session/prompt whose text is
	// "/name args" runs one.
	MethodSessionCommands = "session/commands"
)

// MethodRequestPermission is ours, a server → client request asking the host
// to approve a tool call. It is sent only to a host that declared
// ClientCapabilities.Permissions in initialize.
const MethodRequestPermission = "session/request_permission"

// Notifications (server → client).
const (
	NotifySessionEvent     = "session.event"
	NotifySessionStatus    = "session.status"
	NotifySubagentStarted  = "subagent.started"
	NotifySubagentFinished = "subagent.finished"
)

// ServerName is the wire-stable serverInfo.name; the original's clients
// expect exactly this string.
const ServerName = "deepseek-harness-sdk-runtime"

// ProtocolVersion is ours: the version of this protocol including our
// extensions, reported in InitializeResult. The original has none.
const ProtocolVersion = 1

// Defaults the original clients use when the host names no provider/model.
const (
	DefaultProvider = "deepseek-official"
	DefaultModel    = "deepseek-flash"
)

// ClientCapabilities is ours: what the host can do for the server.
type ClientCapabilities struct {
	// Permissions: the host answers session/request_permission. Without it
	// the server's permission mode decides alone.
	Permissions bool `json:"permissions,omitempty"`
}

// InitializeParams are the params of initialize. A host fills the fields
// directly; a server decodes with ParseInitializeParams, which reports the
// original's validation messages. MaxTokens 0 and ReasoningEffort "" mean
// absent (both are omitted from the wire).
type InitializeParams struct {
	Cwd             string              `json:"cwd"`
	Provider        string              `json:"provider"`
	Model           string              `json:"model"`
	MaxTokens       int64               `json:"maxTokens,omitempty"`
	ReasoningEffort string              `json:"reasoningEffort,omitempty"`
	Capabilities    *ClientCapabilities `json:"capabilities,omitempty"`
	// MCPServers (ours, optional) names MCP servers for this connection's
	// sessions, in the config file's shape: {"NAME": {"command", "args",
	// "env"}} or {"NAME": {"type": "http", "url", "headers"}}.
	MCPServers json.RawMessage `json:"mcpServers,omitempty"`
}

// ServerInfo names the runtime.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ServerCapabilities is ours: which of our extensions the server serves.
type ServerCapabilities struct {
	Cancel      bool `json:"cancel"`      // session/cancel
	Close       bool `json:"close"`       // session/close
	Permissions bool `json:"permissions"` // session/request_permission when the host opts in
	Compact     bool `json:"compact"`     // session/compact
	Rewind      bool `json:"rewind"`      // session/rewind
	Commands    bool `json:"commands"`    // session/commands, and slash commands in session/prompt
}

// InitializeResult is the result of initialize. The original sends only
// serverInfo; ProtocolVersion and Capabilities are ours.
type InitializeResult struct {
	ServerInfo      ServerInfo          `json:"serverInfo"`
	ProtocolVersion int                 `json:"protocolVersion,omitempty"`
	Capabilities    *ServerCapabilities `json:"capabilities,omitempty"`
}

// SessionPromptParams are the params of session/prompt. ContentBlocks are
// kept raw: durable content blocks (event.ContentBlock) and encoded images
// ({type:"image", data, mimeType}); see ParsePromptBlocks and TextBlock.
type SessionPromptParams struct {
	SessionID     string            `json:"sessionId"`
	ContentBlocks []json.RawMessage `json:"contentBlocks"`
}

// SessionPromptResult is the enqueue receipt of session/prompt: the id of the
// queued user message, not of any later answer.
type SessionPromptResult struct {
	MessageID string `json:"messageId"`
	// Command (ours) is set when the prompt was one of the session's slash
	// commands that dsh answered itself (/mcp, /compact...): nothing was
	// queued, MessageID is "", and this says what the command did. A
	// command that expands to a prompt (/init, a command file) is queued
	// as that prompt and answered with its MessageID, without Command.
	Command *CommandOutcome `json:"command,omitempty"`
}

// CommandOutcome is what a slash command sent as a prompt did (ours).
type CommandOutcome struct {
	Name string `json:"name"`
	// Reply is the text dsh answers (Markdown), not recorded in the log;
	// "" when the command has nothing to say.
	Reply string `json:"reply,omitempty"`
	// Seq is the last event the command committed (a compaction's
	// checkpoint), already sent as session.event; 0 when it committed none.
	Seq int64 `json:"seq,omitempty"`
}

// SessionCommandsParams are the params of session/commands (ours).
type SessionCommandsParams struct {
	SessionID string `json:"sessionId"`
}

// SessionCommandsResult is the answer of session/commands: the commands
// in the order a menu shows them (built-ins first).
type SessionCommandsResult struct {
	Commands []CommandInfo `json:"commands"`
}

// CommandInfo is one slash command: its name without the slash, a one-line
// description and, when it takes arguments, a hint describing them.
type CommandInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Hint        string `json:"hint,omitempty"`
}

// Empty is the `{}` result of shutdown, session/cancel and session/close.
type Empty struct{}

// SessionCancelParams are the params of session/cancel (ours).
type SessionCancelParams struct {
	SessionID string `json:"sessionId"`
}

// SessionCloseParams are the params of session/close (ours).
type SessionCloseParams struct {
	SessionID string `json:"sessionId"`
}

// SessionCompactParams are the params of session/compact (ours): the
// session, and optional text the summary should focus on.
type SessionCompactParams struct {
	SessionID string `json:"sessionId"`
	Focus     string `json:"focus,omitempty"`
}

// SessionCompactResult is the answer of session/compact, sent once the
// checkpoint is committed: the history's size before and after (tokens)
// and how many model messages the summary replaced.
type SessionCompactResult struct {
	TokensBefore     int64 `json:"tokensBefore"`
	TokensAfter      int64 `json:"tokensAfter"`
	ReplacedMessages int   `json:"replacedMessages"`
}

// SessionRewindParams are the params of session/rewind (ours): rewind to
// before Turn in Scope (all | files | conversation; default all), or
// with Undo undo the last rewind. Force overwrites files changed outside
// the agent.
type SessionRewindParams struct {
	SessionID string `json:"sessionId"`
	Turn      int    `json:"turn,omitempty"`
	Scope     string `json:"scope,omitempty"`
	Undo      bool   `json:"undo,omitempty"`
	Force     bool   `json:"force,omitempty"`
}

// SessionRewindResult is the answer of session/rewind, sent once the files
// are restored and the rewind committed: the session/rewind event's
// payload (what was restored) and its seq.
type SessionRewindResult struct {
	event.Rewind
	Seq int64 `json:"seq"`
}

// SessionEventParams is the payload of session.event: one committed event
// of any session in the runtime (children and non-SDK sessions included).
type SessionEventParams struct {
	SessionID string      `json:"sessionId"`
	Event     event.Event `json:"event"`
}

// Session statuses of session.status.
const (
	StatusRunning = "running"
	StatusIdle    = "idle"
)

// SessionStatusParams is the payload of session.status: a whole-agent
// running/idle transition.
type SessionStatusParams struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
}

// SubagentStartedParams is the payload of subagent.started, sent for every
// session created with a parent session.
type SubagentStartedParams struct {
	ParentSessionID string `json:"parentSessionId"`
	ChildSessionID  string `json:"childSessionId"`
}

// Subagent finish statuses.
const (
	SubagentOK    = "ok"
	SubagentError = "error"
)

// SubagentFinishedParams is the payload of subagent.finished, sent for
// in-process (local) child runs only. AgentID equals ChildSessionID.
// LastAssistantMessage is the child's last non-empty assistant content, or
// its accumulated text; omitted (never []) when the child produced nothing.
// StopReason is completed | aborted | error | max-tokens | refusal.
type SubagentFinishedParams struct {
	Provider             string               `json:"provider"`
	AgentID              string               `json:"agentId"`
	ParentSessionID      string               `json:"parentSessionId"`
	ChildSessionID       string               `json:"childSessionId"`
	Status               string               `json:"status"`
	StopReason           string               `json:"stopReason"`
	LastAssistantMessage []event.ContentBlock `json:"lastAssistantMessage,omitempty"`
}

// AppendJSON appends the JSON encoding of p to dst without encoding/json's
// reflection and without re-compacting the event's data (event.AppendJSON):
// session.event is the protocol's hot path, and ndjson.Stream.Notify uses
// this when present. The bytes equal json.Marshal's for every event the
// runtime commits.
func (p SessionEventParams) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"sessionId":`...)
	dst = event.AppendString(dst, p.SessionID)
	dst = append(dst, `,"event":`...)
	dst, err := p.Event.AppendJSON(dst)
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}
