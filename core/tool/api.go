// Package tool defines the model-facing tools and runs the built-in ones:
// read, write, edit, glob, grep, bash and todo_write. Tools see the world
// through Env, so a door can route file access and commands through its
// client (ACP fs/* and terminal/*) without the tools knowing.
package tool

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/sandbox"
)

// Kind classes a tool for the permission gate (ARCHITECTURE.md §6).
type Kind string

// Tool kinds.
const (
	KindRead    Kind = "read"    // read, glob, grep
	KindMutate  Kind = "mutate"  // write, edit
	KindExecute Kind = "execute" // bash, subagent
	KindExempt  Kind = "exempt"  // todo_write
	// MCP server tools: the permission gate runs KindMCPRead (the server
	// marks the tool readOnlyHint) where reads run, and asks for KindMCP.
	KindMCPRead Kind = "mcp-read"
	KindMCP     Kind = "mcp"
)

// Tool is one model-facing tool.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema of the arguments, byte-stable.
	Schema() json.RawMessage
	Kind() Kind
	// ParallelSafe tools of one step may run concurrently.
	ParallelSafe() bool
	// Inspect validates the arguments and says what the call would touch.
	// An error means the call is never run; its text goes to the model.
	Inspect(args json.RawMessage, env *Env) (Access, error)
	// Run executes the call. Failures are results with IsError, not Go
	// errors: the model reads them.
	Run(ctx context.Context, args json.RawMessage, env *Env) Result
}

// AgentType is an agent file a subagent may run as: its name, when to
// use it, and the model it asks for ("" : the parent's).
type AgentType struct{ Name, Description, Model string }

// AgentTyped is a tool that offers a session's agent types (the subagent
// tool): a session whose project or user keeps agent files gets the tool
// WithAgentTypes returns in its place.
type AgentTyped interface {
	WithAgentTypes(types []AgentType) Tool
}

// Access is what a call touches, for the permission gate and the doors.
type Access struct {
	Paths   []string // absolute, symlinks resolved
	Write   bool     // the call changes Paths
	Command string   // bash: the command line
	Title   string   // short human title, e.g. "Edit main.go"
	// SessionOwned means the call touches only the session's own files
	// (its spill files): no permission is needed, in any mode.
	SessionOwned bool
}

// Result is the outcome of one call.
type Result struct {
	Content []event.ContentBlock
	IsError bool
	Meta    *event.ToolMeta
}

// ErrorResult is a convenience for a failed call.
func ErrorResult(msg string) Result {
	return Result{Content: []event.ContentBlock{event.Text(msg)}, IsError: true}
}

// TextResult is a convenience for a successful text result.
func TextResult(s string) Result {
	return Result{Content: []event.ContentBlock{event.Text(s)}}
}

// FileSystem is how tools read and write files. The local one uses the OS;
// the ACP door supplies one that goes through the editor (unsaved buffers).
type FileSystem interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
	WriteFile(ctx context.Context, path string, data []byte, mode uint32) error
}

// ExecRequest is one shell command.
type ExecRequest struct {
	// CallID is the tool call the command runs for (a door that shows the
	// command live, such as an ACP client terminal, attaches it there).
	CallID  string
	Command string
	Workdir string
	Env     []string // the full environment, already scrubbed of credentials
	Timeout time.Duration
	// OutputLimit bounds the kept output (head and tail).
	OutputLimit int
	// Scope is the command's part of the sandbox policy (what it may
	// write); the local executor's sandbox applies it.
	Scope sandbox.Scope
	// Spill, when set, also receives the whole output as it is produced
	// (an executor that cannot tee, such as a client terminal, ignores it).
	Spill io.Writer
	// YieldAfter, with Jobs, hands a command still running after it to
	// Jobs as a background job instead of waiting on to the timeout (the
	// result names it in JobID). An executor that cannot hand a process
	// over (a client terminal) ignores it.
	YieldAfter time.Duration
	Jobs       *Jobs
}

// ExecResult is the outcome of a shell command.
type ExecResult struct {
	Output     string // bounded, the cut said inside
	ExitCode   int    // -1 when killed by a signal or not started
	TimedOut   bool
	Truncated  bool
	TerminalID string // set when run in a client terminal
	// JobID names the background job a yielded command goes on as
	// (ExecRequest.YieldAfter); Output is then what it printed so far.
	JobID string
}

// Executor runs shell commands. The local one runs /bin/bash -c in its own
// process group; the ACP door supplies one that uses the client's terminal.
type Executor interface {
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
}

// Env is what a call may use. One Env per call.
type Env struct {
	SessionID string
	CallID    string
	Turn      int
	Cwd       string // the session's workspace, absolute
	Files     FileSystem
	Exec      Executor
	Reads     *ReadTracker // per session
	// Record appends an event to the session log (todo_write uses it).
	Record func(ev event.Event) error
	// ModelImages is true when the session's model accepts image input.
	ModelImages bool
	// SaveAttachment stores image bytes in the session's attachment store
	// and returns the durable reference (read uses it for images). Nil
	// means the session cannot keep attachments: read then answers with
	// text saying the image cannot be shown.
	SaveAttachment func(mediaType string, data []byte) (*event.Attachment, error)
	// Spill keeps outputs too large for one result (see OutputBudget). Nil
	// means the session keeps none: a cut result then says so.
	Spill *Spill
	// Jobs is the session's table of background jobs. Nil means the
	// session cannot run any.
	Jobs *Jobs
	// BashYield is how long a foreground bash call without its own
	// timeout runs before it goes on as a background job (0: never).
	BashYield time.Duration
	// PermissionMode is the session's mode: the sandbox runs commands
	// unconfined in "full" and without any write access in "read-only".
	PermissionMode string
	// AdditionalDirs are folders besides the workspace that the session
	// may write (ACP additionalDirectories); commands may write them too.
	AdditionalDirs []string
	// TmpDir is the session's private temp folder: sandboxed commands and
	// jobs see it as /tmp ("" gives each command its own).
	TmpDir string
}
