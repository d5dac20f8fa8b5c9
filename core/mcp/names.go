package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLen is the model API's limit on a tool name ([a-zA-Z0-9_-]{1,64}).
const maxNameLen = 64

// sanitize maps s onto [a-zA-Z0-9_-], every other byte becoming '_'.
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// modelName is the model-facing name of a server's tool before collisions
// are resolved: mcp__<server>__<tool>, sanitised, and cut to 64 bytes with
// a hash of the real names when too long (so two long names that share a
// prefix stay apart).
func modelName(server, tool string) string {
	n := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(n) <= maxNameLen {
		return n
	}
	s, t := sanitize(server), sanitize(tool)
	if len(s) > 20 {
		s = s[:20]
	}
	suffix := "_" + nameHash(server, tool, 0)
	room := maxNameLen - len("mcp__") - len(s) - len("__") - len(suffix)
	if len(t) > room {
		t = t[:room]
	}
	return "mcp__" + s + "__" + t + suffix
}

// nameHash is 8 hex digits of a hash of the real names (and a counter
// when a collision needs another try).
func nameHash(server, tool string, n int) string {
	h := sha256.New()
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	if n > 0 {
		h.Write([]byte{0, byte(n), byte(n >> 8)})
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// withSuffix makes a variant of name that ends in a hash, within 64 bytes.
func withSuffix(name, server, tool string, n int) string {
	suffix := "_" + nameHash(server, tool, n)
	if len(name)+len(suffix) > maxNameLen {
		name = name[:maxNameLen-len(suffix)]
	}
	return name + suffix
}

// namer hands out model-facing names and keeps them: a (server, tool) pair
// keeps its name for the life of the set, and no two pairs (nor a pair and
// a reserved built-in name) ever share one.
type namer struct {
	reserved func(string) bool
	byPair   map[[2]string]string
	taken    map[string]bool
}

func newNamer(reserved func(string) bool) *namer {
	if reserved == nil {
		reserved = func(string) bool { return false }
	}
	return &namer{reserved: reserved, byPair: map[[2]string]string{}, taken: map[string]bool{}}
}

// name returns the pair's name, assigning one the first time. Callers
// assign in a stable order (sorted by server, then tool) so a session that
// sees the same servers gets the same names.
func (n *namer) name(server, tool string) string {
	key := [2]string{server, tool}
	if s, ok := n.byPair[key]; ok {
		return s
	}
	base := modelName(server, tool)
	s := base
	for i := 0; n.taken[s] || n.reserved(s); i++ {
		s = withSuffix(base, server, tool, i)
	}
	n.byPair[key] = s
	n.taken[s] = true
	return s
}
