//go:build !linux

package headless

import "os"

func isTerminal(f *os.File) bool { return isCharDevice(f) }
