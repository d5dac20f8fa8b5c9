package store

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxComponent bounds every folder name the store makes. Linux and macOS
// refuse names over 255 bytes; the original caps project folders at 251, and
// we use the same bound for both kinds so the arithmetic stays simple.
const maxComponent = 251

// noCwdProject is the project folder of sessions without a cwd.
const noCwdProject = "_no-cwd"

// hashMark separates a truncated name from the digest of the full input.
// An untruncated escape never contains "~~" (every '~' it writes is followed
// by a hex digit or '_'), so truncated names cannot collide with untruncated
// ones, and the 128-bit digest keeps truncated names apart.
const hashMark = "~~"

// digestLen is the number of hex characters of sha256 kept after hashMark.
const digestLen = 32

// escapeProject returns the project folder name for a cwd (spec
// dsh-protocols.md §7): "_no-cwd" for an empty cwd, else "--<slug>--" where
// '/', '\\' and ':' become one '-' (runs collapsed), [A-Za-z0-9._-] stay
// literal and every other UTF-16 unit becomes ~XXXX. The mapping is lossy by
// design ("/a-b" and "/a/b" share a folder), which is harmless: sessions are
// found by scanning for their id and the header cwd is always checked.
func escapeProject(cwd string) string {
	if cwd == "" {
		return noCwdProject
	}
	cwd = filepath.Clean(cwd)
	var b strings.Builder
	sep := false
	escapeUnits(cwd, func(c byte) bool {
		if c == '/' || c == '\\' || c == ':' {
			sep = true
			return true
		}
		return false
	}, func(s string) {
		if sep {
			if b.Len() > 0 { // a leading '-' of the slug is stripped
				b.WriteByte('-')
			}
			sep = false
		}
		b.WriteString(s)
	})
	// A trailing separator run (only possible for a root like "C:\") still
	// collapses to one '-', as in the original.
	if sep && b.Len() > 0 {
		b.WriteByte('-')
	}
	slug := strings.TrimLeft(b.String(), "-")
	if slug == "" {
		slug = "root"
	}
	const frame = len("--") + len("--")
	if len(slug)+frame > maxComponent {
		slug = truncate(slug, maxComponent-frame, cwd)
	}
	return "--" + slug + "--"
}

// escapeID returns the folder name of a session id: the character escape of
// escapeProject without the separator rule, so it is injective: '~' is
// itself escaped, "." and ".." become ~002E and ~002E~002E, each byte of
// invalid UTF-8 becomes ~_XX, and a name too long for the file system is cut
// and suffixed with a digest of the whole id. The result is never empty
// for a non-empty id and never contains a path separator or NUL.
func escapeID(id string) string {
	switch id {
	case ".":
		return "~002E"
	case "..":
		return "~002E~002E"
	}
	var b strings.Builder
	b.Grow(len(id))
	escapeUnits(id, nil, func(s string) { b.WriteString(s) })
	out := b.String()
	if len(out) > maxComponent {
		out = truncate(out, maxComponent, id)
	}
	return out
}

// escapeUnits walks s and emits its escaped form piece by piece. special, if
// non-nil, may claim an ASCII byte (returning true) so the caller handles it.
func escapeUnits(s string, special func(byte) bool, emit func(string)) {
	const hexdig = "0123456789ABCDEF"
	unit := func(u uint16) {
		emit(string([]byte{'~', hexdig[u>>12&0xF], hexdig[u>>8&0xF], hexdig[u>>4&0xF], hexdig[u&0xF]}))
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if special != nil && special(c) {
				continue
			}
			if isLiteral(c) {
				emit(s[i-1 : i])
			} else {
				unit(uint16(c))
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Invalid UTF-8: one distinct escape per byte, which no valid
			// UTF-16 unit escape can produce ('_' is not a hex digit).
			emit(string([]byte{'~', '_', hexdig[c>>4], hexdig[c&0xF]}))
			i++
			continue
		}
		i += size
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			unit(uint16(r1))
			unit(uint16(r2))
		} else {
			unit(uint16(r))
		}
	}
}

func isLiteral(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// truncate cuts an escaped name to fit n bytes including a digest of the
// original input. It cuts only between escapes, never inside "~XXXX".
func truncate(escaped string, n int, original string) string {
	keep := n - len(hashMark) - digestLen
	cut := 0
	for i := 0; i < len(escaped); {
		w := 1
		if escaped[i] == '~' {
			w = 5 // ~XXXX
			if i+1 < len(escaped) && escaped[i+1] == '_' {
				w = 4 // ~_XX
			}
		}
		if i+w > keep {
			break
		}
		i += w
		cut = i
	}
	sum := sha256.Sum256([]byte(original))
	return escaped[:cut] + hashMark + hex.EncodeToString(sum[:])[:digestLen]
}
