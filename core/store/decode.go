package store

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

// decodeEvent decodes one log line into ev with the result json.Unmarshal
// would give. Replay is dominated by decoding, and encoding/json scans every
// byte twice through a state machine (validate, then decode, then skip
// again for each RawMessage); decodeFast makes one tight validating pass.
// It handles the canonical envelope only and bails out on anything unusual
// (escaped keys or type, non-integer numbers, null payloads, keys that
// differ only in case from a field), leaving those lines to json.Unmarshal.
// FuzzDecodeEvent checks the two agree.
func decodeEvent(line []byte, ev *event.Event) error {
	if decodeFast(line, ev) {
		return nil
	}
	*ev = event.Event{}
	return json.Unmarshal(line, ev)
}

// maxDepth is encoding/json's nesting limit; deeper input is left to it.
const maxDepth = 10000

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// envelopeKeys are the JSON names of event.Event's fields. encoding/json
// matches keys case-insensitively, so a key equal to one of these under
// case folding but not exactly is left to it.
var envelopeKeys = []string{"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"}

func decodeFast(b []byte, ev *event.Event) bool {
	*ev = event.Event{}
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	for {
		// Key: a plain string without escapes.
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ks := i + 1
		ke := ks
		for ke < len(b) && b[ke] != '"' {
			if b[ke] == '\\' || b[ke] < 0x20 || b[ke] >= 0x80 {
				return false
			}
			ke++
		}
		if ke >= len(b) {
			return false
		}
		key := b[ks:ke]
		i = skipWS(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		vs := i
		end, ok := skipValue(b, i, 0)
		if !ok {
			return false
		}
		val := b[vs:end]
		switch string(key) { // no allocation: the compiler special-cases this
		case "type":
			s, ok := plainString(val)
			if !ok {
				return false
			}
			ev.Type = s
		case "seq":
			n, ok := plainInt(val)
			if !ok {
				return false
			}
			ev.Seq = n
		case "time":
			n, ok := plainInt(val)
			if !ok {
				return false
			}
			ev.Time = n
		case "data":
			if val[0] == 'n' { // null: leave to encoding/json
				return false
			}
			ev.Data = append(json.RawMessage(nil), val...)
		case "surfaceOp":
			if val[0] == 'n' {
				return false
			}
			ev.SurfaceOp = append(json.RawMessage(nil), val...)
		case "sourceEventSeqs":
			if err := json.Unmarshal(val, &ev.SourceEventSeqs); err != nil {
				return false
			}
		case "ignorable":
			switch string(val) {
			case "true":
				ev.Ignorable = true
			case "false":
				ev.Ignorable = false
			default:
				return false
			}
		default:
			for _, k := range envelopeKeys {
				if strings.EqualFold(k, string(key)) {
					return false
				}
			}
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return skipWS(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// plainString returns the contents of a JSON string token that needs no
// unescaping or UTF-8 repair.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	for _, c := range body {
		if c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	return string(body), true
}

// plainInt parses a JSON integer token (no fraction or exponent) that fits
// an int64.
func plainInt(v []byte) (int64, bool) {
	neg := false
	if len(v) > 0 && v[0] == '-' {
		neg = true
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 18 { // 18 digits always fit; longer ones go the slow way
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// skipValue validates the JSON value starting at b[i] (no leading space)
// and returns the index just after it. It accepts exactly what
// encoding/json's scanner accepts (which does not check UTF-8).
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		if depth >= maxDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = skipString(b, i); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = skipValue(b, skipWS(b, i+1), depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == '[':
		if depth >= maxDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// plainByte marks the bytes a string body may hold without a closer look:
// anything but '"', '\\' and control characters.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipString validates the string token at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	i++
	for i < len(b) {
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
	return i, false
}

// skipNumber validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func skipNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i, i > s
	}
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	if b[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(b) && b[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// chunkPrefix starts every assistant/chunk line this store writes: the
// envelope's type comes first, then its seq (event.Event.AppendJSON).
var chunkPrefix = []byte(`{"type":"assistant/chunk","seq":`)

// liveChunk reports whether line (without its '\n') is an assistant/chunk
// record in the shape this store writes — type, seq, time and an object as
// data, nothing else — and returns its seq. The line is validated as
// decodeFast would validate it, so what it accepts decodeEvent accepts
// too, but nothing is decoded or copied: a wake skips the live stream at
// the cost of one scan. Any other shape returns false and is left to
// decodeEvent.
func liveChunk(line []byte) (int64, bool) {
	if !bytes.HasPrefix(line, chunkPrefix) {
		return 0, false
	}
	i := len(chunkPrefix)
	if i >= len(line) {
		return 0, false
	}
	end, ok := skipNumber(line, i)
	if !ok {
		return 0, false
	}
	seq, ok := plainInt(line[i:end])
	if !ok {
		return 0, false
	}
	const timeKey, dataKey = `,"time":`, `,"data":{`
	if !bytes.HasPrefix(line[end:], []byte(timeKey)) {
		return 0, false
	}
	i = end + len(timeKey)
	if i >= len(line) {
		return 0, false
	}
	if end, ok = skipNumber(line, i); !ok {
		return 0, false
	}
	if _, ok := plainInt(line[i:end]); !ok {
		return 0, false
	}
	if !bytes.HasPrefix(line[end:], []byte(dataKey)) {
		return 0, false
	}
	i = end + len(dataKey) - 1
	if end, ok = skipValue(line, i, 0); !ok || end != len(line)-1 || line[end] != '}' {
		return 0, false
	}
	return seq, true
}
