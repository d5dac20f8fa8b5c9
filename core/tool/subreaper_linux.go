package tool

import (
	"fmt"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// BecomeSubreaper makes this process the reaper of its orphaned
// descendants (prctl PR_SET_CHILD_SUBREAPER). Call it once at startup of a
// long-lived runtime: a command's background children killed on cancel are
// then reaped by LocalExec at once, instead of lingering as zombies until
// PID 1 (which in containers may never) gets to them.
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}
