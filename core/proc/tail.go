package proc

import (
	"bytes"
	"sync"
)

// Tail defaults.
const (
	// DefaultTailLines is how many stderr lines a Process keeps.
	DefaultTailLines = 400
	// DefaultTailLineBytes caps one kept line, so a runaway line cannot
	// hold unbounded memory.
	DefaultTailLineBytes = 8 << 10
)

// Tail is an io.Writer that keeps the last lines written to it, each
// capped, for error reports. Its memory is bounded by lines × line bytes
// whatever is written. Safe for concurrent use.
type Tail struct {
	mu       sync.Mutex
	maxLines int
	maxBytes int
	lines    []string // ring of maxLines
	next     int
	full     bool
	partial  []byte
	cut      bool // partial was truncated
}

// NewTail keeps the last maxLines lines of at most maxLineBytes each
// (values ≤ 0 take the defaults).
func NewTail(maxLines, maxLineBytes int) *Tail {
	if maxLines <= 0 {
		maxLines = DefaultTailLines
	}
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultTailLineBytes
	}
	return &Tail{maxLines: maxLines, maxBytes: maxLineBytes, lines: make([]string, maxLines)}
}

// Write never fails and never blocks on anything but the mutex.
func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if room := t.maxBytes - len(t.partial); len(chunk) > room {
			chunk = chunk[:max(room, 0)]
			t.cut = true
		}
		t.partial = append(t.partial, chunk...)
		if i < 0 {
			break
		}
		t.push()
		b = b[i+1:]
	}
	return n, nil
}

func (t *Tail) push() {
	line := string(bytes.TrimSuffix(t.partial, []byte{'\r'}))
	if t.cut {
		line += " …[line truncated]"
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % t.maxLines
	if t.next == 0 {
		t.full = true
	}
	t.partial, t.cut = t.partial[:0], false
}

// Lines returns the kept lines, oldest first, including an unfinished
// last line.
func (t *Tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	if t.full {
		out = append(out, t.lines[t.next:]...)
	}
	out = append(out, t.lines[:t.next]...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
		if len(out) > t.maxLines {
			out = out[1:]
		}
	}
	return out
}
