package permission

import "strings"

// shellParts is a command line split the way a prefix rule needs: the
// simple commands it runs (joined by ;, &&, ||, |, & or newlines), each as
// unquoted words without redirections. Opaque means some of what runs
// cannot be judged by a prefix: a command or process substitution, a
// subshell or group, or output redirected to a file. The commands inside
// substitutions are still listed, so deny rules see them.
//
// Broken means the line does not parse (an unclosed quote, substitution or
// backtick): the shell would refuse or read it otherwise than we did.
type shellParts struct {
	parts  [][]string
	opaque bool
	broken bool
}

// splitCommand lexes s with enough of the shell's quoting rules to find
// its simple commands. It never executes or expands anything.
func splitCommand(s string) shellParts {
	var sp shellParts
	var words []string
	var cur strings.Builder
	inWord := false
	flushWord := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	endPart := func() {
		flushWord()
		if len(words) > 0 {
			sp.parts = append(sp.parts, words)
			words = nil
		}
	}
	inner := func(text string, end int) {
		sp.opaque = true
		in := splitCommand(text)
		sp.parts = append(sp.parts, in.parts...)
		sp.broken = sp.broken || in.broken || end >= len(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				end = len(s) - i - 1
				sp.broken = true
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			inWord = true
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				switch {
				case s[j] == '\\' && j+1 < len(s) && strings.IndexByte("\"\\$`\n", s[j+1]) >= 0:
					j++
					cur.WriteByte(s[j])
				case s[j] == '`':
					k := closingBacktick(s, j)
					inner(between(s, j+1, k), k)
					cur.WriteString(s[j:min(k+1, len(s))])
					j = k
				case s[j] == '$' && j+1 < len(s) && s[j+1] == '(':
					k := closingParen(s, j+1)
					inner(between(s, j+2, k), k)
					cur.WriteString(s[j:min(k+1, len(s))])
					j = k
				default:
					cur.WriteByte(s[j])
				}
			}
			if j >= len(s) {
				sp.broken = true
			}
			i = j
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' { // a line continuation joins lines
					cur.WriteByte(s[i])
					inWord = true
				}
			}
		case c == '`':
			k := closingBacktick(s, i)
			inner(between(s, i+1, k), k)
			cur.WriteString(s[i:min(k+1, len(s))])
			inWord = true
			i = k
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			k := closingParen(s, i+1)
			inner(between(s, i+2, k), k)
			cur.WriteString(s[i:min(k+1, len(s))])
			inWord = true
			i = k
		case (c == '<' || c == '>') && i+1 < len(s) && s[i+1] == '(':
			k := closingParen(s, i+1)
			inner(between(s, i+2, k), k)
			i = k
		case c == '<' || c == '>':
			// A redirection: a pending all-digit word is its fd.
			if inWord && isDigits(cur.String()) {
				cur.Reset()
				inWord = false
			}
			flushWord()
			i = redirection(s, i, &sp)
		case c == ';' || c == '&' || c == '|' || c == '\n':
			if c == '&' && i+1 < len(s) && s[i+1] == '>' { // &> file
				flushWord()
				i = redirection(s, i+1, &sp)
				continue
			}
			endPart()
			if i+1 < len(s) && (s[i+1] == c || (c == '|' && s[i+1] == '&')) {
				i++
			}
		case c == '(' || c == ')':
			sp.opaque = true
			endPart()
		case (c == '{' || c == '}') && !inWord && (i+1 == len(s) || isSpace(s[i+1]) || s[i+1] == ';'):
			sp.opaque = true
			endPart()
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			i--
		case isSpace(c):
			flushWord()
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	endPart()
	return sp
}

// redirection consumes a redirection starting at s[i] ('<' or '>') and
// its target, returning the index of the last byte consumed. Output to a
// file makes the command opaque: a prefix rule for `git log` must not
// allow `git log > ~/.bashrc`. /dev/null and fd duplications are harmless.
func redirection(s string, i int, sp *shellParts) int {
	out := s[i] == '>'
	i++
	for i < len(s) && (s[i] == '>' || s[i] == '<' || s[i] == '|') {
		i++
	}
	if i < len(s) && s[i] == '&' { // >&2, <&0
		i++
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '-') {
			i++
		}
		return i - 1
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	start := i
	for i < len(s) && !isSpace(s[i]) && strings.IndexByte(";&|<>()\n", s[i]) < 0 {
		i++
	}
	target := strings.Trim(s[start:i], `"'`)
	if out && target != "/dev/null" {
		sp.opaque = true
	}
	if strings.ContainsAny(target, "$`") {
		sp.opaque = true
	}
	return i - 1
}

// closingParen returns the index of the ')' matching the '(' at s[open],
// or len(s) when unbalanced.
func closingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			if end := strings.IndexByte(s[i+1:], '\''); end >= 0 {
				i += end + 1
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

func closingBacktick(s string, open int) int {
	for i := open + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '`':
			return i
		}
	}
	return len(s)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isAssignment reports whether a word is a VAR=value prefix assignment.
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := w[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// between is s[a:b], empty when the range is inverted (unbalanced input).
func between(s string, a, b int) string {
	if a >= b || a >= len(s) {
		return ""
	}
	return s[a:min(b, len(s))]
}
