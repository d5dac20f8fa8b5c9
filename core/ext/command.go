package ext

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/core/lazyre"
)

// Command is a custom slash command read from a markdown file.
type Command struct {
	// Name is what the user types after "/": the file name, prefixed by
	// its sub-folders joined with ":" (frontend/review.md is
	// "frontend:review").
	Name         string
	Description  string
	ArgumentHint string
	// Model and AllowedTools are the frontmatter's, as written; core
	// resolves them for the turn the command's prompt starts.
	Model        string
	AllowedTools []string
	Body         string
	Path         string
	Scope        Scope
	// ZeroBased: positional arguments count from $0 (Claude Code's
	// numbering since v2.1.19, for files under .claude/); else from $1.
	ZeroBased bool
}

// LoadCommands reads the custom commands of roots. A name found in more
// than one place is the nearest project file's (project over user), and
// the ones it hides are reported.
func LoadCommands(r Roots) ([]Command, []Diagnostic) {
	var out []Command
	var diags []Diagnostic
	byName := map[string]int{}
	for _, pl := range r.places("commands", false) {
		files, ds := walkMarkdown(pl.dir, pl.pol)
		diags = append(diags, ds...)
		for _, f := range files {
			c, err := readCommand(f, pl)
			if err != nil {
				diags = append(diags, Diagnostic{f.path, err.Error()})
				continue
			}
			if i, ok := byName[c.Name]; ok {
				diags = append(diags, Diagnostic{f.path, fmt.Sprintf("/%s is already defined by %s; this file is not used", c.Name, out[i].Path)})
				continue
			}
			byName[c.Name] = len(out)
			out = append(out, c)
		}
	}
	return out, diags
}

var commandName = lazyre.New(`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`)

func readCommand(f mdFile, pl place) (Command, error) {
	data, err := readFile(pl.pol, f.path, MaxFileBytes)
	if err != nil {
		return Command{}, err
	}
	m, body, err := splitFrontmatter(data)
	if err != nil {
		return Command{}, err
	}
	name := strings.ReplaceAll(f.rel, "/", ":")
	if !commandName().MatchString(name) {
		return Command{}, fmt.Errorf("command name %q has characters a slash command cannot carry (use letters, digits, - _ .)", name)
	}
	c := Command{Name: name, Description: m.str("description"), ArgumentHint: m.str("argument-hint"),
		Model: m.str("model"), AllowedTools: m.list("allowed-tools"), Body: body, Path: f.path, Scope: pl.scope,
		ZeroBased: pl.claude}
	if c.Description == "" {
		c.Description = firstLine(body)
	}
	return c, nil
}

// firstLine is the first non-empty line of body, without a leading "#",
// cut to 100 characters.
func firstLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > 100 {
			l = string(r[:99]) + "…"
		}
		return l
	}
	return ""
}

// placeholder matches what Expand fills: $ARGUMENTS, $ARGUMENTS[N], $N
// and an escaped \$ before any of them.
var placeholder = lazyre.New(`\\?\$(ARGUMENTS\[(\d+)\]|ARGUMENTS|(\d+))`)

// Expand fills the body with args, the text typed after the command's
// name. Arguments are text: nothing in them is evaluated, and a
// placeholder inside an argument is not filled again. $ARGUMENTS is the
// whole text; $N and $ARGUMENTS[N] are the shell-style words of it,
// counted from $1 (or from $0 for Claude Code files); a placeholder with
// no such word stays as written; \$1 is a literal $1. A body without any
// placeholder gets the arguments appended as "ARGUMENTS: …".
//
// shell, when not nil, gives the output of each !`cmd` line, which
// replaces the line (placeholders are never filled in those lines, so no
// argument reaches a shell); its error aborts the expansion. With a nil
// shell the lines stay as written.
func (c Command) Expand(args string, shell func(cmd string) (string, error)) (string, error) {
	args = strings.TrimSpace(args)
	words := shellWords(args)
	used := false
	fill := func(m string) string {
		if strings.HasPrefix(m, `\`) {
			return m[1:]
		}
		used = true
		sub := placeholder().FindStringSubmatch(m)
		if sub[1] == "ARGUMENTS" {
			return args
		}
		idx := sub[2]
		zero := true // $ARGUMENTS[N] is 0-based everywhere
		if idx == "" {
			idx, zero = sub[3], c.ZeroBased
		}
		n, err := strconv.Atoi(idx)
		if err != nil {
			return m
		}
		if !zero {
			n--
		}
		if n < 0 || n >= len(words) {
			return m
		}
		return words[n]
	}
	lines := strings.Split(c.Body, "\n")
	for i, l := range lines {
		if m := shellLine().FindStringSubmatch(strings.TrimSpace(l)); m != nil && shell != nil {
			out, err := shell(m[1])
			if err != nil {
				return "", err
			}
			lines[i] = strings.TrimRight(out, "\n")
			continue
		}
		lines[i] = placeholder().ReplaceAllStringFunc(l, fill)
	}
	out := strings.Join(lines, "\n")
	if !used && args != "" {
		out = strings.TrimRight(out, "\n") + "\n\nARGUMENTS: " + args
	}
	return out, nil
}

// shellWords splits s as a shell would split words: spaces separate,
// single and double quotes group, a backslash escapes the next character.
// Nothing is expanded.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	inWord, quote, esc := false, rune(0), false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// ShellLines returns the `!`-lines of a body: a line that starts with
// !`command` (the command between the backticks). They run only in a
// trusted project (see core).
func ShellLines(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if m := shellLine().FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

var shellLine = lazyre.New("^!`([^`]+)`")
