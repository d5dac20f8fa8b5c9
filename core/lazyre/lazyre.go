// Package lazyre compiles a package's regular expressions on first use
// instead of at package init. Every process of the dsh binary runs every
// package's init, and the reaper each bash call starts is that binary
// re-executed: it needs none of the patterns, and compiling them (MCP's
// frame patterns alone hold {0,200} repetitions) was part of every
// command's start.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles pattern once, on its first call,
// and returns the same *regexp.Regexp after; like regexp.MustCompile it
// panics on a bad pattern (the patterns are constants, tested).
func New(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
