package wire

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/coder/acp-go-sdk"
)

// The typed side of the layer, shared by the ACP door and the subagent
// gateway: calls whose results decode into acp-go-sdk's types and whose
// JSON-RPC errors come back as *sdk.RequestError (what code written
// against the SDK expects), and params decoded (and validated, for the
// SDK's request types) once.

// CallSDK sends a request and decodes its result into Resp.
func CallSDK[Resp any](ctx context.Context, c *Conn, method string, params any) (Resp, error) {
	var resp Resp
	err := c.Call(ctx, method, params, &resp)
	var we *Error
	if errors.As(err, &we) {
		re := &sdk.RequestError{Code: we.Code, Message: we.Message}
		if len(we.Data) > 0 {
			var d any
			if json.Unmarshal(we.Data, &d) == nil {
				re.Data = d
			}
		}
		return resp, re
	}
	return resp, err
}

// DecodeParams decodes params (absent = {}) into T and runs its
// Validate when it has one; failures are -32602.
func DecodeParams[T any](params json.RawMessage) (T, error) {
	var p T
	raw := params
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, Errorf(CodeInvalidParams, "Invalid params: %v", err)
	}
	if v, ok := any(&p).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return p, Errorf(CodeInvalidParams, "Invalid params: %v", err)
		}
	}
	return p, nil
}

// FromSDKError maps an error of SDK-style code onto the wire: an
// *sdk.RequestError keeps its code, message and data; an *Error is kept; a
// cancelled context is ACP's -32800; anything else is -32603 with its text.
func FromSDKError(err error) error {
	if err == nil {
		return nil
	}
	var re *sdk.RequestError
	if errors.As(err, &re) {
		we := &Error{Code: re.Code, Message: re.Message}
		if re.Data != nil {
			if b, mErr := json.Marshal(re.Data); mErr == nil {
				we.Data = b
			}
		}
		return we
	}
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	if errors.Is(err, context.Canceled) {
		return Errorf(CodeRequestCancelled, "request cancelled")
	}
	return Errorf(CodeInternalError, "%v", err)
}

// Answer decodes a request's params as Req, runs fn on them and maps its
// error onto the wire: the one shape of every typed handler, on both ends.
func Answer[Req, Resp any](ctx context.Context, params json.RawMessage, fn func(context.Context, Req) (Resp, error)) (any, error) {
	p, err := DecodeParams[Req](params)
	if err != nil {
		return nil, err
	}
	resp, err := fn(ctx, p)
	if err != nil {
		return nil, FromSDKError(err)
	}
	return resp, nil
}
