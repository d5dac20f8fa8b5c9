//go:build unix

package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// signalGroup sends sig to process group pgid; a group already gone is
// not an error.
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

// ReapGroup waits for every child of ours in process group pgid: members
// orphaned into our care (we are a subreaper) keep their group, so after a
// SIGKILL of the group this collects their zombies and the group truly
// disappears. It blocks until the group has no child of ours left, so call
// it only after killing the group and after the group's leader was reaped
// by its own waiter (wait4 here could otherwise take the leader's status).
// Waiting on -pgid never touches other children.
func ReapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-pgid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: none of ours left in the group
			return
		}
	}
}
