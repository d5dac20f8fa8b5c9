package core

import (
	"encoding/json"

	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/sandbox"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// The doors (acp, sdkrpc's server) import core and the event vocabulary
// (core/event) only, never a package deeper in core: what they need of
// permissions, MCP servers, the store, the sandbox and the tools' I/O is
// named here. These are aliases, so the types are the same as inside
// core; a door's code reads as core.PermissionMode, core.ErrLeased. A
// test (cmd/dsh's layout test) holds the doors to it.

// Permissions: the mode, a request to ask a person about, and the answer.
type (
	PermissionMode    = permission.Mode
	PermissionRequest = permission.Request
	PermissionAnswer  = permission.Answer
	// Asker is implemented by a door that can ask a person.
	Asker = permission.Asker
)

// Permission modes.
const (
	ModeReadOnly = permission.ModeReadOnly
	ModeAsk      = permission.ModeAsk
	ModeAuto     = permission.ModeAuto
	ModeFull     = permission.ModeFull
)

// Answers an Asker gives.
const (
	AllowOnce    = permission.AllowOnce
	AllowAlways  = permission.AllowAlways
	RejectOnce   = permission.RejectOnce
	RejectAlways = permission.RejectAlways
	Cancelled    = permission.Cancelled
)

// ErrNoAsker is what an Asker returns when nobody can be asked.
var ErrNoAsker = permission.ErrNoAsker

// ParsePermissionMode parses a mode name, the original's aliases too.
func ParsePermissionMode(s string) (PermissionMode, error) { return permission.ParseMode(s) }

// MCP servers a door brings (ACP mcpServers, the SDK's mcpServers file)
// and their state.
type (
	MCPServerConfig = mcp.ServerConfig
	MCPStatus       = mcp.Status
	// KV is a name and a value: an MCP server's environment variable or
	// HTTP header.
	KV = mcp.KV
)

// MCP transports and server states.
const (
	MCPStdio      = mcp.TransportStdio
	MCPHTTP       = mcp.TransportHTTP
	MCPSSE        = mcp.TransportSSE
	MCPReady      = mcp.StateReady
	MCPFailed     = mcp.StateFailed
	MCPRestarting = mcp.StateRestarting
)

// ParseMCPServers parses an mcpServers object (the Claude Code / Cursor
// shape).
func ParseMCPServers(raw json.RawMessage) ([]MCPServerConfig, error) { return mcp.ParseFile(raw) }

// Stored sessions: a log's header and a listing's entry.
type (
	SessionHeader = store.Header
	SessionInfo   = store.Info
)

// ErrLeased refuses a session another process holds.
var ErrLeased = store.ErrLeased

// A door that serves files and commands through its client (ACP's fs/* and
// terminal/*) implements these; LocalFS is the process's own files.
type (
	FileSystem  = tool.FileSystem
	Executor    = tool.Executor
	ExecRequest = tool.ExecRequest
	ExecResult  = tool.ExecResult
	// SandboxScope is what a contained command may reach.
	SandboxScope = sandbox.Scope
)

// LocalFS is the operating system's file system.
func LocalFS() FileSystem { return tool.LocalFS() }
