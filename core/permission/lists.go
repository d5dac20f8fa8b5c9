package permission

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/tool"
)

// Lists are the user's standing allow and deny lists (--allowed-tools,
// --disallowed-tools, the config's allowedTools and disallowedTools): rules
// in the shape of the remembered ones, given for the process rather than
// answered. A disallowed call is refused in every mode, full included; an
// allowed one runs without asking in every mode (a remembered deny still
// refuses it), and bash still runs in the sandbox of the mode.
type Lists struct {
	Allow []Rule
	Deny  []Rule
}

// Withholds reports whether the deny list names tool name whole (an entry
// without a pattern): such a tool is refused in every call, so it is not
// offered to the model at all. A pattern entry (bash(rm *)) refuses only
// the calls it matches, at call time.
func (l Lists) Withholds(name string) bool {
	return slices.ContainsFunc(l.Deny, func(r Rule) bool { return r.Tool == name && r.Pattern == "*" })
}

// Empty reports whether neither list has an entry.
func (l Lists) Empty() bool { return len(l.Allow) == 0 && len(l.Deny) == 0 }

// ParseToolList parses one allow or deny list: entries separated by commas
// or white space, each a tool name (every call of the tool) or
// TOOL(PATTERN) with the pattern of a remembered rule: a command prefix in
// words for bash ("bash(git log)"), a path glob for file tools
// ("edit(src/**)"). Claude Code's spellings are taken too: Bash, Read,
// WebFetch… name dsh's bash, read, web_fetch, and a trailing ":*" or " *"
// of a command pattern is the prefix it already is. MCP tools are
// mcp__server__tool. A pattern may hold spaces and commas: separators
// count only outside parentheses.
func ParseToolList(list string, allow bool) ([]Rule, error) {
	var out []Rule
	for _, e := range splitList(list) {
		r, err := parseEntry(e)
		if err != nil {
			return nil, err
		}
		r.Allow = allow
		out = appendUnique(out, r)
	}
	return out, nil
}

// splitList splits at commas and white space outside parentheses.
func splitList(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for _, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n'):
			flush()
			continue
		}
		cur.WriteRune(c)
	}
	flush()
	return out
}

func parseEntry(e string) (Rule, error) {
	name, pattern := e, "*"
	if i := strings.IndexByte(e, '('); i >= 0 {
		if !strings.HasSuffix(e, ")") {
			return Rule{}, fmt.Errorf("tool list entry %q: a pattern is written TOOL(PATTERN), with the closing parenthesis last", e)
		}
		name, pattern = e[:i], strings.TrimSpace(e[i+1:len(e)-1])
		if p, ok := strings.CutSuffix(pattern, ":*"); ok {
			pattern = strings.TrimSpace(p)
		} else if p, ok := strings.CutSuffix(pattern, " *"); ok {
			pattern = strings.TrimSpace(p)
		}
		if pattern == "" {
			return Rule{}, fmt.Errorf("tool list entry %q: the pattern is empty (write the tool alone for all of its calls)", e)
		}
	}
	name = strings.TrimSpace(name)
	if !isToolName(name) {
		return Rule{}, fmt.Errorf("tool list entry %q: %q is not a tool name (letters, digits, _ and -)", e, name)
	}
	return Rule{Tool: canonical(name), Pattern: pattern}, nil
}

func isToolName(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	for _, c := range n {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Warnings returns a warning for each entry whose tool is none of names
// (the tools on offer). MCP entries of a server still starting cannot be
// checked yet: pending says which servers those are.
func (l Lists) Warnings(names []string, pending func(server string) bool) []string {
	var warns []string
	check := func(rs []Rule, list string) {
		for _, r := range rs {
			if slices.Contains(names, r.Tool) {
				continue
			}
			if srv, ok := mcpServerOf(r.Tool); ok && pending != nil && pending(srv) {
				continue
			}
			warns = append(warns, fmt.Sprintf("%s entry %q matches no tool (tools: %s)", list, r.Tool, strings.Join(shortList(names, 30), ", ")))
		}
	}
	check(l.Allow, "allowed-tools")
	check(l.Deny, "disallowed-tools")
	return warns
}

// canonical is dsh's name of a built-in written another way (Bash,
// WebFetch, multiEdit), else name as written.
func canonical(name string) string {
	if strings.HasPrefix(name, "mcp__") {
		return name
	}
	for _, t := range tool.Builtins() {
		if foldName(t.Name()) == foldName(name) {
			return t.Name()
		}
	}
	return name
}

// foldName folds case and underscores, so Bash, WebFetch and multiEdit
// meet bash, web_fetch and multi_edit.
func foldName(n string) string { return strings.ReplaceAll(strings.ToLower(n), "_", "") }

// mcpServerOf is the server part of mcp__server__tool.
func mcpServerOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", false
	}
	srv, _, ok := strings.Cut(rest, "__")
	return srv, ok && srv != ""
}

func shortList(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}

// match is the rule of the list that decides req (a deny in Deny wins),
// with where it came from for the decision's words.
func (l Lists) match(req Request) (Rule, bool) {
	if r, ok := (&Rules{rules: l.Deny}).Match(req); ok {
		return r, true
	}
	return (&Rules{rules: l.Allow}).Match(req)
}

// suspect is Rules.Suspect for the deny list.
func (l Lists) suspect(req Request) (Rule, bool) {
	return (&Rules{rules: l.Deny}).Suspect(req)
}
