package core

import (
	"context"
	"path/filepath"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/snapshot"
)

// CheckpointConfig bounds the workspace snapshots of sessions (the
// config file's checkpoints keys). The zero value takes snapshots with the
// snapshot package's default bounds.
type CheckpointConfig struct {
	Off           bool
	MaxFileBytes  int64
	MaxStoreBytes int64
	MaxFiles      int
}

// snapshotDir is the folder of a session's snapshot store, inside the
// session's own folder so removing the session removes it.
const snapshotDir = "snapshots"

// snapshots returns the session's snapshot store, or nil when snapshots
// are off or the session works for another (a delegated session shares
// its parent's workspace, whose turns are checkpointed already).
func (s *Session) snapshots() *snapshot.Store {
	s.snapOnce.Do(func() {
		c := s.rt.cfg.Checkpoints
		if c.Off || s.header.Delegated() {
			return
		}
		var exclude []string
		if root, err := filepath.Abs(s.rt.cfg.Store.Root()); err == nil {
			exclude = append(exclude, root)
		}
		s.snaps = snapshot.Open(filepath.Join(s.lg.Dir(), snapshotDir), snapshot.Options{
			MaxFileBytes: c.MaxFileBytes, MaxStoreBytes: c.MaxStoreBytes, MaxFiles: c.MaxFiles, Exclude: exclude})
	})
	return s.snaps
}

// roots are the folders a snapshot covers: the workspace and the
// additional roots.
func (s *Session) roots() []string {
	return append([]string{s.header.Cwd}, s.AdditionalDirs()...)
}

// fileCheckpoint records a snapshot of the workspace roots at a turn's
// start or end. A snapshot that cannot be taken (disk full, too many
// files) is recorded with its error and logged; the turn goes on.
func (s *Session) fileCheckpoint(ctx context.Context, turn int, phase string) {
	st := s.snapshots()
	if st == nil {
		return
	}
	t0 := time.Now()
	res, err := st.Take(context.WithoutCancel(ctx), s.roots())
	fc := event.FileCheckpoint{Turn: turn, Phase: phase, Millis: time.Since(t0).Milliseconds()}
	if err != nil {
		fc.Error = err.Error()
		s.rt.log.Warn("workspace checkpoint not taken; this turn cannot be rewound with its files", "session", s.id, "turn", turn, "err", err)
	} else {
		fc.Roots, fc.Skipped, fc.SkippedCount = res.Roots, res.Skipped, res.SkippedCount
	}
	if _, err := s.emit(event.TypeFileCheckpoint, fc); err != nil {
		s.rt.log.Warn("workspace checkpoint not recorded", "session", s.id, "turn", turn, "err", err)
	}
}
