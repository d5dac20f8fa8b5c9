//go:build linux && !amd64 && !arm64

package sandbox

// No filter for this architecture: denySockets says so.
const (
	nativeArch = 0
	sysSocket  = 0
	x32Bit     = 0
)

var foreignSocket []uint32
