//go:build !linux

package sandbox

import (
	"errors"

	"github.com/dsh-dev/dsh/core/proc"
)

func landlockABI() int { return 0 }

func probe(Config) probed {
	return probed{why: []string{"the sandbox exists on Linux only"}}
}

func cloneFlags(bool, bool) uintptr { return 0 }

func enter(Policy, []string) (proc.ReaperStart, error) {
	return proc.ReaperStart{}, errors.New("sandbox: not supported on this OS")
}

// Apply cannot contain anything outside Linux.
func Apply(Policy) error { return errors.New("sandbox: not supported on this OS") }

func canFilterSockets() bool { return false }
