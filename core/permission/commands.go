package permission

import (
	"path"
	"strings"
)

// maxNesting bounds how deep command lines inside command lines (bash -c,
// eval, env -S, find -exec) are followed; deeper is not analysed.
const maxNesting = 8

// analysis is what a command line may run, as deny rules need it: every
// simple command, at every level of wrapping and nesting, with its first
// word reduced to a base name (/bin/rm → rm). Unsure means the line runs
// something the analysis cannot see: a command name made by an expansion
// ($X, $(…), a glob), a shell reading a script or its stdin, source, an
// unbalanced quote, or nesting past maxNesting.
type analysis struct {
	cmds   [][]string
	unsure bool
}

// analyse splits line into the commands it may run. It is for deny rules
// only: it errs towards finding commands (a wrapper is listed as well as
// what it wraps), never towards missing one. Allow rules do not use it —
// `sudo git status` must not pass as `git status`.
func analyse(line string) analysis {
	var a analysis
	a.line(line, 0)
	return a
}

func (a *analysis) line(s string, depth int) {
	if depth > maxNesting {
		a.unsure = true
		return
	}
	sp := splitCommand(s)
	if sp.broken {
		a.unsure = true
	}
	for _, part := range sp.parts {
		a.command(part, depth)
	}
}

// command records one simple command and, when its first word is a
// wrapper (sudo, env, xargs, …) or a shell given a command string, what
// it runs.
func (a *analysis) command(words []string, depth int) {
	for {
		words = stripAssignments(words)
		if len(words) == 0 {
			return
		}
		if strings.ContainsAny(words[0], "$`*?[{") {
			a.unsure = true // the name is only known once the shell expands it
		}
		name := path.Base(words[0])
		a.cmds = append(a.cmds, append([]string{name}, words[1:]...))
		rest := words[1:]
		switch name {
		case "command", "builtin", "nohup", "setsid", "busybox", "time":
			words = skipOptions(rest, "", "")
		case "exec":
			words = skipOptions(rest, "a", "")
		case "nice":
			words = skipOptions(rest, "n", "adjustment")
		case "doas":
			words = skipOptions(rest, "uC", "")
		case "sudo":
			words = skipOptions(rest, "ugCDhprtTU", "user group close-from chdir host prompt role type command-timeout other-user")
		case "stdbuf":
			words = skipOptions(rest, "ioe", "input output error")
		case "timeout":
			words = skipOptions(rest, "sk", "signal kill-after")
			if len(words) > 0 {
				words = words[1:] // the duration
			}
		case "xargs":
			words = skipOptions(rest, "adEILnPs", "arg-file delimiter max-lines max-args max-procs max-chars process-slot-var")
		case "env":
			words = a.env(rest, depth)
		case "eval":
			a.line(strings.Join(rest, " "), depth+1)
			return
		case "source", ".":
			a.unsure = true
			return
		case "find":
			a.findExec(rest, depth)
			return
		case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh":
			a.shell(rest, depth)
			return
		default:
			return
		}
	}
}

// skipOptions drops a wrapper's options from words and returns the
// wrapped command. withArg lists the short options that take a value
// (in the next word unless attached), longWithArg the long ones (unless
// given as --name=value). `--` ends the options.
func skipOptions(words []string, withArg, longWithArg string) []string {
	long := strings.Fields(longWithArg)
	for len(words) > 0 {
		w := words[0]
		switch {
		case w == "--":
			return words[1:]
		case strings.HasPrefix(w, "--"):
			name := strings.TrimPrefix(w, "--")
			words = words[1:]
			if !strings.Contains(name, "=") && contains(long, name) && len(words) > 0 {
				words = words[1:]
			}
		case len(w) > 1 && w[0] == '-':
			words = words[1:]
			// -n 5 takes the next word; -n5 and -rn5 do not.
			if last := w[len(w)-1]; strings.IndexByte(withArg, last) >= 0 && len(words) > 0 && !isDigits(w[1:]) {
				words = words[1:]
			}
		default:
			return words
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// env skips env's options and assignments; -S/--split-string's value is
// a command line of its own.
func (a *analysis) env(words []string, depth int) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case w == "--":
			return words[1:]
		case w == "-S" || w == "--split-string":
			if len(words) > 1 {
				a.line(strings.Join(words[1:], " "), depth+1)
			}
			return nil
		case strings.HasPrefix(w, "--split-string="):
			a.line(strings.TrimPrefix(w, "--split-string=")+" "+strings.Join(words[1:], " "), depth+1)
			return nil
		case strings.HasPrefix(w, "-S"):
			a.line(w[2:]+" "+strings.Join(words[1:], " "), depth+1)
			return nil
		case w == "-u" || w == "-C" || w == "--unset" || w == "--chdir":
			words = words[min(2, len(words)):]
		case w == "-" || strings.HasPrefix(w, "-"):
			words = words[1:]
		case isAssignment(w):
			words = words[1:]
		default:
			return words
		}
	}
	return nil
}

// shell handles sh/bash/…: with -c its command string is a line of its
// own; without, it runs a script or its stdin, which cannot be seen.
func (a *analysis) shell(words []string, depth int) {
	withC := false
	for len(words) > 0 {
		w := words[0]
		if w == "--" || w == "-" {
			words = words[1:]
			break
		}
		if len(w) < 2 || (w[0] != '-' && w[0] != '+') {
			break
		}
		words = words[1:]
		if strings.HasPrefix(w, "--") {
			continue // --norc, --login, …
		}
		if strings.ContainsRune(w[1:], 'c') {
			withC = true
		}
		if strings.ContainsAny(w[1:], "oO") && len(words) > 0 {
			words = words[1:] // -o pipefail, -O extglob
		}
	}
	if !withC || len(words) == 0 {
		a.unsure = true
		return
	}
	a.line(words[0], depth+1)
}

// findExec follows find's -exec, -execdir, -ok and -okdir: the words up to
// `;` or `+` are a command.
func (a *analysis) findExec(words []string, depth int) {
	for i := 0; i < len(words); i++ {
		switch words[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(words) && words[j] != ";" && words[j] != "+" {
				j++
			}
			if depth < maxNesting {
				a.command(words[i+1:j], depth+1)
			} else {
				a.unsure = true
			}
			i = j
		}
	}
}

// denies reports whether deny pattern p holds for some command of a: its
// words begin the command's, its first word compared by base name (a rule
// for /usr/bin/rm and one for rm are the same rule).
func (a analysis) denies(p string) bool {
	pw := strings.Fields(p)
	if len(pw) == 0 {
		return false
	}
	pw[0] = path.Base(pw[0])
	for _, c := range a.cmds {
		if len(pw) <= len(c) && equalWords(pw, c[:len(pw)]) {
			return true
		}
		// deny bash(git push) also holds for git -C dir push: options
		// between a command and its subcommand are skipped.
		if len(pw) > 1 && c[0] == pw[0] {
			rest := skipOptions(c[1:], valueOptions[pw[0]], "")
			if len(pw)-1 <= len(rest) && equalWords(pw[1:], rest[:len(pw)-1]) {
				return true
			}
		}
	}
	return false
}

// valueOptions lists, for commands whose global options come before a
// subcommand, the short options that take a value in the next word.
var valueOptions = map[string]string{"git": "Cc", "docker": "cHl", "kubectl": "ns", "npm": "C"}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mentions reports whether line names the command of deny pattern p
// anywhere, as a word of its own once quotes and backslashes are removed
// (r”m and "r"m spell rm). An unsure line that mentions a denied command
// may run it.
func mentions(line, p string) bool {
	pw := strings.Fields(p)
	if len(pw) == 0 {
		return false
	}
	name := path.Base(pw[0])
	text := strings.NewReplacer(`'`, "", `"`, "", `\`, "").Replace(line)
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isNameByte(text[start-1])) && (end == len(text) || !isNameByte(text[end])) {
			return true
		}
		i = start + 1
	}
}

// isNameByte reports whether c can be part of a command name, so a name
// next to it is part of a longer word (rm in format, rmdir, .rm).
func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
