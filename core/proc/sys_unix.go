//go:build unix && !linux

package proc

import (
	"syscall"
)

// BecomeSubreaper is a no-op where the OS has no child subreaper.
func BecomeSubreaper() error { return nil }

// sysProcAttr gives the child a group (or session) of its own; there is no
// parent-death signal outside Linux.
func sysProcAttr(newSession bool, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: newSession, Setpgid: !newSession}
}

func setNamespaces(*syscall.SysProcAttr, uintptr, bool) {}
