package ndjson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// ObjectMembers calls fn for each top-level member of the JSON object obj,
// in order, with the member's key and the raw bytes of its value, until fn
// returns false. It does not validate: obj must already be known to be a
// valid JSON object (Stream validates every line before using this), and it
// then costs one light pass instead of encoding/json's two full ones — it
// is on the path of every notification.
//
// Keys are compared byte for byte after unescaping, so unlike encoding/json
// struct decoding "ID" does not match "id" (JSON-RPC member names are case
// sensitive). A repeated key is reported each time; callers that keep the
// last one match encoding/json.
func ObjectMembers(obj []byte, fn func(key string, value []byte) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return // '}' or malformed
		}
		kEnd := skipString(obj, i)
		key := unquote(obj[i:kEnd])
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		vEnd := skipValue(obj, i)
		if !fn(key, obj[i:vEnd]) {
			return
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

// StringValue returns the string a raw JSON value holds, and false when it
// is not a string.
func StringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	// Escapes, or invalid UTF-8 that encoding/json turns into U+FFFD.
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func unquote(raw []byte) string {
	s, _ := StringValue(raw)
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
// It jumps from quote to quote (bytes.IndexByte is vectorised) and treats a
// quote as closing when an even number of backslashes precede it.
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
