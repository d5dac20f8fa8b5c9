package acp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
)

// The door owns dispatch: each frame is decoded once by acp/wire, and the
// request's params once more, into acp-go-sdk's generated request type.
// Unlike the SDK's own AgentSideConnection, nothing here cancels a
// session's running prompt when another request arrives: a second prompt
// for a busy session is refused by Prompt itself.

// HandleRequest implements wire.Handler.
func (a *agent) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case sdk.AgentMethodInitialize:
		return wire.Answer(ctx, params, a.Initialize)
	case sdk.AgentMethodAuthenticate:
		return wire.Answer(ctx, params, a.Authenticate)
	case sdk.AgentMethodLogout:
		return wire.Answer(ctx, params, a.Logout)
	case sdk.AgentMethodSessionNew:
		return answerOpening(ctx, a, params, a.NewSession)
	case sdk.AgentMethodSessionFork:
		return answerOpening(ctx, a, params, a.ForkSession)
	case sdk.AgentMethodSessionLoad:
		return wire.Answer(ctx, params, a.LoadSession)
	case sdk.AgentMethodSessionResume:
		return wire.Answer(ctx, params, a.ResumeSession)
	case sdk.AgentMethodSessionList:
		return wire.Answer(ctx, params, a.ListSessions)
	case sdk.AgentMethodSessionClose:
		return wire.Answer(ctx, params, a.CloseSession)
	case sdk.AgentMethodSessionDelete:
		return wire.Answer(ctx, params, a.DeleteSession)
	case sdk.AgentMethodSessionPrompt:
		return wire.Answer(ctx, params, a.Prompt)
	case sdk.AgentMethodSessionSetMode:
		return wire.Answer(ctx, params, a.SetSessionMode)
	case sdk.AgentMethodSessionSetConfigOption:
		return wire.Answer(ctx, params, a.SetSessionConfigOption)
	case sdk.AgentMethodSessionCancel:
		// A notification sent as a request: do it and answer.
		p, err := wire.DecodeParams[sdk.CancelNotification](params)
		if err != nil {
			return nil, err
		}
		return nil, wire.FromSDKError(a.Cancel(ctx, p))
	}
	return nil, wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", method)
}

// HandleNotification implements wire.Handler. It runs on the reading
// goroutine, so everything here returns at once.
func (a *agent) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case sdk.AgentMethodSessionCancel:
		p, err := wire.DecodeParams[sdk.CancelNotification](params)
		if err != nil {
			a.log.Warn("acp: session/cancel with bad params", "err", err)
			return
		}
		_ = a.Cancel(ctx, p)
	case sdk.AgentMethodSessionPrompt:
		// A prompt sent as a notification has no one to answer.
		a.log.Warn("acp: session/prompt sent as a notification (no id) dropped")
	default:
		if !strings.HasPrefix(method, "_") {
			a.log.Debug("acp: notification ignored", "method", method)
		}
	}
}

// answerOpening answers a request that opens a new session id (new, fork),
// then announces the session's slash commands: the client learns the id
// from the response, so commands announced before it would be dropped.
func answerOpening[P, R any](ctx context.Context, a *agent, params json.RawMessage,
	open func(context.Context, P) (R, *sessState, error)) (any, error) {
	p, err := wire.DecodeParams[P](params)
	if err != nil {
		return nil, err
	}
	resp, st, err := open(ctx, p)
	if err != nil {
		return nil, wire.FromSDKError(err)
	}
	return &wire.Then{Result: resp, After: func() { a.announceCommands(st) }}, nil
}
