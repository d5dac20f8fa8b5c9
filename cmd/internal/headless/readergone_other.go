//go:build !linux

package headless

import "os"

// watchReaderGone watches nothing off Linux: a closed stdout is found at
// the next write.
func watchReaderGone(*os.File, func()) (stop func()) { return func() {} }
