//go:build unix

package subagent

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the child in a process group of its own, so the
// close ladder can signal the agent and every tool it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the child's process group. The group outlives its
// leader only while members remain, so its id cannot have been reused.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
