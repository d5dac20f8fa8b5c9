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
	if err := s.mustBeInitialized(); err != nil {
		return nil, err
	}
	p, err := protocol.ParseSessionCompactParams(raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.liveOrStored(ctx, p.SessionID)
	if err != nil {
		return nil, err
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
	if err := s.mustBeInitialized(); err != nil {
		return nil, err
	}
	p, err := protocol.ParseSessionRewindParams(raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.liveOrStored(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	res, err := sess.Rewind(ctx, core.RewindRequest{Turn: p.Turn, Scope: p.Scope, Undo: p.Undo, Force: p.Force})
	if err != nil {
		return nil, err
	}
	return protocol.SessionRewindResult{Rewind: res.Rewind, Seq: res.Seq}, nil
}

func (s *Server) mustBeInitialized() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return protocol.ErrNotInitialized
	}
	return nil
}

// liveOrStored is the session id names: the live one, else the stored one
// resumed with the server's session settings.
func (s *Server) liveOrStored(ctx context.Context, id string) (*core.Session, error) {
	if sess := s.rt.Get(id); sess != nil {
		return sess, nil
	}
	s.mu.Lock()
	opts := s.sessCfg
	s.mu.Unlock()
	sess, err := s.rt.Resume(ctx, id, opts)
	if errors.Is(err, core.ErrNotFound) {
		return nil, fmt.Errorf("unknown session: %s", id)
	}
	return sess, err
}
