package headless

import (
	"encoding/json"
	"errors"
	"github.com/dsh-dev/dsh/core/jsonx"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The --json bounds. They are part of the contract a supervisor relies on
// (spec dsh-protocols.md §6), so they are constants, not settings.
const (
	// MaxStringBytes bounds every projected string and object key, in UTF-8
	// bytes of the unescaped value.
	MaxStringBytes = 8 << 10
	// MaxLineBytes bounds one serialized event line, newline included.
	MaxLineBytes = 32 << 10
	// MaxDepth is the container depth at which nesting is cut. The event
	// object itself is at depth 0, so a container with 64 or more enclosing
	// containers is replaced by DepthMarker.
	MaxDepth = 64
	// DepthMarker replaces a container nested too deep.
	DepthMarker = "[truncated: depth]"
)

// The projection builds events as an ordered JSON tree rather than Go maps so
// every line is deterministic (type first, then fields in a fixed order) and
// so parsed tool arguments keep the key order the model wrote. A value is one
// of: nil, bool, string, int64, json.Number, object, []any, or tooDeep.

// member is one key/value pair of an object.
type member struct {
	key string
	val any
}

// object is a JSON object with its keys in insertion order.
type object []member

// tooDeep stands for a container the parser did not materialise because it
// sits at or below MaxDepth: it is always cut, so building it would only
// cost memory (a 1 MB argument of `[[[[…` would otherwise be a million
// nested slices).
type tooDeep struct{}

// errNotFinite reports a number that JSON cannot round-trip as a finite
// float (1e400). The original keeps such arguments as raw text rather than
// projecting a null, and so do we.
var errNotFinite = errors.New("number out of float64 range")

// parseJSON parses exactly one JSON value from s into an ordered tree.
//
// It is iterative (json.Decoder.Token keeps its own stack), so arbitrarily
// deep input cannot overflow the goroutine stack; containers at depth
// ≥ MaxDepth below the root are consumed and validated but kept only as
// tooDeep. Numbers stay json.Number so big integers survive verbatim.
// Duplicate keys keep the first key's position and the last value, as
// JSON.parse does. Trailing data after the value is an error. With
// finiteOnly, a number that overflows float64 is an error (errNotFinite).
func parseJSON(s string, finiteOnly bool) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()

	// frame is one open container. skip>0 means we are inside a tooDeep
	// container and only count delimiters.
	type frame struct {
		obj    object
		arr    []any
		isObj  bool
		key    string
		hasKey bool
		index  map[string]int // built lazily for large objects
	}
	var (
		stack []*frame
		root  any
		done  bool
		skip  int
	)
	put := func(v any) {
		if len(stack) == 0 {
			root, done = v, true
			return
		}
		f := stack[len(stack)-1]
		if !f.isObj {
			f.arr = append(f.arr, v)
			return
		}
		f.obj = setMember(f.obj, &f.index, f.key, v)
		f.hasKey = false
	}
	for !done {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if skip > 0 {
			if d, ok := tok.(json.Delim); ok {
				if d == '[' || d == '{' {
					skip++
				} else {
					skip--
					if skip == 0 {
						put(tooDeep{})
					}
				}
			} else if n, ok := tok.(json.Number); ok && finiteOnly {
				if err := checkFinite(n); err != nil {
					return nil, err
				}
			}
			continue
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '[', '{':
				if len(stack) >= MaxDepth {
					skip = 1
					continue
				}
				stack = append(stack, &frame{isObj: t == '{'})
			default: // ']' or '}': the decoder guarantees they match
				f := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if f.isObj {
					if f.obj == nil {
						f.obj = object{}
					}
					put(f.obj)
				} else {
					if f.arr == nil {
						f.arr = []any{}
					}
					put(f.arr)
				}
			}
		case string:
			if len(stack) > 0 {
				if f := stack[len(stack)-1]; f.isObj && !f.hasKey {
					f.key, f.hasKey = t, true
					continue
				}
			}
			put(t)
		case json.Number:
			if finiteOnly {
				if err := checkFinite(t); err != nil {
					return nil, err
				}
			}
			put(t)
		default: // bool, nil
			put(t)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return root, nil
}

// checkFinite rejects a number that overflows float64. Underflow (1e-400)
// is fine: it is kept verbatim as json.Number and round-trips as text.
func checkFinite(n json.Number) error {
	f, err := strconv.ParseFloat(string(n), 64)
	if math.IsInf(f, 0) {
		return errNotFinite
	}
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return err
	}
	return nil
}

// setMember sets key in o: a repeated key keeps its first position and takes
// the new value (JSON.parse / object assignment semantics). index is built
// once an object grows past a few keys so large objects stay linear.
func setMember(o object, index *map[string]int, key string, v any) object {
	if *index == nil && len(o) >= 8 {
		*index = make(map[string]int, len(o)*2)
		for i, m := range o {
			(*index)[m.key] = i
		}
	}
	if *index != nil {
		if i, ok := (*index)[key]; ok {
			o[i].val = v
			return o
		}
		(*index)[key] = len(o)
		return append(o, member{key, v})
	}
	for i := range o {
		if o[i].key == key {
			o[i].val = v
			return o
		}
	}
	return append(o, member{key, v})
}

// cutString bounds s to MaxStringBytes of valid UTF-8. Invalid bytes are
// first replaced by U+FFFD (the encoder would do so anyway, and measuring
// after replacement keeps the bound honest); the cut then backs up to a rune
// boundary, dropping a split trailing character.
func cutString(s string) (string, bool) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxStringBytes {
		return s, false
	}
	i := MaxStringBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// bound applies the string, key and depth bounds to v, which sits at the
// given depth. It reports whether anything was cut. Recursion is limited to
// MaxDepth levels, so it is stack-safe for any input.
func bound(v any, depth int) (any, bool) {
	switch t := v.(type) {
	case string:
		return cutString(t)
	case tooDeep:
		return DepthMarker, true
	case object:
		if depth >= MaxDepth {
			return DepthMarker, true
		}
		out := make(object, 0, len(t))
		var index map[string]int
		cut, keyCut := false, false
		for _, m := range t {
			k, kc := cutString(m.key)
			val, vc := bound(m.val, depth+1)
			cut = cut || kc || vc
			if kc {
				keyCut = true
			}
			if keyCut {
				// Two keys may now collide; keep JSON semantics (one key,
				// last value) so the line stays unambiguous.
				out = setMember(out, &index, k, val)
			} else {
				out = append(out, member{k, val})
			}
		}
		return out, cut
	case []any:
		if depth >= MaxDepth {
			return DepthMarker, true
		}
		out := make([]any, len(t))
		cut := false
		for i, e := range t {
			var c bool
			out[i], c = bound(e, depth+1)
			cut = cut || c
		}
		return out, cut
	default:
		return v, false
	}
}

// appendJSON serializes v. It never fails: values are built by this package
// only. Recursion depth equals the tree depth, which bound and parseJSON
// keep at most MaxDepth+1.
func appendJSON(dst []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, t)
	case int64:
		return strconv.AppendInt(dst, t, 10)
	case int:
		return strconv.AppendInt(dst, int64(t), 10)
	case json.Number:
		return append(dst, t...)
	case string:
		return appendString(dst, t)
	case tooDeep:
		return appendString(dst, DepthMarker)
	case object:
		dst = append(dst, '{')
		for i, m := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.key)
			dst = append(dst, ':')
			dst = appendJSON(dst, m.val)
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, e)
		}
		return append(dst, ']')
	default:
		// Unreachable for trees built here; fail visibly rather than emit
		// invalid JSON.
		return append(dst, "null"...)
	}
}

// appendString writes s as a JSON string. Unlike encoding/json it does not
// escape <, > and & (the stream is not HTML), matching JSON.stringify; it
// escapes control characters and replaces each invalid UTF-8 byte with
// U+FFFD so the line is always valid UTF-8.
func appendString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s, false) }
