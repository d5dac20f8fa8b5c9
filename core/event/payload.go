package event

import (
	"encoding/json"
	"strings"
)

// Block types of ContentBlock.
const (
	BlockText       = "text"
	BlockReasoning  = "reasoning"
	BlockImage      = "image"
	BlockToolCall   = "tool-call"
	BlockToolResult = "tool-result"
	// BlockServer (ours) is a member of the model's reply that dsh sends
	// back without reading it: the result blocks of DeepSeek's server-side
	// web tools. Name is the member, Text its JSON exactly as received
	// (kept as a string so the bytes survive the log unchanged).
	BlockServer = "server"
)

// ContentBlock is one block of message content. It is a tagged union kept as
// one struct; MarshalJSON writes only the fields of its Type, so `text` is
// present (even empty) on text and reasoning blocks and absent elsewhere.
type ContentBlock struct {
	Type string
	// text, reasoning
	Text string
	// image
	Attachment *Attachment
	// tool-call: Arguments is the raw argument string exactly as the model
	// streamed it, never re-marshalled (prefix-cache stability).
	ID        string
	Name      string
	Arguments string
	// tool-result
	ToolCallID string
	Content    []ContentBlock
	IsError    bool
}

// Attachment is a durable reference to image bytes kept in the session's
// attachment store, named by content hash.
type Attachment struct {
	AttachmentID string `json:"attachmentId"` // "sha256:<hex>"
	MediaType    string `json:"mediaType"`
	Bytes        int64  `json:"bytes"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	Name         string `json:"name,omitempty"`
}

// Text returns a text block.
func Text(s string) ContentBlock { return ContentBlock{Type: BlockText, Text: s} }

// Reasoning returns a reasoning block.
func Reasoning(s string) ContentBlock { return ContentBlock{Type: BlockReasoning, Text: s} }

type wireBlock struct {
	Type       string          `json:"type"`
	Text       *string         `json:"text,omitempty"`
	Attachment *Attachment     `json:"attachment,omitempty"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Arguments  *string         `json:"arguments,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Content    *[]ContentBlock `json:"content,omitempty"`
	IsError    *bool           `json:"isError,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	w := wireBlock{Type: b.Type}
	switch b.Type {
	case BlockText, BlockReasoning:
		w.Text = &b.Text
	case BlockImage:
		w.Attachment = b.Attachment
	case BlockToolCall:
		w.ID, w.Name, w.Arguments = b.ID, b.Name, &b.Arguments
	case BlockServer:
		w.Name, w.Text = b.Name, &b.Text
	case BlockToolResult:
		c := b.Content
		if c == nil {
			c = []ContentBlock{}
		}
		w.ToolCallID, w.Content, w.IsError = b.ToolCallID, &c, &b.IsError
	default:
		if b.Text != "" {
			w.Text = &b.Text
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON implements json.Unmarshaler. Tool-result content may be a
// plain string in other writers' logs; it is read as one text block.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	var w struct {
		Type       string          `json:"type"`
		Text       string          `json:"text"`
		Attachment *Attachment     `json:"attachment"`
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		ToolCallID string          `json:"toolCallId"`
		Content    json.RawMessage `json:"content"`
		IsError    bool            `json:"isError"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*b = ContentBlock{Type: w.Type, Text: w.Text, Attachment: w.Attachment, ID: w.ID, Name: w.Name,
		ToolCallID: w.ToolCallID, IsError: w.IsError}
	if len(w.Arguments) > 0 {
		var s string
		if json.Unmarshal(w.Arguments, &s) == nil {
			b.Arguments = s
		} else {
			b.Arguments = string(w.Arguments)
		}
	}
	if len(w.Content) > 0 && string(w.Content) != "null" {
		var s string
		if json.Unmarshal(w.Content, &s) == nil {
			b.Content = []ContentBlock{Text(s)}
		} else if err := json.Unmarshal(w.Content, &b.Content); err != nil {
			return err
		}
	}
	return nil
}

// ResultText renders a tool-result block as text: its text blocks, with
// images named (chat-completion tool messages and editor tool calls carry
// text).
func ResultText(r ContentBlock) string {
	var b strings.Builder
	for _, c := range r.Content {
		switch c.Type {
		case BlockText:
			b.WriteString(c.Text)
		case BlockImage:
			if c.Attachment != nil {
				b.WriteString("[image " + c.Attachment.MediaType + " " + c.Attachment.AttachmentID + "]")
			}
		}
	}
	return b.String()
}

// JoinText concatenates the text blocks of content (not reasoning).
func JoinText(content []ContentBlock) string {
	n := 0
	for _, c := range content {
		if c.Type == BlockText {
			n += len(c.Text)
		}
	}
	out := make([]byte, 0, n)
	for _, c := range content {
		if c.Type == BlockText {
			out = append(out, c.Text...)
		}
	}
	return string(out)
}

// Source says where a message came from.
type Source struct {
	Kind     string `json:"kind"` // user | plugin | model | tool
	Plugin   string `json:"plugin,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	CallID   string `json:"callId,omitempty"`
}

// Message is a user, assistant or tool-result message.
type Message struct {
	ID      string         `json:"id"`
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
	Source  Source         `json:"source"`
	// Command (ours) is set on a user's prompt that a custom command file
	// expanded and that asks its turn for another model or for tools
	// allowed without asking; the prompt then runs as a turn of its own.
	Command *CommandTurn `json:"command,omitempty"`
}

// CommandTurn is what a custom command's file asks of the turn its prompt
// starts (its frontmatter's model and allowed-tools), as resolved when
// the command ran.
type CommandTurn struct {
	// Name is the command, without its slash.
	Name string `json:"name"`
	// Model is the model the turn runs on ("": the session's).
	Model string `json:"model,omitempty"`
	// AllowedTools are permission rules, written TOOL(PATTERN) as the
	// allowed-tools list takes them ("bash(git add)", "read(*)"): during
	// the turn a call one of them matches runs without asking.
	AllowedTools []string `json:"allowedTools,omitempty"`
}

// Usage is token usage of one model call, in disjoint buckets as the
// original: InputTokens excludes cache reads.
type Usage struct {
	InputTokens      int64  `json:"inputTokens"`
	OutputTokens     int64  `json:"outputTokens"`
	TotalTokens      *int64 `json:"totalTokens,omitempty"`
	CacheReadTokens  *int64 `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens *int64 `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  *int64 `json:"reasoningTokens,omitempty"`
}

// ErrorInfo describes a failure: of a turn, an attempt or a tool.
type ErrorInfo struct {
	Message              string `json:"message"`
	Code                 string `json:"code"`
	Status               int    `json:"status,omitempty"`
	ProviderRetryAfterMs int64  `json:"providerRetryAfterMs,omitempty"`
	RequestID            string `json:"requestId,omitempty"`
}

// Turn-end reason kinds.
const (
	ReasonCompleted   = "completed"
	ReasonAborted     = "aborted"
	ReasonBlocked     = "blocked"
	ReasonError       = "error"
	ReasonMaxTokens   = "max-tokens"
	ReasonInterrupted = "interrupted"
	ReasonRefusal     = "refusal" // content_filter; ours, mapped to ACP refusal
)

// TurnEndReason is why a turn ended. Reason is set for aborted (who
// aborted: user|parent|disposed); Error for error; Detail says why a turn was
// blocked (step cap, loop).
type TurnEndReason struct {
	Kind   string     `json:"kind"`
	Reason *KindOnly  `json:"reason,omitempty"`
	Error  *ErrorInfo `json:"error,omitempty"`
	Detail string     `json:"detail,omitempty"`
}

// KindOnly is a `{kind}` object.
type KindOnly struct {
	Kind string `json:"kind"`
}

// TurnStart is the payload of turn/start.
type TurnStart struct {
	Turn int `json:"turn"`
	// Model (ours) is the model the turn ran on when it was not the
	// session's (a custom command's model); Command says which command
	// asked for it and for which tools.
	Model   string       `json:"model,omitempty"`
	Command *CommandTurn `json:"command,omitempty"`
}

// TurnEnd is the payload of turn/end.
type TurnEnd struct {
	Turn   int           `json:"turn"`
	Reason TurnEndReason `json:"reason"`
}

// Step is the payload of step/start and step/end.
type Step struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// AssistantMessage is the payload of assistant/message: one committed model
// call. Content holds reasoning, text and tool-call blocks in stream order.
type AssistantMessage struct {
	Turn         int     `json:"turn"`
	Step         int     `json:"step"`
	Message      Message `json:"message"`
	Usage        *Usage  `json:"usage,omitempty"`
	Interrupted  bool    `json:"interrupted,omitempty"`
	FinishReason string  `json:"finishReason,omitempty"` // the provider's finish_reason
	// Cost (ours) is what the call cost when a price is configured for its
	// model, worked out once when the message is committed.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is what one model call cost.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"` // ISO 4217
	// Source says where the price came from: PriceFromConfig.
	Source string `json:"source"`
}

// PriceFromConfig is the Cost.Source of a price from the config file's
// "prices" key.
const PriceFromConfig = "config"

// AssistantAttempt is the payload of assistant/attempt: a model call that
// failed or was retried and committed no message.
type AssistantAttempt struct {
	Turn    int        `json:"turn"`
	Step    int        `json:"step"`
	Attempt int        `json:"attempt"`
	Error   *ErrorInfo `json:"error,omitempty"`
	Usage   *Usage     `json:"usage,omitempty"`
	// RetryInMs (ours) is the wait before the next attempt when this one
	// is retried; absent when the step gives up.
	RetryInMs *int64 `json:"retryInMs,omitempty"`
}

// ToolCall is the payload of tool/call.
type ToolCall struct {
	Turn      int    `json:"turn"`
	Step      int    `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"` // as the model wrote it
	Arguments string `json:"arguments"`
	// RepairedName is the tool that ran when Name differed from it only by
	// case or '-'/'_' (the model wrote "Read" for read).
	RepairedName string `json:"repairedName,omitempty"`
	// FromText: the model wrote this call as markup in its reply's text
	// (DeepSeek's chat-template tool-call or DSML form); dsh recovered it.
	FromText bool `json:"fromText,omitempty"`
	// Facts are what the call touches, as the runtime saw it when it
	// committed the call; nil in logs written before they were recorded
	// (core's Session.ToolFacts fills them in on read).
	Facts *ToolFacts `json:"facts,omitempty"`
}

// ToolFacts describe a tool call for the people watching it, recorded once
// with the call so every door shows the same thing and none recomputes it.
type ToolFacts struct {
	// Title is a short human title: "Edit main.go", "Run go test ./...".
	Title string `json:"title"`
	// Kind is what the call does, in the doors' common vocabulary (ACP's
	// tool kinds): one of the ToolKind constants.
	Kind string `json:"kind"`
	// Paths are the files and folders it touches (absolute, links
	// resolved), when the tool names any.
	Paths []string `json:"paths,omitempty"`
}

// Kinds of tool calls (ToolFacts.Kind).
const (
	ToolKindRead    = "read"
	ToolKindEdit    = "edit"
	ToolKindDelete  = "delete"
	ToolKindMove    = "move"
	ToolKindSearch  = "search"
	ToolKindExecute = "execute"
	ToolKindThink   = "think"
	ToolKindFetch   = "fetch"
	ToolKindOther   = "other"
)

// Tool is the tool that ran: the repaired name when the model's differed.
func (tc ToolCall) Tool() string {
	if tc.RepairedName != "" {
		return tc.RepairedName
	}
	return tc.Name
}

// ToolErrorInfo names a tool failure class.
type ToolErrorInfo struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

// Tool error codes written by the runtime itself.
const (
	ToolInvalidArguments      = "INVALID_ARGUMENTS"
	ToolUnknown               = "UNKNOWN_TOOL"
	ToolPermissionDenied      = "PERMISSION_DENIED"
	ToolAbortedBeforeDispatch = "ABORTED_BEFORE_DISPATCH"
	ToolAborted               = "ABORTED"
	ToolOutcomeUnknown        = "TOOL_OUTCOME_UNKNOWN"
	ToolFailed                = "TOOL_FAILED"
)

// ToolResult is the payload of tool/result. Message.Content holds exactly one
// tool-result block. Meta carries tool-specific structure for the doors
// (a diff, an exit code, the paths touched).
type ToolResult struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	Message Message         `json:"message"`
	Error   *ToolErrorInfo  `json:"error,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
	// Instructions are the nested instruction files (AGENTS.md below the
	// context message's chain) appended to this result, shown once a
	// session.
	Instructions []InstructionFile `json:"instructions,omitempty"`
	// DurationMs is how long the call itself ran, from its start to its
	// result (ours: calls of a batch are committed together, so their
	// events' times cannot tell). Absent for a call that did not run.
	DurationMs int64 `json:"durationMs,omitempty"`
}

// Result returns the tool-result block of r, or a zero block.
func (r ToolResult) Result() ContentBlock {
	for _, c := range r.Message.Content {
		if c.Type == BlockToolResult {
			return c
		}
	}
	return ContentBlock{}
}

// ToolMeta is the structured side of a tool result, for the doors.
type ToolMeta struct {
	Kind      string   `json:"kind,omitempty"` // read|edit|search|execute|think|other
	Paths     []string `json:"paths,omitempty"`
	Diff      *Diff    `json:"diff,omitempty"`
	ExitCode  *int     `json:"exitCode,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	Terminal  string   `json:"terminalId,omitempty"`
	// Job names the background job a result is about (bash
	// run_in_background, job_output, job_kill), so a door can show the
	// job's output on the call that started it.
	Job *JobRef `json:"job,omitempty"`
}

// JobRef is a background job: its id and the bash call that started it.
type JobRef struct {
	ID     string `json:"id"`
	CallID string `json:"callId"`
}

// Diff is a whole-file change: OldText nil means the file was created.
// A change too large to carry whole is Elided: OldText and NewText are
// left out (one huge edit must not be one huge event), and Unified (itself
// bounded) and the hashes say what changed.
type Diff struct {
	Path      string  `json:"path"`
	OldText   *string `json:"oldText"`
	NewText   string  `json:"newText"`
	Unified   string  `json:"unified,omitempty"`
	OldSHA256 string  `json:"oldSha256,omitempty"`
	NewSHA256 string  `json:"newSha256,omitempty"`
	Elided    bool    `json:"elided,omitempty"`
}

// Config is the model configuration of a session.
type Config struct {
	Provider        string `json:"provider"`
	Model           string `json:"model"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	MaxTokens       int    `json:"maxTokens,omitempty"`
}

// RequestHeader is the payload of request/header: the stable part of every
// model request (system prompt and tools), recorded when it is first used
// and whenever it changes.
//
// Config holds the effective values sent to the provider: a reasoning
// effort or output cap the session left to the provider is filled in with
// the provider's default and flagged in AdapterDefaults, as the original
// records it. RequestedConfig undoes that fill.
type RequestHeader struct {
	Header struct {
		Config          Config           `json:"config"`
		AdapterDefaults *AdapterDefaults `json:"adapterDefaults,omitempty"`
		System          string           `json:"system,omitempty"`
		Tools           json.RawMessage  `json:"tools,omitempty"`
	} `json:"header"`
	Reason string `json:"reason"` // initial | resume | change
}

// AdapterDefaults flags the fields of a request/header config that are the
// provider's defaults rather than the session's own setting.
type AdapterDefaults struct {
	ReasoningEffort bool `json:"reasoningEffort,omitempty"`
	MaxTokens       bool `json:"maxTokens,omitempty"`
}

// RequestedConfig is the session's own config behind a header: the
// provider defaults flagged in AdapterDefaults are cleared again.
func (h RequestHeader) RequestedConfig() Config {
	c := h.Header.Config
	if d := h.Header.AdapterDefaults; d != nil {
		if d.ReasoningEffort {
			c.ReasoningEffort = ""
		}
		if d.MaxTokens {
			c.MaxTokens = 0
		}
	}
	return c
}

// Environment is the payload of context/environment: the facts the
// runtime told the model before a prompt, and the message that told it.
// Message is a user-role message whose text starts with the context tag
// (model.ContextTag). A later one is recorded only when a fact in Facts
// changed; Changed names which.
type Environment struct {
	Turn    int      `json:"turn"`
	Reason  string   `json:"reason"` // initial | changed
	Changed []string `json:"changed,omitempty"`
	Facts   EnvFacts `json:"facts"`
	Message Message  `json:"message"`
}

// EnvFacts are the environment facts of a context message.
type EnvFacts struct {
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Shell    string `json:"shell"`
	Date     string `json:"date"` // YYYY-MM-DD in TimeZone
	TimeZone string `json:"timeZone"`
	Cwd      string `json:"cwd"`
	// GitRoot is empty outside a git repository.
	GitRoot   string `json:"gitRoot,omitempty"`
	GitBranch string `json:"gitBranch,omitempty"`
	// GitStatus is a short summary ("clean", "3 changed, 1 untracked");
	// it is reported, but a change of it alone is not a reason to send a
	// new context message (the agent's own edits change it every turn).
	GitStatus    string            `json:"gitStatus,omitempty"`
	Instructions []InstructionFile `json:"instructions,omitempty"`
}

// InstructionFile is a project-instruction file included in a context
// message.
type InstructionFile struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Shown is how many of its bytes the message holds (the total is
	// bounded); equal to Bytes when it is whole.
	Shown int64 `json:"shown"`
}

// RequestContext is the payload of request/context.
type RequestContext struct {
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	ContextWindow int64  `json:"contextWindow,omitempty"`
}

// InboxSpliced is the payload of agent/inbox/spliced: a prompt entering the
// session's inbox (Inserted) or being claimed by a turn (RemovedCount).
type InboxSpliced struct {
	Target       string    `json:"target"` // next-turn | next-step
	Start        int       `json:"start"`
	RemovedCount *int      `json:"removedCount,omitempty"`
	Inserted     []Message `json:"inserted"`
	Outcome      string    `json:"outcome,omitempty"`
}

// InboxCanceled is the outcome of a splice that removed queued prompts
// without delivering them (the session was closed or its queue dropped).
const InboxCanceled = "canceled"

// SessionTitle is the payload of session/title. MessageSeqs are the seqs of
// the user messages the title was made from; Source says how (the
// original's "fallback" is a title cut from the first prompt's text).
type SessionTitle struct {
	Title       string    `json:"title"`
	MessageSeqs []int64   `json:"messageSeqs,omitempty"`
	Source      *KindOnly `json:"source,omitempty"`
}

// TitleFallback is the source kind of a title cut from the prompt's text.
const TitleFallback = "fallback"

// Todo is one entry of a todo list.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"` // pending | in_progress | completed
}

// TodoWrite is the payload of todo/write.
type TodoWrite struct {
	Turn  int    `json:"turn,omitempty"`
	Todos []Todo `json:"todos"`
}

// SubagentStart is the payload of subagent/start: a tool call delegated to
// a child session.
type SubagentStart struct {
	CallID         string `json:"callId"`
	Provider       string `json:"provider"`
	ChildSessionID string `json:"childSessionId"`
	Description    string `json:"description,omitempty"`
}

// SubagentEnd is the payload of subagent/end.
type SubagentEnd struct {
	CallID         string `json:"callId"`
	Provider       string `json:"provider"`
	ChildSessionID string `json:"childSessionId"`
	StopReason     string `json:"stopReason"`
	Local          bool   `json:"local"`
	Output         string `json:"output,omitempty"`
}

// SubagentProgress is the payload of subagent/progress: one step of an
// out-of-process child, reported while the parent's subagent call runs (an
// in-process child's own events are in this runtime already). Kind is
// ProgressToolCall (Title says what the call does) or ProgressMessage (Text
// is the child's latest completed message, cut to about 300 runes).
// Skipped counts tool calls before this one that were not recorded because
// the parent's log fell behind the child.
type SubagentProgress struct {
	CallID         string `json:"callId"`
	ChildSessionID string `json:"childSessionId,omitempty"`
	Kind           string `json:"kind"`
	Title          string `json:"title,omitempty"`
	Text           string `json:"text,omitempty"`
	Skipped        int    `json:"skipped,omitempty"`
}

// Kinds of subagent progress.
const (
	ProgressToolCall = "tool_call"
	ProgressMessage  = "message"
)

// ProgressText is what a message progress shows of a child's message: its
// last non-blank text block, trimmed and cut to 300 runes (an ellipsis
// marks the cut). Both sources of child progress (a remote child's
// subagent/progress, an in-process child's own messages) use it.
func ProgressText(content []ContentBlock) string {
	text := ""
	for _, b := range content {
		if b.Type == BlockText && strings.TrimSpace(b.Text) != "" {
			text = strings.TrimSpace(b.Text)
		}
	}
	n := 0
	for i := range text {
		if n == 300 {
			return text[:i] + "…"
		}
		n++
	}
	return text
}

// PermissionDecision is the payload of permission/decision: what the gate
// decided for one tool call, and why.
type PermissionDecision struct {
	CallID   string `json:"callId"`
	Tool     string `json:"tool"`
	Decision string `json:"decision"` // allow | deny | cancelled
	By       string `json:"by"`       // mode | rule | user | no-asker
	Rule     string `json:"rule,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// Input (ours) is what the call ran with when a PreToolUse hook
	// replaced the model's arguments (its updatedInput); the tool/call
	// event keeps the model's own.
	Input json.RawMessage `json:"input,omitempty"`
}

// MCPServer is the payload of mcp/server: an MCP server of the session
// became ready (with its tool count), changed its tools, died and is being
// restarted (restarting, with why), or failed (also: died and was not
// restarted). Restarts counts the server's restarts so far: a ready event
// with restarts > 0 is a successful restart.
type MCPServer struct {
	Server    string `json:"server"`
	Transport string `json:"transport"`
	Source    string `json:"source,omitempty"` // config | acp | sdk
	State     string `json:"state"`            // ready | restarting | failed | stopped
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
	Note      string `json:"note,omitempty"`
	Restarts  int    `json:"restarts,omitempty"`
	// Late: the server became ready after its session had opened (it was
	// not ready when the session's creator was answered); its tools join
	// at the next turn.
	Late bool `json:"late,omitempty"`
}

// HookRun is the payload of hook/run: one hook command run on an event.
type HookRun struct {
	Event string `json:"event"` // PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart, PreCompact
	// CallID is the tool call of a tool event.
	CallID  string `json:"callId,omitempty"`
	Command string `json:"command"`
	Source  string `json:"source"` // the file it came from
	// Outcome is ok, blocked or failed; Message says why (the reason of a
	// block, or what failed: an exit code, a timeout, cut output).
	Outcome    string `json:"outcome"`
	ExitCode   int    `json:"exitCode"`
	Message    string `json:"message,omitempty"`
	DurationMs int64  `json:"durationMs"`
	// Decision is a PreToolUse hook's permission answer (allow or ask);
	// UpdatedInput the arguments it put in place of the call's.
	Decision     string          `json:"decision,omitempty"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
}

// Outcomes of a hook run.
const (
	HookOK      = "ok"
	HookBlocked = "blocked"
	HookFailed  = "failed"
)

// ConfigChange is the payload of session/config: a change of model,
// reasoning effort or permission mode made after the session started.
type ConfigChange struct {
	Config         Config `json:"config"`
	PermissionMode string `json:"permissionMode,omitempty"`
}

// SessionDirs is the payload of session/directories: the complete list of
// the session's workspace roots besides its cwd from this event on
// (absolute, cleaned; empty when a door cleared them). Paths under them
// are inside the workspace for the permission gate, and writable in the
// sandbox.
type SessionDirs struct {
	AdditionalDirectories []string `json:"additionalDirectories"`
}

// Chunk types of an assistant/chunk, in the order a model call streams
// them: a block-start before a block's first delta, deltas, then (once the
// call is complete) a block-end per block in index order, usage, finish.
const (
	ChunkBlockStart     = "block-start"
	ChunkReasoningDelta = "reasoning-delta"
	ChunkTextDelta      = "text-delta"
	ChunkToolCallDelta  = "tool-call-delta"
	ChunkBlockEnd       = "block-end"
	ChunkUsage          = "usage"
	ChunkFinish         = "finish"
)

// Finish kinds of a finish chunk (the original's set, plus refusal for a
// provider's content filter, as turn/end has it).
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool-calls"
	FinishMaxTokens = "max-tokens"
	FinishAborted   = "aborted"
	FinishError     = "error"
	FinishRefusal   = "refusal"
)

// AssistantChunk is the payload of assistant/chunk.
type AssistantChunk struct {
	Turn  int   `json:"turn"`
	Step  int   `json:"step"`
	Chunk Chunk `json:"chunk"`
}

// Chunk is one StreamChunk: a tagged union kept as one struct whose fields
// are set only for the types that carry them (Index is a pointer because
// block 0 is an index too, and usage and finish have none).
type Chunk struct {
	Type           string        `json:"type"`
	Index          *int          `json:"index,omitempty"`
	BlockType      string        `json:"blockType,omitempty"`
	Text           *string       `json:"text,omitempty"`
	ID             string        `json:"id,omitempty"`
	Name           string        `json:"name,omitempty"`
	ArgumentsDelta *string       `json:"argumentsDelta,omitempty"`
	Block          *ContentBlock `json:"block,omitempty"`
	Usage          *Usage        `json:"usage,omitempty"`
	Reason         *FinishReason `json:"reason,omitempty"`
}

// FinishReason is why a model call ended; Failure is set for error.
type FinishReason struct {
	Kind    string     `json:"kind"`
	Failure *ErrorInfo `json:"failure,omitempty"`
}
