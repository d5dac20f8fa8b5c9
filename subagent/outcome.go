package subagent

import (
	"fmt"
	"strings"
	"sync"

	"github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/tool"
)

// Stop reasons of a subagent run (the original's seam: completed | aborted
// | error | max-tokens | refusal).
const (
	StopCompleted = event.ReasonCompleted
	StopAborted   = event.ReasonAborted
	StopError     = event.ReasonError
	StopMaxTokens = event.ReasonMaxTokens
	StopRefusal   = event.ReasonRefusal
)

// outcome is how a run ended. It never is a Go error: a child's failure is
// a result the parent model reads.
type outcome struct {
	StopReason string
	// Output is the child's last non-empty assistant message text, else
	// the text it streamed.
	Output string
	// Diagnostic says why a run did not complete.
	Diagnostic string
	// Child is the child's session id, once it had one.
	Child string
}

// headline is the first line of a failed run's tool error (the original's
// wording).
func headline(stop string) string {
	switch stop {
	case StopAborted:
		return "subagent run was cancelled"
	case StopError:
		return "subagent run failed"
	case StopMaxTokens:
		return "subagent run hit its token limit before finishing"
	case StopRefusal:
		return "subagent declined the task"
	}
	return fmt.Sprintf("subagent run ended abnormally (%s)", stop)
}

// result turns an outcome into the tool result the parent model reads.
func (o outcome) result() tool.Result {
	if o.StopReason == StopCompleted {
		if strings.TrimSpace(o.Output) == "" {
			return tool.TextResult("(the subagent finished without output)")
		}
		return tool.TextResult(o.Output)
	}
	var b strings.Builder
	b.WriteString(headline(o.StopReason))
	diag := o.Diagnostic
	if diag == "" {
		// Every run that did not complete says why, even when the child
		// gave no detail beyond its stop reason.
		diag = "the child's turn ended " + o.StopReason
	}
	b.WriteString("\nDiagnostic: ")
	b.WriteString(diag)
	if o.Output != "" {
		b.WriteString("\nPartial output before the run ended:\n")
		b.WriteString(o.Output)
	}
	return tool.ErrorResult(b.String())
}

// fromTurnEnd maps a dsh turn/end reason (in-process child, or an SDK
// child's last turn/end) to a stop reason and diagnostic. completed,
// max-tokens, aborted and refusal map 1:1; everything else is an error
// that says what happened.
func fromTurnEnd(r event.TurnEndReason) (stop, diag string) {
	switch r.Kind {
	case event.ReasonCompleted, event.ReasonMaxTokens, event.ReasonRefusal:
		return r.Kind, ""
	case event.ReasonAborted:
		if r.Reason != nil && r.Reason.Kind != "" {
			return StopAborted, "the child's turn was aborted (" + r.Reason.Kind + ")"
		}
		return StopAborted, ""
	case event.ReasonError:
		return StopError, errorDiag(r.Error)
	case event.ReasonBlocked:
		d := "the child's turn was blocked"
		if r.Detail != "" {
			d += ": " + r.Detail
		}
		return StopError, d
	case event.ReasonInterrupted:
		return StopError, "the child's turn was interrupted"
	case "":
		return StopError, "the child ended without finishing a turn"
	}
	return StopError, fmt.Sprintf("the child's turn ended with an unknown reason %q", r.Kind)
}

func errorDiag(e *event.ErrorInfo) string {
	if e == nil {
		return "the child's turn failed"
	}
	msg := e.Message
	if msg == "" {
		msg = "the child's turn failed"
	}
	if e.Code != "" {
		return e.Code + ": " + msg
	}
	return msg
}

// fromACPStop maps an ACP stop reason (spec §5, plus max_turn_requests,
// which ACP uses where dsh says blocked).
func fromACPStop(r acp.StopReason) (stop, diag string) {
	switch r {
	case acp.StopReasonEndTurn:
		return StopCompleted, ""
	case acp.StopReasonMaxTokens:
		return StopMaxTokens, ""
	case acp.StopReasonRefusal:
		return StopRefusal, ""
	case acp.StopReasonCancelled:
		return StopAborted, "the agent reported its turn cancelled"
	case acp.StopReasonMaxTurnRequests:
		return StopError, "blocked: the agent hit its limit of model requests for one turn (max_turn_requests)"
	}
	return StopError, fmt.Sprintf("the agent ended its turn with an unknown stop reason %q", string(r))
}

// lockedText accumulates an in-process child's streamed answer text (the
// output of a run cut off before its message was committed).
type lockedText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedText) onDelta(d model.Delta) {
	if d.Kind != model.DeltaText {
		return
	}
	l.mu.Lock()
	l.b.WriteString(d.Text)
	l.mu.Unlock()
}

func (l *lockedText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
