package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// ForkSession (unstable session/fork) makes a new session whose history is
// the source's up to now: the source's committed events are copied into a
// new log (with its images), which is then opened like a resumed session.
// Both sessions are usable after, and neither sees the other's later turns.
// A source in the middle of a turn forks with that turn closed the way a
// crash repair closes it (its unfinished calls' outcome unknown).
func (a *agent) ForkSession(ctx context.Context, p sdk.UnstableForkSessionRequest) (sdk.UnstableForkSessionResponse, *sessState, error) {
	var none sdk.UnstableForkSessionResponse
	if !a.enter() {
		return none, nil, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return none, nil, err
	}
	dirs, err := checkDirs(p.AdditionalDirectories)
	if err != nil {
		return none, nil, err
	}
	var servers []sdk.McpServer
	if err := convert(p.McpServers, &servers); err != nil {
		return none, nil, rpcError(codeInvalidParams, "mcpServers: %v", err)
	}
	src := string(p.SessionId)
	h, evs, err := a.forkSource(src)
	if err != nil {
		return none, nil, err
	}
	if filepath.Clean(h.Cwd) != cwd {
		return none, nil, rpcError(codeInvalidParams, "session %s belongs to %s, not %s", src, h.Cwd, cwd)
	}
	id := core.NewSessionID()
	if err := a.copyLog(h, id, evs); err != nil {
		return none, nil, rpcError(codeInternalError, "forking session %s: %v", src, err)
	}
	st := newSessState(a, id, cwd)
	s, err := a.rt.Resume(ctx, id, withMCP(a.sessionOptions(st), servers))
	if err != nil {
		return none, nil, coreError(err)
	}
	// The copy holds the source's roots; the request's list replaces them.
	if err := s.SetAdditionalDirs(dirs); err != nil {
		_ = s.Close(ctx)
		return none, nil, rpcError(codeInternalError, "forking session %s: recording additionalDirectories: %v", src, err)
	}
	st.attach(a, s)
	if err := a.adopt(st, false); err != nil {
		return none, nil, rpcError(codeInternalError, "%v", err)
	}
	resp := sdk.UnstableForkSessionResponse{SessionId: sdk.SessionId(id), Modes: modeState(s.Mode())}
	if err := convert(a.configOptions(s.Config(), s.Mode()), &resp.ConfigOptions); err != nil {
		a.log.Warn("acp: fork: config options not converted", "err", err)
	}
	return resp, st, nil
}

// forkSource reads the history to copy: a session live in this runtime
// from memory (what is committed), else its log.
func (a *agent) forkSource(id string) (core.SessionHeader, []event.Event, error) {
	if s := a.rt.Get(id); s != nil {
		return s.Header(), s.Events(), nil
	}
	h, evs, err := a.rt.Store().Read(id)
	if err != nil {
		if errors.Is(err, core.ErrNotFound) {
			return h, nil, unknownSession(sdk.SessionId(id))
		}
		return h, nil, rpcError(codeInternalError, "session %s: %v", id, err)
	}
	return h, evs, nil
}

// copyLog writes the forked session's log: a header of its own (not a
// subagent: no parent), the events renumbered from 0, and the images.
func (a *agent) copyLog(src core.SessionHeader, id string, evs []event.Event) error {
	srcDir, dirErr := a.rt.Store().Dir(src.ID)
	h := core.SessionHeader{ID: id, Cwd: src.Cwd, Origin: "acp", Config: src.Config}
	lg, err := a.rt.Store().Create(h)
	if err != nil {
		return err
	}
	out := make([]event.Event, len(evs))
	for i, ev := range evs {
		ev.Seq = int64(i)
		out[i] = ev
	}
	if err := lg.AppendAll(out...); err != nil {
		_ = lg.Close()
		return err
	}
	if dirErr == nil {
		if err := copyDir(filepath.Join(srcDir, "attachments"), filepath.Join(lg.Dir(), "attachments")); err != nil {
			_ = lg.Close()
			return fmt.Errorf("copying images: %w", err)
		}
	}
	return lg.Close()
}

// copyDir copies the regular files of src into dst (a missing src is
// nothing to copy).
func copyDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// convert moves a value between the SDK's stable and unstable twins of a
// type (they share their JSON shape).
func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
