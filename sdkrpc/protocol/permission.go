package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/dsh-dev/dsh/core/permission"
)

// The session/request_permission request is ours (the original has no
// server → client requests). Its shape follows ACP's request_permission so
// a host that speaks ACP recognises it: the tool call, a list of options,
// and an outcome naming the chosen option or "cancelled". Option ids are
// the permission.Answer values, so a host may also answer without reading
// the list.

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

// PermissionOptions are the options the server offers, in display order.
var PermissionOptions = []PermissionOption{
	{OptionID: string(permission.AllowOnce), Name: "Allow once", Kind: string(permission.AllowOnce)},
	{OptionID: string(permission.AllowAlways), Name: "Always allow", Kind: string(permission.AllowAlways)},
	{OptionID: string(permission.RejectOnce), Name: "Reject", Kind: string(permission.RejectOnce)},
	{OptionID: string(permission.RejectAlways), Name: "Always reject", Kind: string(permission.RejectAlways)},
}

// NewRequestPermissionParams builds the request for one permission.Request.
func NewRequestPermissionParams(req permission.Request) RequestPermissionParams {
	return RequestPermissionParams{
		SessionID: req.SessionID,
		Workspace: req.Workspace,
		ToolCall: PermissionToolCall{
			CallID: req.CallID, Tool: req.Tool, Kind: req.Kind, Title: req.Title,
			Paths: req.Paths, Write: req.Write, Command: req.Command, RawInput: req.RawInput,
		},
		Options: append([]PermissionOption(nil), PermissionOptions...),
	}
}

// Select is the result choosing answer (use Cancel for permission.Cancelled).
func Select(answer permission.Answer) RequestPermissionResult {
	if answer == permission.Cancelled {
		return Cancel()
	}
	return RequestPermissionResult{Outcome: PermissionOutcome{Outcome: OutcomeSelected, OptionID: string(answer)}}
}

// Cancel is the "cancelled" result: stop this tool call.
func Cancel() RequestPermissionResult {
	return RequestPermissionResult{Outcome: PermissionOutcome{Outcome: OutcomeCancelled}}
}

// Answer maps the host's result to a permission.Answer; an unknown outcome
// or option id is an error (the server then treats the host as unable to
// answer).
func (r RequestPermissionResult) Answer() (permission.Answer, error) {
	switch r.Outcome.Outcome {
	case OutcomeCancelled:
		return permission.Cancelled, nil
	case OutcomeSelected:
		for _, o := range PermissionOptions {
			if o.OptionID == r.Outcome.OptionID {
				return permission.Answer(o.OptionID), nil
			}
		}
		return "", fmt.Errorf("session/request_permission: unknown optionId %q", r.Outcome.OptionID)
	}
	return "", fmt.Errorf("session/request_permission: unknown outcome %q (want selected or cancelled)", r.Outcome.Outcome)
}

// Request maps the wire params back to a permission.Request (for hosts and
// tests).
func (p RequestPermissionParams) Request() permission.Request {
	return permission.Request{
		SessionID: p.SessionID, CallID: p.ToolCall.CallID, Tool: p.ToolCall.Tool, Kind: p.ToolCall.Kind,
		Paths: p.ToolCall.Paths, Write: p.ToolCall.Write, Command: p.ToolCall.Command,
		Title: p.ToolCall.Title, Workspace: p.Workspace, RawInput: p.ToolCall.RawInput,
	}
}
