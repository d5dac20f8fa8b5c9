// Package store keeps session logs on disk: one JSONL file per session,
// header line first, one event per line, written by one goroutine per
// session, fsynced at commit points, guarded by a cross-process flock lease.
//
// Layout: <root>/<project>/<session-id>/session.jsonl, with the project folder
// and the id escaped (spec dsh-protocols.md §7) so no id or cwd can leave
// the root.
package store

import (
	"errors"

	"github.com/dsh-dev/dsh/core/event"
)

// FormatVersion is the only log format version this store reads and writes.
const FormatVersion = 0

// Header is the first line of every session log.
type Header struct {
	Type            string `json:"type"` // always "session"
	Version         int    `json:"version"`
	ID              string `json:"id"`
	CreatedAt       string `json:"createdAt"` // RFC 3339, UTC, milliseconds
	Cwd             string `json:"cwd,omitempty"`
	ParentSession   string `json:"parentSession,omitempty"`
	Origin          string `json:"origin,omitempty"` // "run" | "sdk" | "acp" | "subagent"
	DelegationDepth int    `json:"delegationDepth"`
	// Config records the model configuration at creation.
	Config *event.Config `json:"config,omitempty"`
	// Agent is the agent type (an agent file) a typed subagent session
	// runs as, as it was when the session started.
	Agent *AgentType `json:"agent,omitempty"`
}

// AgentType is what a typed subagent session keeps of its agent file: a
// resume reads the file again, and falls back on this when it is gone.
type AgentType struct {
	Name string `json:"name"`
	Path string `json:"path,omitempty"`
	// Tools are the tools the session keeps; null: every tool.
	Tools  []string `json:"tools"`
	Model  string   `json:"model,omitempty"`
	Prompt string   `json:"prompt,omitempty"`
}

// Delegated reports a session that works for another agent — an
// in-process subagent's child (parentSession, origin "subagent") or a
// session of a dsh that another dsh's gateway started (delegationDepth > 0;
// older such logs lack the parent) — which listings leave to its parent
// and which no person continues or adopts.
func (h Header) Delegated() bool {
	return h.ParentSession != "" || h.Origin == "subagent" || h.DelegationDepth > 0
}

// Info summarises a stored session for listings.
type Info struct {
	Header Header
	Dir    string
	Title  string // last session/title, or ""
	// AdditionalDirs are the workspace roots of the last
	// session/directories record (nil: none).
	AdditionalDirs []string
	UpdatedAt      int64 // epoch ms: time of the last event, else the file mtime
	Events         int   // number of events
}

// Errors callers test with errors.Is.
var (
	ErrNotFound = errors.New("session does not exist")
	ErrExists   = errors.New("session already exists")
	ErrLeased   = errors.New("session is open for writing in another process")
	ErrCorrupt  = errors.New("session log is corrupt")
	ErrVersion  = errors.New("session log has an unknown format version")
	ErrClosed   = errors.New("session log is closed")
	ErrSequence = errors.New("event seq is not contiguous")
)
