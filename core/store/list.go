package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/dsh-dev/dsh/core/event"
)

// warn reports a skipped session on stderr through slog, never stdout.
func warn(msg string, args ...any) { slog.Warn(msg, args...) }

// scanChunk is the read size of the backward scans of List.
const scanChunk = 1 << 20

// listedTypes are the event types a listing reports the last record of:
// the title, and the additional workspace roots. Their quoted names are
// searched as bytes without decoding other lines: inside a JSON string a
// quote is escaped (\"), so these exact bytes occur only where a string
// token equals the type name, usually the type of such a record, and
// every hit is confirmed by decoding its line.
var listedTypes = []string{event.TypeSessionTitle, event.TypeSessionDirs}

// summarize builds the Info of one session directory cheaply: the header
// line, the last complete record (seq and time) and a backward byte scan
// for the last session/title and session/directories records.
func summarize(dir string) (Info, error) {
	path := filepath.Join(dir, logFile)
	f, err := os.Open(path)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, err
	}
	size := fi.Size()
	line, complete, err := firstLine(f)
	if err != nil {
		return Info{}, err
	}
	if !complete {
		return Info{}, errors.New("incomplete header line")
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return Info{}, err
	}
	if h.Type != "session" || h.ID == "" {
		return Info{}, errors.New("not a session header")
	}
	info := Info{Header: h, Dir: dir, UpdatedAt: fi.ModTime().UnixMilli()}
	from := int64(len(line)) + 1 // first byte after the header line

	sc := &tailScanner{f: f, from: from, size: size}
	if seq, t, ok := sc.lastRecord(); ok {
		info.Events = int(seq) + 1
		info.UpdatedAt = t
	}
	last := sc.lastOfTypes(listedTypes)
	if raw, ok := last[event.TypeSessionTitle]; ok {
		var d event.SessionTitle
		if json.Unmarshal(raw, &d) == nil {
			info.Title = d.Title
		}
	}
	if raw, ok := last[event.TypeSessionDirs]; ok {
		var d event.SessionDirs
		if json.Unmarshal(raw, &d) == nil {
			info.AdditionalDirs = d.AdditionalDirectories
		}
	}
	return info, nil
}

// tailScanner reads a log backwards from its end down to from.
type tailScanner struct {
	f          *os.File
	from, size int64
}

// lineAt returns the complete line (without '\n') containing byte pos, or
// false if that line has no '\n' (a torn tail) or starts before from.
func (t *tailScanner) lineAt(pos int64) ([]byte, bool) {
	// Find the end: the first '\n' at or after pos.
	end := int64(-1)
	buf := make([]byte, 16<<10)
	for off := pos; off < t.size && end < 0; off += int64(len(buf)) {
		n, err := t.f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			end = off + int64(i)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false
		}
	}
	if end < 0 {
		return nil, false
	}
	// Find the start: just after the last '\n' before pos, or from.
	start := t.from
	for hi := pos; hi > t.from; {
		lo := max(t.from, hi-int64(len(buf)))
		n, err := t.f.ReadAt(buf[:hi-lo], lo)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			start = lo + int64(i) + 1
			break
		}
		hi = lo
	}
	if start < t.from {
		return nil, false
	}
	out := make([]byte, end-start)
	if _, err := t.f.ReadAt(out, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	return out, true
}

// lastRecord returns seq and time of the last complete record that
// decodes, looking at no more than a few lines from the end. A torn tail
// (bytes after the last '\n') is skipped.
func (t *tailScanner) lastRecord() (seq, ms int64, ok bool) {
	pos := t.size - 1
	for tries := 0; tries < 4; tries++ {
		end, found := t.lastNewlineAtOrBefore(pos)
		if !found {
			return 0, 0, false
		}
		line, ok := t.lineAt(end)
		if !ok {
			return 0, 0, false
		}
		var rec struct {
			Seq  int64 `json:"seq"`
			Time int64 `json:"time"`
		}
		if json.Unmarshal(line, &rec) == nil {
			return rec.Seq, rec.Time, true
		}
		pos = end - int64(len(line)) - 1 // the '\n' ending the line before
	}
	return 0, 0, false
}

// lastNewlineAtOrBefore finds the last '\n' at or before pos (>= from).
func (t *tailScanner) lastNewlineAtOrBefore(pos int64) (int64, bool) {
	buf := make([]byte, 16<<10)
	for hi := pos + 1; hi > t.from; {
		lo := max(t.from, hi-int64(len(buf)))
		n, err := t.f.ReadAt(buf[:hi-lo], lo)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return lo + int64(i), true
		}
		hi = lo
	}
	return 0, false
}

// lastOfTypes returns the data of the last record of each of types
// (those it finds), in one backward pass over the log that stops once
// every type is found.
func (t *tailScanner) lastOfTypes(types []string) map[string]json.RawMessage {
	found := map[string]json.RawMessage{}
	patterns := make([][]byte, len(types))
	overlap := 0
	for i, typ := range types {
		patterns[i] = []byte(`"` + typ + `"`)
		overlap = max(overlap, len(patterns[i])-1)
	}
	buf := make([]byte, min(scanChunk, max(t.size-t.from, 0))+int64(overlap))
	for hi := t.size; hi > t.from && len(found) < len(types); {
		lo := max(t.from, hi-scanChunk)
		n := hi - lo + min(int64(overlap), t.size-hi)
		got, err := t.f.ReadAt(buf[:n], lo)
		if err != nil && !errors.Is(err, io.EOF) {
			return found
		}
		for i, typ := range types {
			if _, ok := found[typ]; !ok {
				if raw, ok := t.lastIn(buf[:got], lo, patterns[i], typ); ok {
					found[typ] = raw
				}
			}
		}
		hi = lo
	}
	return found
}

// lastIn returns the data of the last record of type typ whose type token
// (pattern) starts in chunk, which begins at offset lo of the file.
// Forward search is SIMD-fast and hits are rare, so it collects them and
// tries them from the last.
func (t *tailScanner) lastIn(chunk []byte, lo int64, pattern []byte, typ string) (json.RawMessage, bool) {
	var hits []int64
	for i := 0; ; {
		j := bytes.Index(chunk[i:], pattern)
		if j < 0 {
			break
		}
		hits = append(hits, lo+int64(i+j))
		i += j + 1
	}
	for k := len(hits) - 1; k >= 0; k-- {
		line, ok := t.lineAt(hits[k])
		if !ok {
			continue
		}
		var rec struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Type == typ {
			return rec.Data, true
		}
	}
	return nil, false
}
