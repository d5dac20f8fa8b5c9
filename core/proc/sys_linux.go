package proc

import (
	"fmt"
	"os"
	"syscall"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// BecomeSubreaper makes this process the reaper of its orphaned
// descendants (prctl PR_SET_CHILD_SUBREAPER): a process that detaches from
// a child we own (double fork, setsid) is reparented to us rather than to
// PID 1, so it stays inside our tree, where we can find, kill and reap it.
// The dsh binary calls it at startup; the reaper calls it for its command.
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}

// sysProcAttr is the spawn rule: a group (or session) of its own, and a
// parent-death signal. The kernel sends the signal when the thread that
// forked the child exits; Go threads end only when a goroutine locked to
// one returns, which nothing in dsh that spawns does.
func sysProcAttr(newSession bool, deathSig syscall.Signal) *syscall.SysProcAttr {
	if deathSig == 0 {
		deathSig = syscall.SIGKILL
	}
	return &syscall.SysProcAttr{Setsid: newSession, Setpgid: !newSession, Pdeathsig: deathSig}
}

// setNamespaces asks for new namespaces; with mapUser, a user namespace
// where our uid and gid are themselves (so files keep their owners).
func setNamespaces(a *syscall.SysProcAttr, flags uintptr, mapUser bool) {
	if flags == 0 {
		return
	}
	a.Cloneflags = flags
	if mapUser {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}
