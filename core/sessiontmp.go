package core

import (
	"os"
	"path/filepath"
)

// tmpDir is the session's private temp folder, which sandboxed commands
// and jobs share as /tmp; the reaper makes it on first use.
func (s *Session) tmpDir() string { return filepath.Join(s.lg.Dir(), "tmp") }

// removeTmp removes the session's temp folder once its commands and jobs
// are gone, so nothing a command left there outlives the session.
func (s *Session) removeTmp() {
	if err := os.RemoveAll(s.tmpDir()); err != nil {
		s.rt.log.Warn("session /tmp not removed", "session", s.id, "dir", s.tmpDir(), "err", err)
	}
}
