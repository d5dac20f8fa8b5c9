//go:build !linux

package main

// harden is a no-op where PR_SET_DUMPABLE does not exist.
func harden() {}
