//go:build linux

package sandbox

// The arm64 numbers: AUDIT_ARCH_AARCH64, socket(2); arm's socket(2).
const (
	nativeArch = 0xc00000b7
	sysSocket  = 198
	x32Bit     = 0
)

var foreignSocket = []uint32{281}
