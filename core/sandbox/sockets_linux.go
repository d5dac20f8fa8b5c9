package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// With the network off, a network namespace (or Landlock's TCP rules
// without one) closes TCP, but not a unix socket bound to a path on the
// host (a docker.sock, a database's socket): its file is reachable in
// every network namespace and Landlock does not govern connecting to it.
// Nor does Landlock close UDP. So the reaper also installs a seccomp
// filter that refuses socket(2) for AF_UNIX — and, without a network
// namespace, for AF_INET and AF_INET6 — with EACCES. socketpair(2) (how
// node and python talk to their own children) stays allowed: its two ends
// reach nothing outside.

// canFilterSockets reports whether denySockets works on this architecture.
func canFilterSockets() bool { return nativeArch != 0 }

// denySockets installs the filter on the calling thread (the one that
// starts the command, which inherits it). It needs no_new_privs.
func denySockets(inet bool) error {
	if nativeArch == 0 {
		return fmt.Errorf("seccomp: no socket filter for this architecture")
	}
	families := []uint32{unix.AF_UNIX}
	if inet {
		families = append(families, unix.AF_INET, unix.AF_INET6)
	}
	prog := socketFilter(families)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// socketFilter is the BPF program: on the native architecture, socket(2)
// (also through the x32 numbering) with one of families fails with
// EACCES; on the compat architecture (32-bit binaries), socket(2) and
// socketcall(2), whose arguments a filter cannot read, fail whole.
func socketFilter(families []uint32) []unix.SockFilter {
	const (
		ldW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		// Offsets in struct seccomp_data: nr, arch, args[0] (low half).
		offNr, offArch, offArg0 = 0, 4, 16
	)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(k uint32, jt, jf int) unix.SockFilter {
		return unix.SockFilter{Code: jeq, Jt: uint8(jt), Jf: uint8(jf), K: k}
	}
	// Native part: [0] ld arch, [1] jeq native (else foreign), [2] ld nr,
	// [3] jeq socket, [4] jeq x32 socket, [5] ld arg0, families...,
	// allow, deny; then the foreign part.
	n := len(families)
	nativeLen := 6 + n + 2
	var f []unix.SockFilter
	f = append(f, stmt(ldW, offArch))
	f = append(f, jump(nativeArch, 0, nativeLen-2))
	f = append(f, stmt(ldW, offNr))
	f = append(f, jump(sysSocket, 1, 0))
	f = append(f, jump(sysSocket|x32Bit, 0, n+1)) // not socket: to allow
	f = append(f, stmt(ldW, offArg0))
	for i, fam := range families {
		f = append(f, jump(fam, n-i, 0)) // to deny
	}
	f = append(f, stmt(ret, allow), stmt(ret, uint32(deny)))
	// Foreign part.
	m := len(foreignSocket)
	f = append(f, stmt(ldW, offNr))
	for i, nr := range foreignSocket {
		f = append(f, jump(nr, m-i, 0))
	}
	return append(f, stmt(ret, allow), stmt(ret, uint32(deny)))
}
