package protocol

import (
	"encoding/json"
	"fmt"
)

// The session/request_permission request is ours (the original has no
// server → client requests). Its shape follows ACP's request_permission so
// a host that speaks ACP recognises it: the tool call, a list of options,
// and an outcome naming the chosen option or "cancelled". Option ids are
// the runtime's answer names (core.AllowOnce …), so a host may also answer
// without reading the list. The package speaks the wire only: it imports no
// runtime package, so a Go host does not link the runtime.

// PermissionToolCall describes the tool call awaiting approval.
type PermissionToolCall struct {
	CallID   string          `json:"callId"`
	Tool     string          `json:"tool"`
	Kind     string          `json:"kind"` // read | mutate | execute | exempt
	Title    string          `json:"title,omitempty"`
	Paths    []string        `json:"paths,omitempty"` // absolute
	Write    bool            `json:"write,omitempty"`
	Command  string          `json:"command,omitempty"` // bash
	RawInput json.RawMessage `json:"rawInput,omitempty"`
}

// PermissionOption is one choice offered to the host.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"` // allow_once | allow_always | reject_once | reject_always
}

// RequestPermissionParams are the params of session/request_permission.
type RequestPermissionParams struct {
	SessionID string             `json:"sessionId"`
	Workspace string             `json:"workspace,omitempty"`
	ToolCall  PermissionToolCall `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// Permission outcomes.
const (
	OutcomeSelected  = "selected"
	OutcomeCancelled = "cancelled"
)

// PermissionOutcome is the host's answer.
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`            // selected | cancelled
	OptionID string `json:"optionId,omitempty"` // with selected
}

// RequestPermissionResult is the result of session/request_permission.
type RequestPermissionResult struct {
	Outcome PermissionOutcome `json:"outcome"`
}

// The option ids the server offers; Cancelled is the answer of a cancelled
// request.
const (
	OptionAllowOnce    = "allow_once"
	OptionAllowAlways  = "allow_always"
	OptionRejectOnce   = "reject_once"
	OptionRejectAlways = "reject_always"
	Cancelled          = OutcomeCancelled
)

// PermissionOptions are the options the server offers, in display order.
var PermissionOptions = []PermissionOption{
	{OptionID: OptionAllowOnce, Name: "Allow once", Kind: OptionAllowOnce},
	{OptionID: OptionAllowAlways, Name: "Always allow", Kind: OptionAllowAlways},
	{OptionID: OptionRejectOnce, Name: "Reject", Kind: OptionRejectOnce},
	{OptionID: OptionRejectAlways, Name: "Always reject", Kind: OptionRejectAlways},
}

// NewRequestPermissionParams builds the request for one tool call, with
// every option.
func NewRequestPermissionParams(sessionID, workspace string, call PermissionToolCall) RequestPermissionParams {
	return RequestPermissionParams{SessionID: sessionID, Workspace: workspace, ToolCall: call,
		Options: append([]PermissionOption(nil), PermissionOptions...)}
}

// Select is the result choosing answer, an option id (Cancelled gives
// Cancel()).
func Select(answer string) RequestPermissionResult {
	if answer == Cancelled {
		return Cancel()
	}
	return RequestPermissionResult{Outcome: PermissionOutcome{Outcome: OutcomeSelected, OptionID: answer}}
}

// Cancel is the "cancelled" result: stop this tool call.
func Cancel() RequestPermissionResult {
	return RequestPermissionResult{Outcome: PermissionOutcome{Outcome: OutcomeCancelled}}
}

// Answer is the host's choice: one of the option ids, or Cancelled. An
// unknown outcome or option id is an error (the server then treats the host
// as unable to answer).
func (r RequestPermissionResult) Answer() (string, error) {
	switch r.Outcome.Outcome {
	case OutcomeCancelled:
		return Cancelled, nil
	case OutcomeSelected:
		for _, o := range PermissionOptions {
			if o.OptionID == r.Outcome.OptionID {
				return o.OptionID, nil
			}
		}
		return "", fmt.Errorf("session/request_permission: unknown optionId %q", r.Outcome.OptionID)
	}
	return "", fmt.Errorf("session/request_permission: unknown outcome %q (want selected or cancelled)", r.Outcome.Outcome)
}
