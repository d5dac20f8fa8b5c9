package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// DefaultMaxFrameBytes caps one incoming frame: a prompt may carry base64
// images, but not without end.
const DefaultMaxFrameBytes = 64 << 20

var bom = []byte("\xef\xbb\xbf")

// frame is one line of input: its bytes (BOM, CR and surrounding space
// cut), or for a line over the limit its size and what a streaming walk of
// its top level found.
type frame struct {
	line []byte
	size int
	over *skimmed
}

// frameReader reads newline-delimited frames from r.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	if max <= 0 {
		max = DefaultMaxFrameBytes
	}
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next frame. At the end of input it returns the last
// frame (without a newline) with a nil error if it has content, then io.EOF.
// The returned line is valid until the next call.
func (fr *frameReader) next() (frame, error) {
	fr.buf = fr.buf[:0]
	for {
		chunk, err := fr.r.ReadSlice('\n')
		if len(fr.buf)+len(chunk) > fr.max+2 { // +2: room for "\r\n"
			return fr.skimRest(append(fr.buf, chunk...), err)
		}
		fr.buf = append(fr.buf, chunk...)
		switch {
		case err == nil:
			return fr.cut(), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(fr.buf)) > 0:
			return fr.cut(), nil
		default:
			return frame{}, err
		}
	}
}

func (fr *frameReader) cut() frame {
	line := bytes.TrimSpace(fr.buf)
	line = bytes.TrimSpace(bytes.TrimPrefix(line, bom))
	if cap(fr.buf) > 4<<20 {
		// Do not pin a large buffer after one large frame.
		line = bytes.Clone(line)
		fr.buf = nil
	}
	if len(line) > fr.max {
		return frame{size: len(line), over: skim(line)}
	}
	return frame{line: line, size: len(line)}
}

// skimRest walks an oversized frame: head is what was read so far, the rest
// is read from the input up to the newline and never kept.
func (fr *frameReader) skimRest(head []byte, readErr error) (frame, error) {
	fr.buf = fr.buf[:0]
	if cap(fr.buf) > 4<<20 {
		fr.buf = nil
	}
	src := &lineSource{head: bytes.TrimPrefix(head, bom), r: fr.r, done: readErr != nil && !errors.Is(readErr, bufio.ErrBufferFull)}
	if len(head) > 0 && head[len(head)-1] == '\n' {
		src.done = true
	}
	sk := skimReader(src)
	src.drain()
	n := src.n
	for n > 0 && (src.last == '\n' || src.last == '\r') {
		n-- // the terminator is not part of the frame's size
		src.last = 0
	}
	f := frame{size: n, over: sk}
	if src.err != nil && !errors.Is(src.err, io.EOF) {
		return f, src.err
	}
	return f, nil
}

// lineSource yields the bytes of one line: head, then the input up to and
// including the newline.
type lineSource struct {
	head []byte
	r    *bufio.Reader
	done bool // the line's end has been read
	n    int
	last byte
	err  error
}

func (s *lineSource) ReadByte() (byte, error) {
	if len(s.head) > 0 {
		c := s.head[0]
		s.head = s.head[1:]
		s.n++
		s.last = c
		if c == '\n' {
			s.head = nil
			s.done = true
			return 0, io.EOF
		}
		return c, nil
	}
	if s.done {
		return 0, io.EOF
	}
	c, err := s.r.ReadByte()
	if err != nil {
		s.err, s.done = err, true
		return 0, io.EOF
	}
	s.n++
	s.last = c
	if c == '\n' {
		s.done = true
		return 0, io.EOF
	}
	return c, nil
}

// drain consumes what is left of the line.
func (s *lineSource) drain() {
	for {
		if _, err := s.ReadByte(); err != nil {
			return
		}
	}
}

// skimmed is what a streaming walk of an oversized frame found at its top
// level: the raw id and method (each bounded), and whether it is a response.
type skimmed struct {
	id       json.RawMessage
	method   string
	response bool
	object   bool
}

// maxSkimValue bounds the id, method and jsonrpc values kept by the skim.
const maxSkimValue = 1 << 10

func skim(line []byte) *skimmed {
	return skimReader(&lineSource{head: line, done: true})
}

// skimReader walks one JSON object from src without keeping it: the keys of
// the top level are read, the values of id and method are kept when small,
// every other value is skipped byte by byte (strings, escapes and nesting
// tracked). It stops at the first thing that is not JSON.
func skimReader(src io.ByteReader) *skimmed {
	s := &skimmed{}
	w := walker{src: src}
	if c, ok := w.nonSpace(); !ok || c != '{' {
		return s
	}
	s.object = true
	for {
		c, ok := w.nonSpace()
		if !ok || c != '"' {
			return s
		}
		key, ok := w.str(maxSkimValue)
		if !ok {
			return s
		}
		if c, ok := w.nonSpace(); !ok || c != ':' {
			return s
		}
		keep := key == "id" || key == "method"
		val, end, ok := w.value(keep)
		if !ok {
			return s
		}
		switch key {
		case "id":
			if val != nil && validID(val) {
				s.id = val
			}
		case "method":
			if m, ok := stringValue(val); ok {
				s.method = m
			}
		case "result", "error":
			s.response = true
		}
		if end == 0 {
			end, ok = w.nonSpace()
			if !ok {
				return s
			}
		}
		if end != ',' {
			return s
		}
	}
}

type walker struct {
	src io.ByteReader
}

func (w *walker) nonSpace() (byte, bool) {
	for {
		c, err := w.src.ReadByte()
		if err != nil {
			return 0, false
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, true
	}
}

// str reads the rest of a string whose opening quote was read and returns
// it decoded when it fits in max bytes.
func (w *walker) str(max int) (string, bool) {
	raw := []byte{'"'}
	esc := false
	for {
		c, err := w.src.ReadByte()
		if err != nil {
			return "", false
		}
		if len(raw) <= max {
			raw = append(raw, c)
		}
		switch {
		case esc:
			esc = false
		case c == '\\':
			esc = true
		case c == '"':
			s, _ := stringValue(raw)
			return s, true
		}
	}
}

// value reads one value. With keep, a value of up to maxSkimValue bytes is
// returned raw. end is the byte that ended a number or literal (a ',' or
// '}' already consumed), or 0.
func (w *walker) value(keep bool) (raw []byte, end byte, ok bool) {
	c, ok := w.nonSpace()
	if !ok {
		return nil, 0, false
	}
	var buf []byte
	add := func(b byte) {
		if keep && len(buf) <= maxSkimValue {
			buf = append(buf, b)
		}
	}
	add(c)
	result := func() []byte {
		if keep && len(buf) <= maxSkimValue {
			return buf
		}
		return nil
	}
	switch c {
	case '"':
		esc := false
		for {
			b, err := w.src.ReadByte()
			if err != nil {
				return nil, 0, false
			}
			add(b)
			switch {
			case esc:
				esc = false
			case b == '\\':
				esc = true
			case b == '"':
				return result(), 0, true
			}
		}
	case '{', '[':
		depth, inStr, esc := 1, false, false
		for depth > 0 {
			b, err := w.src.ReadByte()
			if err != nil {
				return nil, 0, false
			}
			add(b)
			switch {
			case inStr && esc:
				esc = false
			case inStr && b == '\\':
				esc = true
			case inStr && b == '"':
				inStr = false
			case inStr:
			case b == '"':
				inStr = true
			case b == '{' || b == '[':
				depth++
			case b == '}' || b == ']':
				depth--
			}
		}
		return result(), 0, true
	}
	// A number or a literal: up to the next delimiter.
	for {
		b, err := w.src.ReadByte()
		if err != nil {
			return result(), 0, true
		}
		switch b {
		case ',', '}':
			return result(), b, true
		case ' ', '\t', '\r', '\n':
			return result(), 0, true
		}
		add(b)
	}
}
