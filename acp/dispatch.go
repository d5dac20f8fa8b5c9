package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
)

// The door owns dispatch: each frame is decoded once by acp/wire, and the
// request's params once more, into acp-go-sdk's generated request type.
// Unlike the SDK's own AgentSideConnection, nothing here cancels a
// session's running prompt when another request arrives: a second prompt
// for a busy session is refused by Prompt itself.

// decodeParams decodes params into a request type and validates it.
func decodeParams[T any](params json.RawMessage) (T, error) { return wire.DecodeParams[T](params) }

// serve decodes a request of type Req and runs fn on it.
func serve[Req, Resp any](ctx context.Context, params json.RawMessage, fn func(context.Context, Req) (Resp, error)) (any, error) {
	p, err := decodeParams[Req](params)
	if err != nil {
		return nil, err
	}
	resp, err := fn(ctx, p)
	if err != nil {
		return nil, wireError(err)
	}
	return resp, nil
}

// HandleRequest implements wire.Handler.
func (a *agent) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case sdk.AgentMethodInitialize:
		return serve(ctx, params, a.Initialize)
	case sdk.AgentMethodAuthenticate:
		return serve(ctx, params, a.Authenticate)
	case sdk.AgentMethodLogout:
		return serve(ctx, params, a.Logout)
	case sdk.AgentMethodSessionNew:
		p, err := decodeParams[sdk.NewSessionRequest](params)
		if err != nil {
			return nil, err
		}
		resp, st, err := a.NewSession(ctx, p)
		if err != nil {
			return nil, wireError(err)
		}
		// The client learns the session id from the response: the slash
		// commands announced before it would be dropped.
		return &wire.Then{Result: resp, After: func() { a.announceCommands(st) }}, nil
	case sdk.AgentMethodSessionFork:
		p, err := decodeParams[sdk.UnstableForkSessionRequest](params)
		if err != nil {
			return nil, err
		}
		resp, st, err := a.ForkSession(ctx, p)
		if err != nil {
			return nil, wireError(err)
		}
		return &wire.Then{Result: resp, After: func() { a.announceCommands(st) }}, nil
	case sdk.AgentMethodSessionLoad:
		return serve(ctx, params, a.LoadSession)
	case sdk.AgentMethodSessionResume:
		return serve(ctx, params, a.ResumeSession)
	case sdk.AgentMethodSessionList:
		return serve(ctx, params, a.ListSessions)
	case sdk.AgentMethodSessionClose:
		return serve(ctx, params, a.CloseSession)
	case sdk.AgentMethodSessionDelete:
		return serve(ctx, params, a.DeleteSession)
	case sdk.AgentMethodSessionPrompt:
		return serve(ctx, params, a.Prompt)
	case sdk.AgentMethodSessionSetMode:
		return serve(ctx, params, a.SetSessionMode)
	case sdk.AgentMethodSessionSetConfigOption:
		return serve(ctx, params, a.SetSessionConfigOption)
	case sdk.AgentMethodSessionCancel:
		// A notification sent as a request: do it and answer.
		p, err := decodeParams[sdk.CancelNotification](params)
		if err != nil {
			return nil, err
		}
		return nil, wireError(a.Cancel(ctx, p))
	}
	return nil, wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", method)
}

// HandleNotification implements wire.Handler. It runs on the reading
// goroutine, so everything here returns at once.
func (a *agent) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case sdk.AgentMethodSessionCancel:
		p, err := decodeParams[sdk.CancelNotification](params)
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

// wireError maps an error of a handler onto the wire; a cancelled
// request is -32800.
func wireError(err error) error {
	if errors.Is(err, context.Canceled) {
		var re *sdk.RequestError
		if !errors.As(err, &re) {
			return wire.Errorf(wire.CodeRequestCancelled, "request cancelled")
		}
	}
	return wire.FromSDKError(err)
}
