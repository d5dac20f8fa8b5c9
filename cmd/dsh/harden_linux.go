package main

import "syscall"

// prSetDumpable is PR_SET_DUMPABLE from <linux/prctl.h>.
const prSetDumpable = 4

// harden makes the process non-dumpable: /proc/<pid>/environ (which holds
// the API key) and /proc/<pid>/mem become unreadable to other processes of
// the same user — the bash commands the agent runs included. Credentials
// are scrubbed from their environment, but `cat /proc/$PPID/environ` would
// otherwise read ours. ssh-agent does the same. It has no effect for root.
func harden() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
}
