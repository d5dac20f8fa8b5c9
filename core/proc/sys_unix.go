//go:build unix && !linux

package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// BecomeSubreaper is a no-op where the OS has no child subreaper.
func BecomeSubreaper() error { return nil }

// sysProcAttr gives the child a group (or session) of its own; there is no
// parent-death signal outside Linux.
func sysProcAttr(newSession bool, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: newSession, Setpgid: !newSession}
}

func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return fmt.Errorf("signal group %d: not a process group", pgid)
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// ReapGroup waits for every child of ours in process group pgid.
func ReapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-pgid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
	}
}

func setNamespaces(*syscall.SysProcAttr, uintptr, bool) {}
