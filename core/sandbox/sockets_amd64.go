//go:build linux

package sandbox

// The x86-64 numbers: AUDIT_ARCH_X86_64, socket(2), the x32 flag; i386's
// socketcall(2) and socket(2).
const (
	nativeArch = 0xc000003e
	sysSocket  = 41
	x32Bit     = 0x40000000
)

var foreignSocket = []uint32{102, 359}
