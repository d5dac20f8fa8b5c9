//go:build !linux

package mcp

import "syscall"

// sysProcAttr puts a stdio server in its own process group (so its whole
// tree is stopped with it).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killGroup(pid int, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
