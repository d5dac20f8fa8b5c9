package e2e

import (
	"bytes"
	"encoding/hex"
	"sync"

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
