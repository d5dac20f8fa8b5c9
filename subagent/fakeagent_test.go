package subagent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/acp-go-sdk"
)

// The fake ACP agent: this test binary re-executed with envFakeACP=1. It
// is a real ACP agent over stdio (the Go SDK's agent side) whose behaviour
// the prompt text picks, so the gateway's ACP client is tested against
// every stop reason, cancellation, crashes, permissions and floods
// without depending on the dsh ACP door.
//
//	ACP-OK          three chunks, end_turn
//	ACP-MANY <n>    n one-character chunks as fast as possible, end_turn
//	ACP-ERR         a JSON-RPC error
//	ACP-MAX         a chunk, max_tokens
//	ACP-REFUSE      refusal
//	ACP-TURNS       max_turn_requests
//	ACP-HANG        a chunk, then waits for session/cancel → cancelled
//	ACP-DEAF        a chunk, then ignores session/cancel forever
//	ACP-CRASH       a chunk, a stderr line, exit 3
//	ACP-PERM        asks permission for an edit, reports the outcome
//	ACP-ENV <NAME>  reports NAME's value (or <unset>)
//	ACP-PID         reports its pid
//	ACP-GATE <fifo> a chunk, a tool call, then reads fifo (blocks until a
//	                writer closes it), completes the call and answers
type fakeAgent struct {
	conn     *acp.AgentSideConnection
	sessions atomic.Int64
}

func runFakeAgent() int {
	a := &fakeAgent{}
	in := newGatedReader(os.Stdin)
	a.conn = acp.NewAgentSideConnection(a, os.Stdout, in)
	in.open()
	<-a.conn.Done()
	return 0
}

func (a *fakeAgent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "fake-acp", Version: "0"},
		AgentCapabilities: acp.AgentCapabilities{
			SessionCapabilities: acp.SessionCapabilities{Close: &acp.SessionCloseCapabilities{}},
		},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

func (a *fakeAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *fakeAgent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

func (a *fakeAgent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if p.Cwd == "" {
		return acp.NewSessionResponse{}, acp.NewInvalidParams("cwd required")
	}
	n := a.sessions.Add(1)
	return acp.NewSessionResponse{SessionId: acp.SessionId(fmt.Sprintf("fake-%d-%d", os.Getpid(), n))}, nil
}

func (a *fakeAgent) say(ctx context.Context, sid acp.SessionId, text string) {
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText(text)})
}

func (a *fakeAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	var text string
	for _, b := range p.Prompt {
		if b.Text != nil {
			text += b.Text.Text
		}
	}
	word, arg, _ := strings.Cut(strings.TrimSpace(text), " ")
	end := func(r acp.StopReason) (acp.PromptResponse, error) { return acp.PromptResponse{StopReason: r}, nil }
	sid := p.SessionId
	switch word {
	case "ACP-OK":
		a.say(ctx, sid, "Hello ")
		a.say(ctx, sid, "from ")
		a.say(ctx, sid, "fake")
		return end(acp.StopReasonEndTurn)
	case "ACP-MANY":
		n, _ := strconv.Atoi(arg)
		for i := 0; i < n; i++ {
			a.say(ctx, sid, "x")
		}
		return end(acp.StopReasonEndTurn)
	case "ACP-ERR":
		return acp.PromptResponse{}, &acp.RequestError{Code: -32603, Message: "turn failed: boom"}
	case "ACP-MAX":
		a.say(ctx, sid, "partial")
		return end(acp.StopReasonMaxTokens)
	case "ACP-REFUSE":
		return end(acp.StopReasonRefusal)
	case "ACP-TURNS":
		return end(acp.StopReasonMaxTurnRequests)
	case "ACP-HANG":
		a.say(ctx, sid, "started")
		<-ctx.Done()
		return end(acp.StopReasonCancelled)
	case "ACP-DEAF":
		a.say(ctx, sid, "started")
		time.Sleep(time.Hour)
		return end(acp.StopReasonEndTurn)
	case "ACP-CRASH":
		a.say(ctx, sid, "about to crash")
		fmt.Fprintln(os.Stderr, "fatal: simulated crash")
		os.Exit(3)
	case "ACP-PERM":
		title := "Edit notes.txt"
		kind := acp.ToolKindEdit
		resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
			SessionId: sid,
			ToolCall: acp.ToolCallUpdate{ToolCallId: "tc-1", Title: &title, Kind: &kind,
				Locations: []acp.ToolCallLocation{{Path: "/work/notes.txt"}},
				RawInput:  map[string]any{"path": "/work/notes.txt"}},
			Options: []acp.PermissionOption{
				{OptionId: "yes", Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "no", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			},
		})
		switch {
		case err != nil:
			a.say(ctx, sid, "permission: error "+err.Error())
		case resp.Outcome.Selected != nil:
			a.say(ctx, sid, "permission: "+string(resp.Outcome.Selected.OptionId))
		default:
			a.say(ctx, sid, "permission: cancelled")
		}
		return end(acp.StopReasonEndTurn)
	case "ACP-ENV":
		v, ok := os.LookupEnv(arg)
		if !ok {
			v = "<unset>"
		}
		a.say(ctx, sid, arg+"="+v)
		return end(acp.StopReasonEndTurn)
	case "ACP-GATE":
		return a.gate(ctx, sid, arg)
	case "ACP-PID":
		a.say(ctx, sid, strconv.Itoa(os.Getpid()))
		return end(acp.StopReasonEndTurn)
	}
	a.say(ctx, sid, "unknown prompt "+text)
	return end(acp.StopReasonEndTurn)
}

// gate is ACP-GATE: the test sees the tool call while the agent waits.
func (a *fakeAgent) gate(ctx context.Context, sid acp.SessionId, fifo string) (acp.PromptResponse, error) {
	a.say(ctx, sid, "looking at ")
	a.say(ctx, sid, "the gate")
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid,
		Update: acp.StartToolCall("tc-gate", "Read the gate", acp.WithStartKind(acp.ToolKindRead), acp.WithStartStatus(acp.ToolCallStatusPending))})
	if _, err := os.ReadFile(fifo); err != nil {
		a.say(ctx, sid, "gate: "+err.Error())
	}
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid,
		Update: acp.UpdateToolCall("tc-gate", acp.WithUpdateStatus(acp.ToolCallStatusCompleted))})
	a.say(ctx, sid, "through the gate")
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (a *fakeAgent) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (a *fakeAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *fakeAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *fakeAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *fakeAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

func (a *fakeAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}

var _ acp.Agent = (*fakeAgent)(nil)
