package tool

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxBraceExpansions bounds {a,b} expansion so a hostile pattern cannot
// explode.
const maxBraceExpansions = 256

// globPattern is a compiled slash-separated glob: `**` as a whole segment
// matches any number of segments (zero included), other segments follow
// path.Match (`*`, `?`, `[...]`, `[!...]`), and `{a,b}` alternatives are
// expanded up front.
type globPattern struct {
	alts [][]string // each alternative split in segments
}

// compileGlob validates and compiles pattern.
func compileGlob(pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, errors.New("glob pattern is empty")
	}
	exp, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globPattern{}
	for _, p := range exp {
		segs := splitSegs(p)
		for i, s := range segs {
			s = fixBang(s)
			segs[i] = s
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("invalid glob pattern %q: malformed segment %q", pattern, s)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the slash-separated relative path matches.
func (g *globPattern) match(rel string) bool {
	segs := splitSegs(rel)
	for _, alt := range g.alts {
		if matchSegs(alt, segs) {
			return true
		}
	}
	return false
}

// hasDoubleStar reports whether some alternative can match at any depth.
func (g *globPattern) maxDepth() int {
	depth := 0
	for _, alt := range g.alts {
		for _, s := range alt {
			if s == "**" {
				return -1
			}
		}
		depth = max(depth, len(alt))
	}
	return depth
}

// MatchGlob reports whether name (slash-separated) matches the glob
// pattern, with `**` segments and `{a,b}` alternatives. A malformed pattern
// matches nothing. The permission rules use it for path globs.
func MatchGlob(pattern, name string) bool {
	g, err := compileGlob(pattern)
	if err != nil {
		return false
	}
	return g.match(name)
}

func splitSegs(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}

// fixBang turns the fnmatch/gitignore class negation [!x] into Go's [^x].
func fixBang(s string) string {
	if !strings.Contains(s, "[!") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			b.WriteByte(s[i])
			b.WriteByte(s[i+1])
			i++
			continue
		}
		if s[i] == '[' && i+1 < len(s) && s[i+1] == '!' {
			b.WriteString("[^")
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// matchSegs matches segments with `**` by the classic wildcard algorithm
// (greedy, backtracking to the last `**`), linear in practice.
func matchSegs(pat, segs []string) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(segs) {
		switch {
		case pi < len(pat) && pat[pi] == "**":
			starP, starS = pi, si
			pi++
		case pi < len(pat) && segMatch(pat[pi], segs[si]):
			pi++
			si++
		case starP >= 0:
			starS++
			si = starS
			pi = starP + 1
		default:
			return false
		}
	}
	for pi < len(pat) && pat[pi] == "**" {
		pi++
	}
	return pi == len(pat)
}

func segMatch(pat, seg string) bool {
	ok, err := path.Match(pat, seg)
	return err == nil && ok
}

// expandBraces expands {a,b} alternatives (nested allowed, backslash
// escapes respected). Unbalanced braces are an error.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("invalid glob pattern %q: unbalanced }", p)
			}
			depth--
			if depth == 0 {
				pre, body, post := p[:open], p[open+1:i], p[i+1:]
				var out []string
				for _, alt := range splitTopCommas(body) {
					rest, err := expandBraces(alt + post)
					if err != nil {
						return nil, err
					}
					for _, r := range rest {
						out = append(out, pre+r)
						if len(out) > maxBraceExpansions {
							return nil, fmt.Errorf("invalid glob pattern %q: too many {} alternatives", p)
						}
					}
				}
				return out, nil
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("invalid glob pattern %q: unbalanced {", p)
	}
	return []string{p}, nil
}

func splitTopCommas(s string) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[last:i])
				last = i + 1
			}
		}
	}
	return append(out, s[last:])
}
