// Package permission decides whether a tool call may run: the mode, the
// remembered rules, and an Asker that a door implements to ask a person.
package permission

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dsh-dev/dsh/core/event"
)

// Mode is a permission mode (ARCHITECTURE.md §6).
type Mode string

// Modes.
const (
	ModeReadOnly Mode = "read-only" // read tools only
	ModeAsk      Mode = "ask"       // reads inside the workspace free; all else asks
	ModeAuto     Mode = "auto"      // workspace reads, writes and bash free; outside asks
	ModeFull     Mode = "full"      // no checks
)

// Answer is a person's reply to a permission request.
type Answer string

// Answers.
const (
	AllowOnce    Answer = "allow_once"
	AllowAlways  Answer = "allow_always"
	RejectOnce   Answer = "reject_once"
	RejectAlways Answer = "reject_always"
	Cancelled    Answer = "cancelled" // the request was cancelled: stop this tool
)

// Request describes one tool call awaiting a decision.
type Request struct {
	SessionID string
	CallID    string
	Tool      string
	Kind      string   // tool.Kind as a string: read | mutate | execute | exempt
	Paths     []string // absolute, symlinks resolved
	Write     bool
	Command   string // bash
	Title     string
	Workspace string // the session's cwd
	// Roots are more workspace roots (an ACP client's
	// additionalDirectories): paths under them are inside too.
	Roots    []string
	RawInput json.RawMessage // the call's arguments
	// ShowKind is what the call does for the person asked, in the doors'
	// vocabulary (event.ToolKind*); Kind is the gate's class.
	ShowKind string
	// Preview, when set, works out the change to a file the call would
	// make (write, edit, multi_edit): an Asker calls it to show the change
	// before the person approves it. It returns nil when it cannot.
	Preview func(context.Context) *event.Diff
}

// Asker asks someone. ErrNoAsker (or a nil Asker) means nobody can be asked.
type Asker interface {
	Ask(ctx context.Context, req Request) (Answer, error)
}

// ErrNoAsker is returned by an Asker that has nobody to ask.
var ErrNoAsker = errors.New("no one can be asked for permission")

// Decision is the gate's verdict.
type Decision struct {
	Allow     bool
	Cancelled bool   // the person cancelled: stop this tool, not the turn
	By        string // mode | rule | user | no-asker | hook
	Rule      string // the rule that decided, if any
	Reason    string // for the model when refused
}
