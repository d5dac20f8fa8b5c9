package store

import (
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestEscapeProject(t *testing.T) {
	long := "/" + strings.Repeat("x", 10_000)
	tests := []struct {
		cwd, want string
	}{
		{"", "_no-cwd"},
		{"/", "--root--"},
		{"/home/user/proj", "--home-user-proj--"},
		{"/home/user/proj/", "--home-user-proj--"}, // cleaned
		{"/a//b", "--a-b--"},
		{`C:\Users\me`, "--C-Users-me--"},
		{`C:\\`, "--C---"}, // "C" then one '-' for the trailing separator run
		{"/tmp/~x", "--tmp-~007Ex--"},
		{"/a b", "--a~0020b--"},
		{"/é", "--~00E9--"},
		{"/😀", "--~D83D~DE00--"},
		{"/a\x00b", "--a~0000b--"},
		{"/\xff", "--~_FF--"},
		{"/../../etc", "--etc--"},
		{"..", "--..--"},
		{"a/../../b", "--..-b--"},
		{"/-x", "--x--"},
		{"/my-dir.v2_x", "--my-dir.v2_x--"},
	}
	for _, tt := range tests {
		if got := escapeProject(tt.cwd); got != tt.want {
			t.Errorf("escapeProject(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
	got := escapeProject(long)
	if len(got) > maxComponent || !strings.HasPrefix(got, "--xxx") || !strings.HasSuffix(got, "--") ||
		!strings.Contains(got, hashMark) {
		t.Errorf("escapeProject(10,000 chars) = %q (len %d)", got, len(got))
	}
	if escapeProject(long) == escapeProject(long+"y") {
		t.Error("long cwds differing at the end share a folder")
	}
}

func TestEscapeID(t *testing.T) {
	tests := []struct{ id, want string }{
		{"abc", "abc"},
		{"session-0190c7e2-aaaa", "session-0190c7e2-aaaa"},
		{".", "~002E"},
		{"..", "~002E~002E"},
		{"...", "..."},
		{"a/b", "a~002Fb"},
		{"../../etc/passwd", "..~002F..~002Fetc~002Fpasswd"},
		{`a\b`, "a~005Cb"},
		{"~", "~007E"},
		{"~002E", "~007E002E"},
		{"\x00", "~0000"},
		{"\xff\xfe", "~_FF~_FE"},
		{"ÿ", "~00FF"},
		{"😀", "~D83D~DE00"},
		{"a b:c", "a~0020b~003Ac"},
	}
	for _, tt := range tests {
		if got := escapeID(tt.id); got != tt.want {
			t.Errorf("escapeID(%q) = %q, want %q", tt.id, got, tt.want)
		}
		if back, ok := unescapeID(escapeID(tt.id)); !ok || back != tt.id {
			t.Errorf("unescapeID(escapeID(%q)) = %q, %v", tt.id, back, ok)
		}
	}
}

// hostile returns ids and cwds that try to leave the root or break names.
func hostile() []string {
	return []string{
		"", ".", "..", "...", "/", "//", "/..", "../", "../..", "../../../../etc/passwd",
		"a/../../b", "\x00", "a\x00b", "\xff", "\xc0\xaf", "\xed\xa0\x80", "~", "~~", "~_FF",
		strings.Repeat("a", 10_000), strings.Repeat("/", 10_000), strings.Repeat("..", 5_000),
		strings.Repeat("é", 5_000), strings.Repeat("\xff", 10_000), strings.Repeat("😀", 3_000),
		"C:\\..\\..\\Windows", "\\\\server\\share", "-rf", "--", "\n", "\r\n", " ", "\t",
		"con", "NUL", "aux.txt", "a:b", "$(rm -rf /)", "`x`", "%2e%2e%2f", "\u202e", "\ufeff",
	}
}

// TestEscapeHostile checks that no hostile input yields a name that is
// empty, ".", "..", contains a separator or NUL, exceeds the file system's
// component limit, or leaves the directory it is joined to.
func TestEscapeHostile(t *testing.T) {
	root := "/sessions"
	for _, in := range hostile() {
		for kind, name := range map[string]string{"id": escapeID(in), "project": escapeProject(in)} {
			if kind == "id" && in == "" {
				continue // refused by the store before escaping
			}
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") ||
				len(name) > 255 || !utf8.ValidString(name) {
				t.Errorf("%s of %.40q: bad name %q", kind, in, name)
			}
			if p := filepath.Join(root, name); filepath.Dir(p) != root {
				t.Errorf("%s of %.40q: %q leaves %s", kind, in, p, root)
			}
		}
	}
}

// TestEscapeIDInjective checks that distinct ids never share a folder on a
// corpus of hostile, near-identical, long and random ids.
func TestEscapeIDInjective(t *testing.T) {
	corpus := hostile()
	corpus = append(corpus, "~002E", "~002E~002E", "ÿ", "\u00ff", "~00FF", "~_ff")
	// Long ids differing only at the end, and ids around the cut.
	for i := 0; i < 50; i++ {
		corpus = append(corpus, strings.Repeat("a", 10_000)+strconv.Itoa(i))
		corpus = append(corpus, strings.Repeat("a", maxComponent-25+i))
		corpus = append(corpus, strings.Repeat("/", 40+i))
		corpus = append(corpus, strings.Repeat("a", 200)+strings.Repeat("~", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "B", "0", ".", "-", "_", "~", "/", "\\", ":", "\x00", "\xff", "\x80", "é", "😀", "~0", "~_"}
	for i := 0; i < 20_000; i++ {
		var b strings.Builder
		for n := rng.IntN(12); n >= 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		corpus = append(corpus, b.String())
	}
	for i := 0; i < 300; i++ { // long random ids
		var b strings.Builder
		for n := 200 + rng.IntN(400); n >= 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		corpus = append(corpus, b.String())
	}
	seen := map[string]string{}
	for _, id := range corpus {
		if id == "" {
			continue
		}
		name := escapeID(id)
		if prev, ok := seen[name]; ok && prev != id {
			t.Fatalf("ids %.60q and %.60q share folder %q", prev, id, name)
		}
		seen[name] = id
		if len(name) > maxComponent {
			t.Fatalf("escapeID(%.60q) is %d bytes", id, len(name))
		}
	}
}

func FuzzEscapeID(f *testing.F) {
	for _, s := range hostile() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if id == "" {
			return
		}
		name := escapeID(id)
		if name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || len(name) > maxComponent {
			t.Fatalf("escapeID(%q) = %q", id, name)
		}
		if strings.Contains(name, hashMark) {
			return // cut and hashed: injective by the digest, not by decoding
		}
		if back, ok := unescapeID(name); !ok || back != id {
			t.Fatalf("unescapeID(escapeID(%q)) = %q, %v", id, back, ok)
		}
	})
}

// unescapeID inverts escapeID for names that were not cut; that an inverse
// exists is what makes the escape injective.
func unescapeID(name string) (string, bool) {
	switch name {
	case "~002E":
		return ".", true
	case "~002E~002E":
		return "..", true
	}
	var out []byte
	var units []uint16
	flush := func() {
		out = append(out, string(utf16.Decode(units))...)
		units = units[:0]
	}
	for i := 0; i < len(name); {
		c := name[i]
		switch {
		case c != '~':
			if !isLiteral(c) {
				return "", false
			}
			flush()
			out = append(out, c)
			i++
		case i+1 < len(name) && name[i+1] == '_':
			if i+4 > len(name) {
				return "", false
			}
			v, err := strconv.ParseUint(name[i+2:i+4], 16, 8)
			if err != nil {
				return "", false
			}
			flush()
			out = append(out, byte(v))
			i += 4
		default:
			if i+5 > len(name) {
				return "", false
			}
			v, err := strconv.ParseUint(name[i+1:i+5], 16, 16)
			if err != nil {
				return "", false
			}
			units = append(units, uint16(v))
			i += 5
		}
	}
	flush()
	return string(out), true
}
