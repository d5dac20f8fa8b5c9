package main

import (
	"syscall"
	"testing"
)

// prGetDumpable is PR_GET_DUMPABLE from <linux/prctl.h>.
const prGetDumpable = 3

// TestHardenMakesProcessNonDumpable: after harden, the process is not
// dumpable, so other processes of the same user (the commands the agent
// runs) cannot read its /proc/<pid>/environ, which holds the API key.
func TestHardenMakesProcessNonDumpable(t *testing.T) {
	harden()
	r, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetDumpable, 0, 0)
	if errno != 0 {
		t.Fatalf("prctl(PR_GET_DUMPABLE): %v", errno)
	}
	if r != 0 {
		t.Fatalf("dumpable = %d after harden, want 0", r)
	}
}
