package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/acp/wire"
)

// peer is the client as the agent calls it: the client-side methods of
// ACP, on acp/wire, with the SDK's types. A JSON-RPC error answer comes back
// as *sdk.RequestError.
type peer struct {
	c *wire.Conn
}

func callPeer[Resp any](ctx context.Context, p *peer, method string, params any) (Resp, error) {
	return wire.CallSDK[Resp](ctx, p.c, method, params)
}

func (p *peer) RequestPermission(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return callPeer[sdk.RequestPermissionResponse](ctx, p, sdk.ClientMethodSessionRequestPermission, r)
}

func (p *peer) ReadTextFile(ctx context.Context, r sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return callPeer[sdk.ReadTextFileResponse](ctx, p, sdk.ClientMethodFsReadTextFile, r)
}

func (p *peer) WriteTextFile(ctx context.Context, r sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return callPeer[sdk.WriteTextFileResponse](ctx, p, sdk.ClientMethodFsWriteTextFile, r)
}

func (p *peer) CreateTerminal(ctx context.Context, r sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return callPeer[sdk.CreateTerminalResponse](ctx, p, sdk.ClientMethodTerminalCreate, r)
}

func (p *peer) WaitForTerminalExit(ctx context.Context, r sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return callPeer[sdk.WaitForTerminalExitResponse](ctx, p, sdk.ClientMethodTerminalWaitForExit, r)
}

func (p *peer) KillTerminal(ctx context.Context, r sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return callPeer[sdk.KillTerminalResponse](ctx, p, sdk.ClientMethodTerminalKill, r)
}

func (p *peer) TerminalOutput(ctx context.Context, r sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return callPeer[sdk.TerminalOutputResponse](ctx, p, sdk.ClientMethodTerminalOutput, r)
}

func (p *peer) ReleaseTerminal(ctx context.Context, r sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return callPeer[sdk.ReleaseTerminalResponse](ctx, p, sdk.ClientMethodTerminalRelease, r)
}

// SessionUpdate sends one session/update notification.
func (p *peer) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	return p.c.Notify(sdk.ClientMethodSessionUpdate, n)
}
