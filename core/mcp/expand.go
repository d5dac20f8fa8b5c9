package mcp

import (
	"fmt"
	"os"
	"strings"
)

// expandVars replaces ${VAR} and ${VAR:-default} in s from the
// environment, as Claude Code does in .mcp.json: a variable set (even
// empty) gives its value to ${VAR}; ${VAR:-default} gives the default when
// the variable is unset or empty. ${VAR} of an unset variable is an error
// naming it; so is a ${ without its }. Anything else, $VAR included, is
// kept as written.
func expandVars(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q has a ${ without its closing }", short(s[i:], 40))
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !isVarName(name) {
			return "", fmt.Errorf("${%s} is not a variable reference (want ${NAME} or ${NAME:-default})", short(expr, 40))
		}
		v, set := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !set:
			return "", fmt.Errorf("environment variable %s is not set (referenced as ${%s}; set it, or give a default: ${%s:-value})", name, name, name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func isVarName(n string) bool {
	if n == "" {
		return false
	}
	for i, c := range n {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// expandEntry expands the variables of a config-file entry in its command,
// args, env values, url and header values; the first reference that cannot
// be expanded is the error.
func expandEntry(e *fileEntry) error {
	one := func(where string, s *string) error {
		v, err := expandVars(*s, os.LookupEnv)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		*s = v
		return nil
	}
	if err := one("command", &e.Command); err != nil {
		return err
	}
	for i := range e.Args {
		if err := one(fmt.Sprintf("args[%d]", i), &e.Args[i]); err != nil {
			return err
		}
	}
	if err := one("url", &e.URL); err != nil {
		return err
	}
	for _, m := range []struct {
		what string
		kv   map[string]string
	}{{"env", e.Env}, {"headers", e.Headers}} {
		for _, kv := range sortedKV(m.kv) {
			v := kv.Value
			if err := one(m.what+" "+kv.Name, &v); err != nil {
				return err
			}
			m.kv[kv.Name] = v
		}
	}
	return nil
}
