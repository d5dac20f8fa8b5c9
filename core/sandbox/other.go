//go:build !linux

package sandbox

import "errors"

func landlockABI() int { return 0 }

func probe() (Level, []string) {
	return None, []string{"the sandbox exists on Linux only"}
}

func needUserNS() bool { return false }

func cloneFlags(bool) uintptr { return 0 }

// Apply cannot contain anything outside Linux.
func Apply(Policy) error { return errors.New("sandbox: not supported on this OS") }
