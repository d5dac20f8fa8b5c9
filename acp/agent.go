package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
)

// listPageSize is the number of sessions per session/list page.
const listPageSize = 50

// Error messages a client may match on (they are the original's).
const (
	msgPromptInFlight = "a prompt is already in flight for this session"
	msgEmptyPrompt    = "empty prompt"
)

// rpcError is a JSON-RPC error with our message. The SDK passes a
// *sdk.RequestError through only when it is returned unwrapped.
func rpcError(code int, format string, args ...any) error {
	return &sdk.RequestError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func unknownSession(id sdk.SessionId) error {
	return rpcError(codeInvalidParams, "unknown session: %s", id)
}

// coreError maps a runtime error onto the wire: bad input is the client's
// fault (-32602), the rest is ours (-32603).
func coreError(err error) error {
	if errors.Is(err, core.ErrBadInput) {
		return rpcError(codeInvalidParams, "%v", err)
	}
	return rpcError(codeInternalError, "%v", err)
}

// Initialize negotiates the protocol version (the client's when we speak
// it, else our latest) and advertises only what works.
func (a *agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.client = p.ClientCapabilities
	a.mu.Unlock()
	v := a.opts.ProtocolVersion
	if int(p.ProtocolVersion) >= 1 && int(p.ProtocolVersion) < v {
		v = int(p.ProtocolVersion)
	}
	images := false
	d := a.rt.Defaults()
	if prov, err := a.rt.Provider(d.Provider); err == nil {
		images = prov.Caps(d.Model).Images
	}
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersion(v),
		AgentInfo:       &sdk.Implementation{Name: "dsh", Title: sdk.Ptr("dsh"), Version: a.opts.Version},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{Image: images, EmbeddedContext: true},
			McpCapabilities:    mcpCapabilities(),
			SessionCapabilities: sdk.SessionCapabilities{
				List:   &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{},
				Close:  &sdk.SessionCloseCapabilities{},
				Delete: &sdk.SessionDeleteCapabilities{},
				Fork:   &sdk.SessionForkCapabilities{},
				// Extra roots the permission gate treats as workspace.
				AdditionalDirectories: &sdk.SessionAdditionalDirectoriesCapabilities{},
			},
			Auth: sdk.AgentAuthCapabilities{Logout: &sdk.LogoutCapabilities{}},
		},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate is a no-op: no auth method is advertised (the model key
// comes from the environment).
func (a *agent) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// Logout succeeds without doing anything: dsh keeps no credentials of its
// own (the model key comes from the environment), so there is nothing to
// forget. It is advertised because clients offer a logout action only to
// agents that do, and a user expects it to answer.
func (a *agent) Logout(ctx context.Context, p sdk.LogoutRequest) (sdk.LogoutResponse, error) {
	return sdk.LogoutResponse{}, nil
}

// checkCwd requires an absolute path to an existing directory.
func checkCwd(cwd string) (string, error) {
	if !filepath.IsAbs(cwd) {
		return "", rpcError(codeInvalidParams, "cwd must be an absolute path, got %q", cwd)
	}
	cwd = filepath.Clean(cwd)
	fi, err := os.Stat(cwd)
	if err != nil {
		return "", rpcError(codeInvalidParams, "cwd %s: %v", cwd, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return "", rpcError(codeInvalidParams, "cwd %s is not a directory", cwd)
	}
	return cwd, nil
}

// checkDirs validates additionalDirectories: absolute paths of existing
// directories (cleaned, each once). They become workspace roots of the
// session: the permission gate treats paths under them as inside, the
// sandbox lets commands write them. A lifecycle request's list is the
// session's complete set, none when it is omitted (ACP: "when omitted or
// empty, no additional roots are activated"); the session records a
// change, so session/list reports the set in force.
func checkDirs(dirs []string) ([]string, error) {
	var out []string
	for i, d := range dirs {
		c, err := checkCwd(d)
		if err != nil {
			var re *sdk.RequestError
			if errors.As(err, &re) {
				return nil, rpcError(codeInvalidParams, "additionalDirectories[%d]: %s", i, strings.TrimPrefix(re.Message, "cwd "))
			}
			return nil, err
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// sessionOptions are the door-supplied parts of a session: the asker, and
// the client's fs and terminals when it advertised them (nil = local).
func (a *agent) sessionOptions(st *sessState) core.SessionOptions {
	caps := a.clientCaps()
	opts := core.SessionOptions{ID: st.id, Cwd: st.cwd, Origin: "acp", Asker: &asker{a: a, st: st}}
	if caps.Fs.ReadTextFile || caps.Fs.WriteTextFile {
		opts.Files = &clientFS{a: a, st: st, read: caps.Fs.ReadTextFile, write: caps.Fs.WriteTextFile, local: core.LocalFS()}
	}
	if caps.Terminal {
		opts.Exec = &clientExec{a: a, st: st}
	}
	return opts
}

// NewSession creates a session. Its slash commands are announced right
// after the response is on the wire: before it, the client would not know
// the session id yet and would drop them.
func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, *sessState, error) {
	if !a.enter() {
		return sdk.NewSessionResponse{}, nil, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return sdk.NewSessionResponse{}, nil, err
	}
	dirs, err := checkDirs(p.AdditionalDirectories)
	if err != nil {
		return sdk.NewSessionResponse{}, nil, err
	}
	st := newSessState(a, core.NewSessionID(), cwd)
	opts := withMCP(a.sessionOptions(st), p.McpServers)
	opts.AdditionalDirs = dirs
	s, err := a.rt.Create(ctx, opts)
	if err != nil {
		return sdk.NewSessionResponse{}, nil, coreError(err)
	}
	st.attach(a, s)
	if err := a.adopt(st, false); err != nil {
		return sdk.NewSessionResponse{}, nil, rpcError(codeInternalError, "%v", err)
	}
	return sdk.NewSessionResponse{
		SessionId:     sdk.SessionId(st.id),
		Modes:         modeState(s.Mode()),
		ConfigOptions: a.configOptions(s.Config(), s.Mode()),
	}, st, nil
}

// announceCommands queues the slash-command list of a session.
func (a *agent) announceCommands(st *sessState) {
	cmds := st.commands()
	st.rd.push(item{update: &cmds})
	if n := a.sandboxNotice(); n != nil {
		st.rd.push(item{update: n})
	}
	if failed := mcpFailures(st.s); failed != "" {
		msg := sdk.UpdateAgentMessageText(failed)
		st.rd.push(item{update: &msg})
	}
}

// open makes a stored (or live, elsewhere in this process) session one of
// this connection's, checking that it belongs to cwd. With replay, a new
// state's reader holds its live updates back until the caller asks it for
// the replay, which covers them.
func (a *agent) open(ctx context.Context, id sdk.SessionId, cwd string, replay bool, servers []sdk.McpServer) (*sessState, error) {
	if st := a.session(string(id)); st != nil {
		if st.cwd != cwd {
			return nil, rpcError(codeInvalidParams, "session %s belongs to %s, not %s", id, st.cwd, cwd)
		}
		addMCP(st.s, servers)
		return st, nil
	}
	if s := a.rt.Get(string(id)); s != nil {
		// Live in this runtime but not on this connection (opened by
		// another door, or by a connection that left without closing
		// it): take it over.
		if s.Cwd() != cwd {
			return nil, rpcError(codeInvalidParams, "session %s belongs to %s, not %s", id, s.Cwd(), cwd)
		}
		st := newSessState(a, string(id), s.Cwd())
		o := a.sessionOptions(st)
		s.Bind(o.Asker, o.Files, o.Exec, nil)
		st.attach(a, s)
		addMCP(s, servers)
		return st, a.adopt(st, replay)
	}
	h, err := a.rt.Store().ReadHeader(string(id))
	if err != nil {
		if errors.Is(err, core.ErrNotFound) {
			return nil, unknownSession(id)
		}
		return nil, rpcError(codeInternalError, "session %s: %v", id, err)
	}
	if filepath.Clean(h.Cwd) != cwd {
		return nil, rpcError(codeInvalidParams, "session %s belongs to %s, not %s", id, h.Cwd, cwd)
	}
	st := newSessState(a, string(id), h.Cwd)
	s, err := a.rt.Resume(ctx, string(id), withMCP(a.sessionOptions(st), servers))
	if err != nil {
		switch {
		case errors.Is(err, core.ErrLeased):
			return nil, rpcError(codeInternalError, "session %s is open in another process; close it there first", id)
		case errors.Is(err, core.ErrNotFound):
			return nil, unknownSession(id)
		}
		return nil, coreError(err)
	}
	st.attach(a, s)
	if err := a.adopt(st, replay); err != nil {
		return nil, rpcError(codeInternalError, "%v", err)
	}
	return st, nil
}

// LoadSession opens a session and replays its whole history as updates
// before answering, with its model and mode in the response.
func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if !a.enter() {
		return sdk.LoadSessionResponse{}, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	dirs, err := checkDirs(p.AdditionalDirectories)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	st, err := a.open(ctx, p.SessionId, cwd, true, p.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	if err := st.s.SetAdditionalDirs(dirs); err != nil {
		st.rd.push(item{release: true}) // live from where it was opened
		return sdk.LoadSessionResponse{}, rpcError(codeInternalError, "session %s: recording additionalDirectories: %v", st.id, err)
	}
	if err := st.rd.replay(ctx); err != nil {
		if ctx.Err() != nil {
			return sdk.LoadSessionResponse{}, ctx.Err() // -32800
		}
		return sdk.LoadSessionResponse{}, rpcError(codeInternalError, "replay of session %s: %v", st.id, err)
	}
	return sdk.LoadSessionResponse{Modes: modeState(st.s.Mode()), ConfigOptions: a.configOptions(st.s.Config(), st.s.Mode())}, nil
}

// ResumeSession opens a session without replaying it.
func (a *agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	if !a.enter() {
		return sdk.ResumeSessionResponse{}, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	dirs, err := checkDirs(p.AdditionalDirectories)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	st, err := a.open(ctx, p.SessionId, cwd, false, p.McpServers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	if err := st.s.SetAdditionalDirs(dirs); err != nil {
		return sdk.ResumeSessionResponse{}, rpcError(codeInternalError, "session %s: recording additionalDirectories: %v", st.id, err)
	}
	cmds := st.commands()
	_ = st.rd.pushWait(ctx, item{update: &cmds})
	if n := a.sandboxNotice(); n != nil {
		_ = st.rd.pushWait(ctx, item{update: n})
	}
	return sdk.ResumeSessionResponse{Modes: modeState(st.s.Mode()), ConfigOptions: a.configOptions(st.s.Config(), st.s.Mode())}, nil
}

// CloseSession cancels the session's work and closes it.
func (a *agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	if !a.enter() {
		return sdk.CloseSessionResponse{}, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	a.mu.Lock()
	st := a.sessions[string(p.SessionId)]
	if st == nil || st.closed {
		a.mu.Unlock()
		return sdk.CloseSessionResponse{}, unknownSession(p.SessionId)
	}
	st.closed = true
	a.mu.Unlock()
	if err := st.s.Close(ctx); err != nil {
		return sdk.CloseSessionResponse{}, rpcError(codeInternalError, "closing session %s: %v", st.id, err)
	}
	return sdk.CloseSessionResponse{}, nil
}

// DeleteSession removes a stored session from disk (it leaves session/list).
// A session open on this connection is closed first; one open in another
// process is refused (its lease is held).
func (a *agent) DeleteSession(ctx context.Context, p sdk.UnstableDeleteSessionRequest) (sdk.UnstableDeleteSessionResponse, error) {
	if !a.enter() {
		return sdk.UnstableDeleteSessionResponse{}, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	id := string(p.SessionId)
	a.mu.Lock()
	st := a.sessions[id]
	if st != nil {
		st.closed = true
	}
	a.mu.Unlock()
	if st != nil {
		if err := st.s.Close(ctx); err != nil {
			return sdk.UnstableDeleteSessionResponse{}, rpcError(codeInternalError, "closing session %s: %v", id, err)
		}
	} else if s := a.rt.Get(id); s != nil {
		if err := s.Close(ctx); err != nil {
			return sdk.UnstableDeleteSessionResponse{}, rpcError(codeInternalError, "closing session %s: %v", id, err)
		}
	}
	if err := a.rt.Store().Remove(id); err != nil {
		switch {
		case errors.Is(err, core.ErrNotFound):
			return sdk.UnstableDeleteSessionResponse{}, unknownSession(p.SessionId)
		case errors.Is(err, core.ErrLeased):
			return sdk.UnstableDeleteSessionResponse{}, rpcError(codeInternalError, "session %s is open in another process; close it there first", id)
		}
		return sdk.UnstableDeleteSessionResponse{}, rpcError(codeInternalError, "deleting session %s: %v", id, err)
	}
	return sdk.UnstableDeleteSessionResponse{}, nil
}

// ListSessions lists stored sessions, newest first, 50 a page. Subagent
// sessions (those with a parent) are left out: they belong to their
// parent's tool calls.
func (a *agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	if !a.enter() {
		return sdk.ListSessionsResponse{}, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	filter := ""
	if p.Cwd != nil && *p.Cwd != "" {
		if !filepath.IsAbs(*p.Cwd) {
			return sdk.ListSessionsResponse{}, rpcError(codeInvalidParams, "cwd must be an absolute path, got %q", *p.Cwd)
		}
		filter = filepath.Clean(*p.Cwd)
	}
	offset := 0
	if p.Cursor != nil && *p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(*p.Cursor)
		n, err2 := strconv.Atoi(string(raw))
		if err != nil || err2 != nil || n < 0 {
			return sdk.ListSessionsResponse{}, rpcError(codeInvalidParams, "invalid cursor %q", *p.Cursor)
		}
		offset = n
	}
	infos, err := a.rt.Store().List(filter)
	if err != nil {
		return sdk.ListSessionsResponse{}, rpcError(codeInternalError, "listing sessions: %v", err)
	}
	infos = slices.DeleteFunc(infos, func(i core.SessionInfo) bool { return i.Header.Delegated() })
	resp := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	if offset >= len(infos) {
		return resp, nil
	}
	end := min(offset+listPageSize, len(infos))
	for _, in := range infos[offset:end] {
		si := sdk.SessionInfo{SessionId: sdk.SessionId(in.Header.ID), Cwd: in.Header.Cwd, AdditionalDirectories: in.AdditionalDirs}
		if in.Title != "" {
			si.Title = sdk.Ptr(in.Title)
		}
		if in.UpdatedAt > 0 {
			si.UpdatedAt = sdk.Ptr(time.UnixMilli(in.UpdatedAt).UTC().Format(time.RFC3339Nano))
		}
		resp.Sessions = append(resp.Sessions, si)
	}
	if end < len(infos) {
		resp.NextCursor = sdk.Ptr(base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end))))
	}
	return resp, nil
}

// Cancel stops the session's running turn. Pending permission requests
// resolve as cancelled (the turn's context ends), and the prompt answers
// with stopReason cancelled. An unknown session is a no-op.
func (a *agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	st := a.session(string(p.SessionId))
	if st == nil {
		return nil
	}
	st.pmu.Lock()
	if st.prompting {
		st.cancelRequested = true
	}
	st.pmu.Unlock()
	st.s.Cancel(nil)
	return nil
}

// SetSessionMode is the legacy mode switch; session/set_config_option with
// the mode option does the same.
func (a *agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	st := a.session(string(p.SessionId))
	if st == nil {
		return sdk.SetSessionModeResponse{}, unknownSession(p.SessionId)
	}
	if err := a.setMode(st, string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	return sdk.SetSessionModeResponse{}, nil
}

func (a *agent) setMode(st *sessState, m string) error {
	if !validMode(m) {
		return rpcError(codeInvalidParams, "unknown mode %q: the modes are read-only, ask, auto and full", m)
	}
	if st.s.Mode() == core.PermissionMode(m) {
		return nil
	}
	if err := st.s.SetMode(core.PermissionMode(m)); err != nil {
		return coreError(err)
	}
	return nil
}

// SetSessionConfigOption sets the mode, the model or the reasoning effort,
// and answers with the full option list. The change is also announced as
// config_option_update (and current_mode_update) from its committed event.
func (a *agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	if p.Boolean != nil {
		if a.session(string(p.Boolean.SessionId)) == nil {
			return sdk.SetSessionConfigOptionResponse{}, unknownSession(p.Boolean.SessionId)
		}
		return sdk.SetSessionConfigOptionResponse{}, rpcError(codeInvalidParams, "config option %q is not a boolean option", p.Boolean.ConfigId)
	}
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, rpcError(codeInvalidParams, "missing config option value")
	}
	st := a.session(string(v.SessionId))
	if st == nil {
		return sdk.SetSessionConfigOptionResponse{}, unknownSession(v.SessionId)
	}
	val := string(v.Value)
	switch string(v.ConfigId) {
	case optMode:
		if err := a.setMode(st, val); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
	case optModel:
		cfg := st.s.Config()
		if !slices.Contains(a.modelIDs(cfg.Model), val) {
			return sdk.SetSessionConfigOptionResponse{}, rpcError(codeInvalidParams, "unknown model %q: the models are %v", val, a.modelIDs(cfg.Model))
		}
		if val != cfg.Model {
			next := cfg
			next.Model = val
			if values, _, ok := a.efforts(next); !ok || !slices.Contains(values, cfg.ReasoningEffort) {
				next.ReasoningEffort = ""
			}
			if err := st.s.SetConfig(next); err != nil {
				return sdk.SetSessionConfigOptionResponse{}, coreError(err)
			}
		}
	case optThought:
		cfg := st.s.Config()
		values, current, ok := a.efforts(cfg)
		if !ok {
			return sdk.SetSessionConfigOptionResponse{}, rpcError(codeInvalidParams, "model %s has no reasoning efforts", cfg.Model)
		}
		if !slices.Contains(values, val) {
			return sdk.SetSessionConfigOptionResponse{}, rpcError(codeInvalidParams, "unknown reasoning effort %q for model %s: the values are %v", val, cfg.Model, values)
		}
		if val != current {
			next := cfg
			next.ReasoningEffort = val
			if val == effortDefault {
				next.ReasoningEffort = ""
			}
			if err := st.s.SetConfig(next); err != nil {
				return sdk.SetSessionConfigOptionResponse{}, coreError(err)
			}
		}
	default:
		return sdk.SetSessionConfigOptionResponse{}, rpcError(codeInvalidParams, "unknown config option %q: the options are mode, model and thought_level", v.ConfigId)
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(st.s.Config(), st.s.Mode())}, nil
}
