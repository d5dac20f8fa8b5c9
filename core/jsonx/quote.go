// Package jsonx holds the one JSON string quoter the hand-written encoders
// of the project share (the model request body, the event envelope, the
// headless --json stream). They exist because encoding/json re-validates
// raw data and allocates per value on paths that run for every event.
package jsonx

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. With forHTML it quotes exactly
// as encoding/json does (<, > and & escaped, U+2028 and U+2029 escaped,
// each invalid UTF-8 byte written as \ufffd), so the bytes match a
// json.Marshal-based peer. Without it, it quotes as JavaScript's
// JSON.stringify does (nothing escaped that need not be) and writes each
// invalid byte as a literal U+FFFD. Either way the result is valid JSON and
// valid UTF-8.
func AppendString(dst []byte, s string, forHTML bool) []byte {
	dst = append(dst, '"')
	dst = AppendStringBody(dst, s, forHTML)
	return append(dst, '"')
}

// AppendStringBody is AppendString without the surrounding quotes.
func AppendStringBody(dst []byte, s string, forHTML bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!forHTML || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			if forHTML {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, "\uFFFD"...)
			}
			i++
			start = i
			continue
		}
		if forHTML && (r == '\u2028' || r == '\u2029') {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}
