//go:build !unix

package subagent

import (
	"os/exec"
	"syscall"
)

func setProcessGroup(*exec.Cmd) {}

// signalGroup can only kill the child itself where there are no process
// groups.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil && sig == syscall.SIGKILL {
		_ = cmd.Process.Kill()
	}
}
