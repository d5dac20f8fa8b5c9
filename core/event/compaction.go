package event

import "encoding/json"

// Compaction triggers: why a session compacted.
const (
	CompactAuto     = "auto"     // the last request passed compactAt of the window
	CompactOverflow = "overflow" // the provider answered "context too long"
	CompactManual   = "manual"   // /compact, session/compact, dsh sessions compact
)

// CompactionStart is the payload of compaction/start: a summary call is
// about to be made. It is not a commit point; a start without a checkpoint
// or a failure after it means the process stopped during the summary call,
// and the history is the one before it.
type CompactionStart struct {
	Trigger string `json:"trigger"`
	Focus   string `json:"focus,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	// TokensBefore is the size of the history being compacted, as the
	// provider reported it (or estimated at four bytes a token).
	TokensBefore  int64 `json:"tokensBefore"`
	ContextWindow int64 `json:"contextWindow"`
}

// CompactionCheckpoint is the payload of compaction/checkpoint: the
// model-facing history from this event on. Replay starts from the last
// checkpoint and folds only the events after it, so History must hold
// everything the model keeps: the pinned context messages, the first task,
// recent user messages, the current turn's unfinished work and the summary
// (last). Everything before the checkpoint stays in the log for the doors.
type CompactionCheckpoint struct {
	Trigger string `json:"trigger"`
	Focus   string `json:"focus,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	// Step is the step of Turn the checkpoint was made in (before its
	// model call); 0 when it was made between turns.
	Step    int                 `json:"step,omitempty"`
	Summary string              `json:"summary"`
	History []CheckpointMessage `json:"history"`
	// ReplacedThroughSeq is the seq of the last event the summary covers;
	// ReplacedMessages is how many model messages it replaced.
	ReplacedThroughSeq int64 `json:"replacedThroughSeq"`
	ReplacedMessages   int   `json:"replacedMessages"`
	TokensBefore       int64 `json:"tokensBefore"`
	TokensAfter        int64 `json:"tokensAfter"`
	ContextWindow      int64 `json:"contextWindow"`
	// Usage is what the summary call cost.
	Usage    *Usage `json:"usage,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// State carries what a resume from this checkpoint needs that lives in
	// events before it (turn number, title, config, system prompt).
	State *CheckpointState `json:"state,omitempty"`
}

// CheckpointState is the session state a resume from a checkpoint needs
// that the events before it established.
type CheckpointState struct {
	Turn           int     `json:"turn"`
	Titled         bool    `json:"titled,omitempty"`
	Config         *Config `json:"config,omitempty"`
	PermissionMode string  `json:"permissionMode,omitempty"`
	// System and HeaderConfig are the last request/header's system prompt
	// and config, so the prompt stays byte-identical after a resume.
	System       string          `json:"system,omitempty"`
	HeaderConfig *Config         `json:"headerConfig,omitempty"`
	HeaderTools  json.RawMessage `json:"headerTools,omitempty"`
	// Unclaimed are prompts receipted but not yet delivered.
	Unclaimed []Message `json:"unclaimed,omitempty"`
	// Environment is the facts of the last context message, so a resume
	// from here sends a new one only when a fact changed.
	Environment *EnvFacts `json:"environment,omitempty"`
	// AdditionalDirectories are the workspace roots of the last
	// session/directories event.
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
}

// CheckpointMessage is one model-facing message of a checkpoint's history.
// Kind says why it was kept: context (pinned environment/instructions),
// task (the first prompt), user (a recent prompt), work (the current
// turn's last tool round), summary.
type CheckpointMessage struct {
	Kind        string               `json:"kind"`
	Role        string               `json:"role"`
	Content     string               `json:"content"`
	Reasoning   string               `json:"reasoning,omitempty"`
	ToolCalls   []CheckpointToolCall `json:"toolCalls,omitempty"`
	ToolCallID  string               `json:"toolCallId,omitempty"`
	Attachments []*Attachment        `json:"attachments,omitempty"`
	// ServerFields are the kept assistant message's server blocks
	// (BlockServer: name, and the JSON as received).
	ServerFields []CheckpointServerField `json:"serverFields,omitempty"`
}

// CheckpointServerField is a server block of a kept assistant message.
type CheckpointServerField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CheckpointToolCall is a tool call of a kept assistant message.
type CheckpointToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// CompactionFailed is the payload of compaction/failed: the summary call
// failed or was cancelled, and the history is unchanged.
type CompactionFailed struct {
	Trigger string     `json:"trigger"`
	Turn    int        `json:"turn,omitempty"`
	Error   *ErrorInfo `json:"error,omitempty"`
	Usage   *Usage     `json:"usage,omitempty"`
}

// CompactionTrim is the payload of compaction/trim: the oldest Dropped
// model messages after the pinned ones were removed from the model-facing
// history (tool calls with their results), because even after compacting
// the history did not fit the window. Replay drops the same messages.
type CompactionTrim struct {
	Turn          int    `json:"turn,omitempty"`
	Dropped       int    `json:"dropped"`
	TokensBefore  int64  `json:"tokensBefore"`
	TokensAfter   int64  `json:"tokensAfter"`
	ContextWindow int64  `json:"contextWindow"`
	Reason        string `json:"reason"`
}

// CompactRewind is the trigger of the checkpoint a rewind commits: the
// model-facing history as it was before the turn rewound to (or, for an
// undo, as it was before the rewind undone). It holds no summary.
const CompactRewind = "rewind"
