package ext

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/dsh-dev/dsh/core/lazyre"
)

// meta is a file's frontmatter: keys to YAML values.
type meta map[string]any

// splitFrontmatter separates a markdown file's YAML frontmatter (between a
// first line "---" and the next "---") from its body. A file without one
// has empty meta. Frontmatter that is not valid YAML is read as the
// simple "key: value" lines most hand-written files are (Claude Code's
// generated agent files put unquoted colons in one-line descriptions); a
// file neither reading accepts is an error.
func splitFrontmatter(data []byte) (meta, string, error) {
	if !utf8.Valid(data) {
		return nil, "", errors.New("not UTF-8 text")
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	first, rest, ok := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return meta{}, text, nil
	}
	if !ok {
		return nil, "", errors.New("frontmatter is not closed by a line \"---\"")
	}
	var head, body string
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		head, body = "", strings.TrimPrefix(strings.TrimPrefix(rest, "---"), "\n")
	} else {
		i := strings.Index(rest, "\n---\n")
		switch {
		case i >= 0:
			head, body = rest[:i], rest[i+5:]
		case strings.HasSuffix(rest, "\n---"):
			head, body = strings.TrimSuffix(rest, "\n---"), ""
		default:
			return nil, "", errors.New("frontmatter is not closed by a line \"---\"")
		}
	}
	m := meta{}
	if err := yaml.Unmarshal([]byte(head), &m); err == nil {
		return m, body, nil
	} else if lm, lerr := lineMeta(head); lerr == nil {
		return lm, body, nil
	} else {
		return nil, "", fmt.Errorf("frontmatter is not valid YAML (%s)", yamlWords(err))
	}
}

var keyLine = lazyre.New(`^([A-Za-z][A-Za-z0-9_-]*):(?:\s+(.*))?$`)

// lineMeta reads "key: value" lines, indented lines continuing the value
// before them.
func lineMeta(head string) (meta, error) {
	m := meta{}
	last := ""
	for _, line := range strings.Split(head, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last == "" {
				return nil, errors.New("indented line before any key")
			}
			m[last] = strings.TrimSpace(fmt.Sprint(m[last]) + " " + strings.TrimSpace(line))
			continue
		}
		sub := keyLine().FindStringSubmatch(line)
		if sub == nil {
			return nil, fmt.Errorf("line %q is not key: value", line)
		}
		last = sub[1]
		m[last] = unquote(strings.TrimSpace(sub[2]))
	}
	return m, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// yamlWords is a YAML error without the library's prefix.
func yamlWords(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// str returns a string value ("" when absent); numbers and booleans are
// written as text.
func (m meta) str(key string) string {
	switch v := m[key].(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(v)
	case []any:
		return strings.Join(m.list(key), ", ")
	default:
		return fmt.Sprint(v)
	}
}

// list returns a list value: a YAML sequence, or a string split on commas
// (and on spaces when sep is " " too — skills' allowed-tools). Parentheses
// group: "Bash(git add:*), Read" is two items.
func (m meta) list(key string, extraSeps ...rune) []string {
	switch v := m[key].(type) {
	case nil:
		return nil
	case []any:
		var out []string
		for _, x := range v {
			if s := strings.TrimSpace(fmt.Sprint(x)); s != "" {
				out = append(out, s)
			}
		}
		return out
	default:
		return splitList(fmt.Sprint(v), extraSeps...)
	}
}

// splitList splits on commas (and extraSeps) outside parentheses.
func splitList(s string, extraSeps ...rune) []string {
	var out []string
	var cur bytes.Buffer
	depth := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || containsRune(extraSeps, r)):
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

func containsRune(rs []rune, r rune) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
