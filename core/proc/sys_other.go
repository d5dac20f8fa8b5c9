//go:build !unix

package proc

import (
	"os"
	"syscall"
)

// BecomeSubreaper is a no-op where the OS has no child subreaper.
func BecomeSubreaper() error { return nil }

func sysProcAttr(bool, syscall.Signal) *syscall.SysProcAttr { return nil }

// signalGroup can only kill the child itself where there are no process
// groups.
func signalGroup(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}

// ReapGroup is a no-op without process groups.
func ReapGroup(int) {}

func setNamespaces(*syscall.SysProcAttr, uintptr, bool) {}
