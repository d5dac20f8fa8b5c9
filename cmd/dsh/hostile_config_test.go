package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestConfigFileMustBeARegularBoundedFile: DSH_CONFIG naming a FIFO (which
// hung dsh), /dev/zero (read until out of memory), a directory or an
// over-large file fails at once with an error that names the file.
func TestConfigFileMustBeARegularBoundedFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte("{"+strings.Repeat(" ", maxConfigBytes)+"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "not a regular file (a FIFO)",
		"/dev/zero": "not a regular file (a device)",
		dir:         "not a regular file (a directory)",
		big:         "too large",
	} {
		code, _, stderr := runConfig(t, nil, map[string]string{"DSH_CONFIG": path})
		if code != 2 || !strings.Contains(stderr, path) || !strings.Contains(stderr, want) {
			t.Errorf("DSH_CONFIG=%s: exit %d, stderr %q; want exit 2 and %q", path, code, stderr, want)
		}
	}
}
