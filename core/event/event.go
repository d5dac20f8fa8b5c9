// Package event defines the session event vocabulary: the envelope every fact
// of a session is written in, and the typed payloads of each event type.
//
// The JSON shapes follow the original DeepSeek Harness wire (spec
// dsh-protocols.md §1.4) so the SDK door can forward committed events
// unchanged to the original's TypeScript and Python clients. The session log
// stores exactly these envelopes, one per line.
package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event types. Names are the original's; readers refuse a log holding an
// unknown type unless the event says it is ignorable.
const (
	TypeTurnStart        = "turn/start"
	TypeTurnEnd          = "turn/end"
	TypeStepStart        = "step/start"
	TypeStepEnd          = "step/end"
	TypeUserMessage      = "user/message"
	TypeAssistantMessage = "assistant/message"
	TypeAssistantAttempt = "assistant/attempt"
	// TypeAssistantChunk is one live fragment of a model call (the
	// original's StreamChunk): appended to the log without fsync, forwarded
	// by the SDK door, never folded into the conversation the model sees.
	TypeAssistantChunk = "assistant/chunk"
	TypeToolCall       = "tool/call"
	TypeToolResult     = "tool/result"
	TypeRequestHeader  = "request/header"
	TypeRequestContext = "request/context"
	TypeInboxSpliced   = "agent/inbox/spliced"
	TypeSessionTitle   = "session/title"
	TypeTodoWrite      = "todo/write"
	TypeSessionEndSeed = "session/end-seed"
	// Types of our own. They are marked ignorable when written, so a reader
	// that does not know them (the original's) may skip them.
	// (subagent/progress: what an out-of-process child reported while its
	// subagent call ran, see SubagentProgress.)
	TypeSubagentStart      = "subagent/start"
	TypeSubagentEnd        = "subagent/end"
	TypeSubagentProgress   = "subagent/progress"
	TypePermissionDecision = "permission/decision"
	TypeConfigChange       = "session/config"
	// TypeSessionDirs records the session's additional workspace roots
	// (ACP additionalDirectories) when they are first set and whenever a
	// door replaces them: a resume in another process puts them in force
	// again, and listings report them.
	TypeSessionDirs = "session/directories"
	// TypeEnvironment is the runtime's context message: environment facts
	// and project instructions, a user-role message the model sees before
	// the prompt it accompanies (never shown as the user's words).
	TypeEnvironment = "context/environment"
	// Context management (ARCHITECTURE.md §4 "Context"): a compaction starts,
	// commits its checkpoint (the model-facing history from then on) or
	// fails; a trim drops the oldest items when even a compacted history
	// does not fit the window.
	TypeCompactionStart      = "compaction/start"
	TypeCompactionCheckpoint = "compaction/checkpoint"
	TypeCompactionFailed     = "compaction/failed"
	TypeCompactionTrim       = "compaction/trim"
	TypeMCPServer            = "mcp/server"
	// TypeHookRun records one run of a hook (core/ext): what it decided,
	// or how it failed.
	TypeHookRun = "hook/run"
	// Rewind (issue 29): a snapshot of the workspace files at a turn's
	// start and end, and a rewind (or the undo of one).
	TypeFileCheckpoint = "checkpoint/files"
	TypeRewind         = "session/rewind"
)

// known lists every type this package can decode. A log containing another
// type that is not marked ignorable is refused.
var known = map[string]bool{
	TypeTurnStart: true, TypeTurnEnd: true, TypeStepStart: true, TypeStepEnd: true,
	TypeUserMessage: true, TypeAssistantMessage: true, TypeAssistantAttempt: true,
	TypeToolCall: true, TypeToolResult: true, TypeRequestHeader: true, TypeRequestContext: true,
	TypeInboxSpliced: true, TypeSessionTitle: true, TypeTodoWrite: true, TypeSessionEndSeed: true,
	TypeSubagentStart: true, TypeSubagentEnd: true, TypePermissionDecision: true, TypeConfigChange: true,
	TypeSessionDirs:     true,
	TypeAssistantChunk:  true,
	TypeEnvironment:     true,
	TypeCompactionStart: true, TypeCompactionCheckpoint: true, TypeCompactionFailed: true, TypeCompactionTrim: true,
	TypeMCPServer: true, TypeSubagentProgress: true, TypeHookRun: true,
	TypeFileCheckpoint: true, TypeRewind: true,
}

// Known reports whether t is an event type this runtime understands.
func Known(t string) bool { return known[t] }

// Event is the envelope of one committed fact. Data is kept as raw JSON so an
// event read from disk is forwarded byte for byte, and so the envelope never
// needs to know every payload type.
type Event struct {
	Type            string          `json:"type"`
	Seq             int64           `json:"seq"`
	Time            int64           `json:"time"` // epoch milliseconds
	Data            json.RawMessage `json:"data"`
	SurfaceOp       json.RawMessage `json:"surfaceOp,omitempty"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs,omitempty"`
	Ignorable       bool            `json:"ignorable,omitempty"`
}

// SurfaceAppend is the surfaceOp of a message that appends to the visible
// conversation (as opposed to a compaction replacement).
var SurfaceAppend = json.RawMessage(`"append"`)

// New builds an unsequenced event: the session assigns Seq when it commits.
// Data is marshalled once here; a payload that cannot be marshalled is a
// programming error and panics.
func New(typ string, data any) Event {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("event: marshal %s payload: %v", typ, err))
	}
	ev := Event{Type: typ, Time: time.Now().UnixMilli(), Data: raw}
	switch typ {
	case TypeUserMessage, TypeAssistantMessage, TypeToolResult:
		ev.SurfaceOp = SurfaceAppend
	case TypeSubagentStart, TypeSubagentEnd, TypeSubagentProgress, TypePermissionDecision, TypeConfigChange, TypeSessionDirs, TypeEnvironment,
		TypeCompactionStart, TypeCompactionCheckpoint, TypeCompactionFailed, TypeCompactionTrim, TypeMCPServer, TypeHookRun,
		TypeFileCheckpoint, TypeRewind:
		ev.Ignorable = true
	}
	return ev
}

// Decode unmarshals the payload of ev into a T.
func Decode[T any](ev Event) (T, error) {
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		return v, fmt.Errorf("decode %s event (seq %d): %w", ev.Type, ev.Seq, err)
	}
	return v, nil
}

// IsAppend reports whether the event's surfaceOp is "append" (or absent on a
// message type, which older logs may do).
func (e Event) IsAppend() bool {
	if len(e.SurfaceOp) == 0 {
		return true
	}
	return string(e.SurfaceOp) == `"append"`
}

// CommitPoint reports whether an event of this type must be fsynced before it
// is published: the durable facts a crash must never lose.
func CommitPoint(typ string) bool {
	switch typ {
	case TypeUserMessage, TypeAssistantMessage, TypeToolResult, TypeTurnEnd, TypeInboxSpliced,
		TypeCompactionCheckpoint, TypeCompactionTrim, TypeRewind:
		return true
	}
	return false
}

var (
	errEmptyType = fmt.Errorf("event has no type")
	errBadData   = fmt.Errorf("event data is not valid JSON")
)
