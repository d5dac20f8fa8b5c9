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
	l := &shellLexer{s: s}
	for i := 0; i < len(s); i++ {
		i = l.step(i)
	}
	l.endPart()
	return l.sp
}

// shellLexer is splitCommand's state: the line, what it found so far, and
// the simple command and word being read.
type shellLexer struct {
	s      string
	sp     shellParts
	words  []string
	cur    strings.Builder
	inWord bool
}

func (l *shellLexer) flushWord() {
	if l.inWord {
		l.words = append(l.words, l.cur.String())
		l.cur.Reset()
		l.inWord = false
	}
}

func (l *shellLexer) endPart() {
	l.flushWord()
	if len(l.words) > 0 {
		l.sp.parts = append(l.sp.parts, l.words)
		l.words = nil
	}
}

// inner lists the commands of a substitution or subshell whose text is
// text and whose closing byte is at end (len(s) when it has none).
func (l *shellLexer) inner(text string, end int) {
	l.sp.opaque = true
	in := splitCommand(text)
	l.sp.parts = append(l.sp.parts, in.parts...)
	l.sp.broken = l.sp.broken || in.broken || end >= len(l.s)
}

// substitution reads the command substitution starting at s[i] (a
// backtick or "$(") into the current word and returns the index of its
// closing byte.
func (l *shellLexer) substitution(i int) int {
	s := l.s
	var k, body int
	if s[i] == '`' {
		k, body = closingBacktick(s, i), i+1
	} else {
		k, body = closingParen(s, i+1), i+2
	}
	l.inner(between(s, body, k), k)
	l.cur.WriteString(s[i:min(k+1, len(s))])
	return k
}

// step lexes the construct that starts at s[i] and returns the index of
// its last byte.
func (l *shellLexer) step(i int) int {
	s := l.s
	c := s[i]
	switch {
	case c == '\'':
		end := strings.IndexByte(s[i+1:], '\'')
		if end < 0 {
			end = len(s) - i - 1
			l.sp.broken = true
		}
		l.cur.WriteString(s[i+1 : i+1+end])
		l.inWord = true
		return i + end + 1
	case c == '"':
		return l.doubleQuoted(i)
	case c == '\\':
		if i+1 < len(s) {
			i++
			if s[i] != '\n' { // a line continuation joins lines
				l.cur.WriteByte(s[i])
				l.inWord = true
			}
		}
		return i
	case c == '`' || c == '$' && i+1 < len(s) && s[i+1] == '(':
		l.inWord = true
		return l.substitution(i)
	case (c == '<' || c == '>') && i+1 < len(s) && s[i+1] == '(':
		k := closingParen(s, i+1)
		l.inner(between(s, i+2, k), k)
		return k
	case c == '<' || c == '>':
		// A redirection: a pending all-digit word is its fd.
		if l.inWord && isDigits(l.cur.String()) {
			l.cur.Reset()
			l.inWord = false
		}
		l.flushWord()
		return redirection(s, i, &l.sp)
	case c == ';' || c == '&' || c == '|' || c == '\n':
		return l.separator(i)
	case c == '(' || c == ')',
		(c == '{' || c == '}') && !l.inWord && (i+1 == len(s) || isSpace(s[i+1]) || s[i+1] == ';'):
		l.sp.opaque = true
		l.endPart()
	case c == '#' && !l.inWord:
		for i < len(s) && s[i] != '\n' {
			i++
		}
		return i - 1
	case isSpace(c):
		l.flushWord()
	default:
		l.cur.WriteByte(c)
		l.inWord = true
	}
	return i
}

// doubleQuoted reads the double-quoted string starting at s[i] into the
// current word (substitutions inside it are listed) and returns the index
// of its closing quote.
func (l *shellLexer) doubleQuoted(i int) int {
	s := l.s
	l.inWord = true
	j := i + 1
	for ; j < len(s) && s[j] != '"'; j++ {
		switch {
		case s[j] == '\\' && j+1 < len(s) && strings.IndexByte("\"\\$`\n", s[j+1]) >= 0:
			j++
			l.cur.WriteByte(s[j])
		case s[j] == '`' || s[j] == '$' && j+1 < len(s) && s[j+1] == '(':
			j = l.substitution(j)
		default:
			l.cur.WriteByte(s[j])
		}
	}
	if j >= len(s) {
		l.sp.broken = true
	}
	return j
}

// separator ends the simple command at the control operator at s[i] (or
// reads the redirection of "&>") and returns the index of its last byte.
func (l *shellLexer) separator(i int) int {
	s := l.s
	c := s[i]
	if c == '&' && i+1 < len(s) && s[i+1] == '>' { // &> file
		l.flushWord()
		return redirection(s, i+1, &l.sp)
	}
	l.endPart()
	if i+1 < len(s) && (s[i+1] == c || (c == '|' && s[i+1] == '&')) {
		i++
	}
	return i
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
