//go:build !linux

package tool

// BecomeSubreaper is a no-op where the OS has no child subreaper.
func BecomeSubreaper() error { return nil }
