//go:build unix

package headless

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A named pipe is refused without being opened: opening it would wait for
// a writer that never comes.
func TestLoadImagesRefusesPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.png")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadImages([]string{fifo})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "not a regular file (a named pipe)") {
		t.Fatalf("got %v, want a usage error saying it is a named pipe", err)
	}
}
