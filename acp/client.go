package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
)

// cleanupTimeout bounds the terminal/kill, terminal/output and
// terminal/release calls made after a command was cancelled.
const cleanupTimeout = 5 * time.Second

// maxClientWrite is the largest file written through fs/write_text_file;
// a larger one is written locally, because the frame carrying it would
// exceed the 10 MiB line cap of SDK-based clients.
const maxClientWrite = 8 << 20

// Permission option ids; they are the kinds' names.
var permissionOptions = []sdk.PermissionOption{
	{OptionId: "allow_once", Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: "allow_always", Name: "Always allow", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: "reject_once", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	{OptionId: "reject_always", Name: "Always reject", Kind: sdk.PermissionOptionKindRejectAlways},
}

// asker asks the editor with session/request_permission.
type asker struct {
	a  *agent
	st *sessState
}

// Ask implements core.Asker. The tool_call update of the call goes
// out first, so the client knows the call it is asked about. A cancelled
// request (session/cancel, or the client's cancelled outcome) is
// core.Cancelled; a client that fails to answer is ErrNoAsker, so the
// gate refuses.
func (k *asker) Ask(ctx context.Context, req core.PermissionRequest) (core.PermissionAnswer, error) {
	if err := k.st.waitFor(ctx, func() bool { _, ok := k.st.calls[req.CallID]; return ok }); err != nil {
		if ctx.Err() != nil {
			return core.Cancelled, nil
		}
		return "", fmt.Errorf("%w: %v", core.ErrNoAsker, err)
	}
	tc := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(req.CallID), Status: sdk.Ptr(sdk.ToolCallStatusPending),
		RawInput: rawInput(string(req.RawInput), req.Paths), Locations: locations(req.Paths),
		Content: permissionContent(ctx, req.Preview)}
	if req.ShowKind != "" {
		tc.Kind = sdk.Ptr(sdk.ToolKind(req.ShowKind))
	}
	if req.Title != "" {
		tc.Title = sdk.Ptr(req.Title)
	}
	resp, err := k.a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(k.st.id), ToolCall: tc, Options: permissionOptions})
	if err != nil {
		if ctx.Err() != nil {
			return core.Cancelled, nil
		}
		return "", fmt.Errorf("%w: the client did not answer: %v", core.ErrNoAsker, err)
	}
	switch {
	case resp.Outcome.Cancelled != nil:
		return core.Cancelled, nil
	case resp.Outcome.Selected != nil:
		switch id := string(resp.Outcome.Selected.OptionId); id {
		case "allow_once":
			return core.AllowOnce, nil
		case "allow_always":
			return core.AllowAlways, nil
		case "reject_once":
			return core.RejectOnce, nil
		case "reject_always":
			return core.RejectAlways, nil
		default:
			k.a.log.Warn("acp: unknown permission option; rejecting", "session", k.st.id, "option", id)
			return core.RejectOnce, nil
		}
	}
	return "", fmt.Errorf("%w: the client answered with no outcome", core.ErrNoAsker)
}

// clientFS reads and writes through the editor (fs/read_text_file and
// fs/write_text_file), so unsaved buffers are what tools see and edits land
// in the editor. Binary files, directories, missing files and very large
// files are handled locally: the client's methods are for text.
type clientFS struct {
	a           *agent
	st          *sessState
	read, write bool
	local       core.FileSystem
}

func (c *clientFS) ReadFile(ctx context.Context, path string) ([]byte, error) {
	path = c.abs(path)
	if !c.read {
		return c.local.ReadFile(ctx, path)
	}
	// The local read answers the cases the client cannot (a missing file
	// must be fs.ErrNotExist for write and edit to create it; a directory;
	// binary bytes that a text API would mangle).
	data, err := c.local.ReadFile(ctx, path)
	if err != nil || !utf8.Valid(data) || len(data) > maxClientWrite {
		return data, err
	}
	resp, err := c.a.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sdk.SessionId(c.st.id), Path: path})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The file is on disk and was read: a buffer the editor could
		// not hand over (or a reply too large for a frame) is no reason
		// to fail the tool.
		c.a.log.Warn("acp: fs/read_text_file failed; using the file on disk", "session", c.st.id, "path", path, "err", reqErrText(err))
		return data, nil
	}
	return []byte(resp.Content), nil
}

func (c *clientFS) WriteFile(ctx context.Context, path string, data []byte, mode uint32) error {
	path = c.abs(path)
	if !c.write || !utf8.Valid(data) || len(data) > maxClientWrite {
		return c.local.WriteFile(ctx, path, data, mode)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return c.local.WriteFile(ctx, path, data, mode) // the local error says it well
	}
	_, err := c.a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(c.st.id), Path: path, Content: string(data)})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the editor could not write %s: %s", path, reqErrText(err))
	}
	return nil
}

func (c *clientFS) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.st.cwd, p)
}

// clientExec runs commands in the editor's terminals (terminal/create …
// terminal/release), so the user watches them live in the tool call.
// Where the sandbox applies, the terminal runs dsh's reaper over the
// command (Options.ContainTerminal), so it is contained as a local one:
// the editor started dsh on this machine, so the binary's path is valid.
type clientExec struct {
	a  *agent
	st *sessState
}

func (e *clientExec) Exec(ctx context.Context, req core.ExecRequest) (core.ExecResult, error) {
	res := core.ExecResult{ExitCode: -1}
	if strings.TrimSpace(req.Command) == "" {
		return res, errors.New("command is empty")
	}
	sid := sdk.SessionId(e.st.id)
	argv, env := []string{"/bin/bash", "-c", req.Command}, envDelta(req.Env)
	if e.a.opts.ContainTerminal != nil {
		var extra []string
		var err error
		if argv, extra, err = e.a.opts.ContainTerminal(req.Scope, argv); err != nil {
			return res, err
		}
		env = append(env, envDelta(extra)...)
	}
	create := sdk.CreateTerminalRequest{SessionId: sid, Command: argv[0], Args: argv[1:], Env: env}
	if req.Workdir != "" {
		create.Cwd = sdk.Ptr(req.Workdir)
	}
	if req.OutputLimit > 0 {
		create.OutputByteLimit = sdk.Ptr(req.OutputLimit)
	}
	term, err := e.a.conn.CreateTerminal(ctx, create)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("the editor could not start a terminal: %s", reqErrText(err))
	}
	tid := term.TerminalId
	res.TerminalID = tid
	e.embed(ctx, req.CallID, tid)

	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if req.Timeout > 0 {
		waitCtx, cancel = context.WithTimeout(ctx, req.Timeout)
	}
	exit, werr := e.a.conn.WaitForTerminalExit(waitCtx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	timedOut := werr != nil && waitCtx.Err() != nil && ctx.Err() == nil
	cancel()

	bg, cancelBg := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancelBg()
	if werr != nil {
		// Cancelled, timed out or the client failed: stop the command.
		if _, err := e.a.conn.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: sid, TerminalId: tid}); err != nil {
			e.a.log.Warn("acp: terminal/kill failed", "session", e.st.id, "terminal", tid, "err", err)
		}
	} else if exit.ExitCode != nil && exit.Signal == nil {
		res.ExitCode = *exit.ExitCode
	}
	out, oerr := e.a.conn.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: tid})
	if oerr == nil {
		res.Output, res.Truncated = out.Output, out.Truncated
		if res.ExitCode == -1 && werr == nil && out.ExitStatus != nil && out.ExitStatus.ExitCode != nil && out.ExitStatus.Signal == nil {
			res.ExitCode = *out.ExitStatus.ExitCode
		}
	}
	if _, err := e.a.conn.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: tid}); err != nil {
		e.a.log.Debug("acp: terminal/release failed", "session", e.st.id, "terminal", tid, "err", err)
	}
	res.TimedOut = timedOut
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case timedOut:
		return res, nil
	case werr != nil:
		return res, fmt.Errorf("the editor's terminal failed: %s", reqErrText(werr))
	case oerr != nil:
		return res, fmt.Errorf("the editor did not return the command's output: %s", reqErrText(oerr))
	}
	return res, nil
}

// embed shows the terminal in the running bash call at once, so its output
// streams in the editor. The call is the request's CallID; an executor
// caller that names none gets the one bash call whose tool_call is out,
// whose permission was granted and whose result is not in. Either way the
// update waits until the reader has caught up with every event committed so
// far, so the tool_call is on the wire first. With no call found, the
// terminal appears with the call's result instead.
func (e *clientExec) embed(ctx context.Context, callID, tid string) {
	st := e.st
	evs := st.s.Events()
	if len(evs) == 0 {
		return
	}
	last := evs[len(evs)-1].Seq
	wctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if err := st.waitFor(wctx, func() bool { return st.sent >= last }); err != nil {
		return
	}
	call := callID
	if call == "" {
		st.progMu.Lock()
		n := 0
		for _, x := range st.execs {
			if x.allowed {
				call = x.id
				n++
			}
		}
		st.progMu.Unlock()
		if n != 1 {
			return
		}
	}
	u := sdk.UpdateToolCall(sdk.ToolCallId(call), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(tid)}))
	_ = st.rd.pushWait(wctx, item{update: &u})
}

// envDelta is the part of env that differs from this process's
// environment: ACP's env adds variables to the terminal's own, so only the
// additions matter (the full scrubbed environment would be a large frame
// and cannot remove anything anyway).
func envDelta(env []string) []sdk.EnvVariable {
	if env == nil {
		return nil
	}
	own := os.Environ()
	var out []sdk.EnvVariable
	for _, kv := range env {
		if slices.Contains(own, kv) {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		out = append(out, sdk.EnvVariable{Name: name, Value: value})
	}
	return out
}

// reqErrText is the message of a client error, without the JSON wrapping
// of sdk.RequestError.Error.
func reqErrText(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		if re.Data != nil {
			return fmt.Sprintf("%s (%v)", re.Message, re.Data)
		}
		return re.Message
	}
	return err.Error()
}
