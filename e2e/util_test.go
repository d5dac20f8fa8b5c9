package e2e

import (
	"bytes"
	"encoding/hex"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// syncBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newSessionID is a fresh `session-<uuid hex>`, as SDK clients make them.
func newSessionID() string {
	u := uuid.New()
	return "session-" + hex.EncodeToString(u[:])
}

// fifoReader makes a FIFO at path and reads it in the background; wait
// returns what the first writer wrote once it closes its end. A tool the
// model runs writes to it when it starts (`echo $$ > fifo`), so a test
// waits on the tool itself instead of polling for a file.
type fifoReader struct {
	path string
	got  chan []byte
}

func newFIFO(t *testing.T, path string) *fifoReader {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fifoReader{path: path, got: make(chan []byte, 1)}
	go func() {
		b, _ := os.ReadFile(path) // blocks until a writer opens and closes
		f.got <- b
	}()
	return f
}

// wait returns what was written, failing the test after timeout (then it
// opens the FIFO itself, so the reading goroutine ends).
func (f *fifoReader) wait(t *testing.T, timeout time.Duration, what string) []byte {
	t.Helper()
	select {
	case b := <-f.got:
		return b
	case <-time.After(timeout):
		if w, err := os.OpenFile(f.path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-f.got
		t.Fatalf("%s: nothing written to %s within %v", what, f.path, timeout)
		return nil
	}
}
