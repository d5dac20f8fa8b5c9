package sdkrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// compact serves session/compact (ours): compact a live or stored session
// now and answer once its checkpoint is committed.
func (s *Server) compact(ctx context.Context, raw json.RawMessage) (any, error) {
	s.mu.Lock()
	initialized, opts := s.initialized, s.sessCfg
	s.mu.Unlock()
	if !initialized {
		return nil, protocol.ErrNotInitialized
	}
	p, err := protocol.ParseSessionCompactParams(raw)
	if err != nil {
		return nil, err
	}
	sess := s.rt.Get(p.SessionID)
	if sess == nil {
		if sess, err = s.rt.Resume(ctx, p.SessionID, opts); err != nil {
			if errors.Is(err, core.ErrNotFound) {
				return nil, fmt.Errorf("unknown session: %s", p.SessionID)
			}
			return nil, err
		}
	}
	cp, err := sess.Compact(ctx, p.Focus)
	switch {
	case errors.Is(err, context.Canceled):
		return nil, errors.New("session/compact was cancelled; the history is unchanged")
	case err != nil:
		return nil, err
	}
	return protocol.SessionCompactResult{TokensBefore: cp.TokensBefore, TokensAfter: cp.TokensAfter,
		ReplacedMessages: cp.ReplacedMessages}, nil
}

// rewind serves session/rewind (ours): rewind a live or stored session
// and answer with what was restored once the rewind is committed.
func (s *Server) rewind(ctx context.Context, raw json.RawMessage) (any, error) {
	s.mu.Lock()
	initialized, opts := s.initialized, s.sessCfg
	s.mu.Unlock()
	if !initialized {
		return nil, protocol.ErrNotInitialized
	}
	p, err := protocol.ParseSessionRewindParams(raw)
	if err != nil {
		return nil, err
	}
	sess := s.rt.Get(p.SessionID)
	if sess == nil {
		if sess, err = s.rt.Resume(ctx, p.SessionID, opts); err != nil {
			if errors.Is(err, core.ErrNotFound) {
				return nil, fmt.Errorf("unknown session: %s", p.SessionID)
			}
			return nil, err
		}
	}
	res, err := sess.Rewind(ctx, core.RewindRequest{Turn: p.Turn, Scope: p.Scope, Undo: p.Undo, Force: p.Force})
	if err != nil {
		return nil, err
	}
	return protocol.SessionRewindResult{Rewind: res.Rewind, Seq: res.Seq}, nil
}
