package tool

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// headTail keeps the first and last bytes written to it and counts the rest,
// so a command printing gigabytes costs a fixed amount of memory while the
// model still sees how it started and how it ended. Safe for concurrent use.
type headTail struct {
	mu    sync.Mutex
	head  []byte // up to headMax bytes
	tail  []byte // ring of tailMax bytes
	start int    // ring start when full
	full  bool
	total int64
	lines int64 // newlines seen
	last  byte  // the last byte seen
	hmax  int
	tmax  int
}

func newHeadTail(limit int) *headTail {
	if limit < 2 {
		limit = 2
	}
	h := limit / 2
	return &headTail{hmax: h, tmax: limit - h, head: make([]byte, 0, min(h, 64<<10))}
}

func (w *headTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.total += int64(n)
	if n > 0 {
		w.lines += int64(bytes.Count(p, []byte{'\n'}))
		w.last = p[n-1]
	}
	if room := w.hmax - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if w.tail == nil {
		w.tail = make([]byte, 0, w.tmax)
	}
	if len(p) >= w.tmax {
		w.tail = append(w.tail[:0], p[len(p)-w.tmax:]...)
		w.start, w.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !w.full {
			k := min(w.tmax-len(w.tail), len(p))
			w.tail = append(w.tail, p[:k]...)
			p = p[k:]
			if len(w.tail) == w.tmax {
				w.full, w.start = true, 0
			}
			continue
		}
		k := copy(w.tail[w.start:], p)
		p = p[k:]
		w.start = (w.start + k) % w.tmax
	}
	return n, nil
}

// truncated reports whether bytes were dropped.
func (w *headTail) truncated() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total > int64(w.hmax+w.tmax)
}

// String returns the kept output with the cut said in the middle, cut on
// UTF-8 boundaries so no half character reaches the model.
func (w *headTail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var tail []byte
	if w.full {
		tail = make([]byte, 0, w.tmax)
		tail = append(tail, w.tail[w.start:]...)
		tail = append(tail, w.tail[:w.start]...)
	} else {
		tail = w.tail
	}
	kept := int64(len(w.head) + len(tail))
	if w.total <= kept {
		return string(w.head) + string(tail)
	}
	head := trimRuneEnd(w.head)
	tail = trimRuneStart(tail)
	// Cut on line boundaries when the kept ends hold any, so the marker
	// can say which lines of the whole output are missing.
	hi := bytes.LastIndexByte(head, '\n')
	ti := bytes.IndexByte(tail, '\n')
	lineInfo := ""
	if hi >= 0 && ti >= 0 && ti < len(tail)-1 {
		head, tail = head[:hi+1], tail[ti+1:]
		totalLines := w.lines
		if w.last != '\n' {
			totalLines++
		}
		tailLines := int64(bytes.Count(tail, []byte{'\n'}))
		if tail[len(tail)-1] != '\n' {
			tailLines++
		}
		first := int64(bytes.Count(head, []byte{'\n'})) + 1
		if lastCut := totalLines - tailLines; lastCut > first {
			lineInfo = fmt.Sprintf(": lines %d-%d of %d", first, lastCut, totalLines)
		} else {
			lineInfo = fmt.Sprintf(": line %d of %d", first, totalLines)
		}
	}
	cut := w.total - int64(len(head)) - int64(len(tail))
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 60)
	b.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %d bytes cut%s ...]\n", cut, lineInfo)
	b.Write(tail)
	return b.String()
}

// trimRuneEnd drops a partial UTF-8 sequence at the end of b.
func trimRuneEnd(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// trimRuneStart drops continuation bytes at the start of b.
func trimRuneStart(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// cutLine shortens s to at most max characters (runes) and says so.
func cutLine(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + fmt.Sprintf(" [... line cut: %d more characters]", utf8.RuneCountInString(s[i:])), true
		}
		n++
	}
	return s, false
}
