package tool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// searchTree builds a workspace exercising .gitignore rules: root and
// nested files, negation, folder-only and anchored patterns, a .git folder,
// hidden files, a binary file, a symlink and CRLF lines.
func searchTree(t *testing.T, te *testEnv) {
	t.Helper()
	files := map[string]string{
		".gitignore":           "*.log\n!keep.log\nbuild/\n/rootonly.txt\n# comment\n\\#hash.txt\ngen/**\n",
		"main.go":              "package main\n\nfunc main() { needle() }\n",
		"util.go":              "package main\n\nfunc needle() {}\n// needle again\n",
		"a.log":                "needle in a log\n",
		"keep.log":             "needle kept\n",
		"rootonly.txt":         "needle root only\n",
		"#hash.txt":            "needle hash\n",
		"sub/rootonly.txt":     "needle not anchored here\n",
		"sub/.gitignore":       "secret.txt\n!important.log\n",
		"sub/secret.txt":       "needle secret\n",
		"sub/important.log":    "needle important\n",
		"sub/deep/x.ts":        "const needle = 1;\r\nconst other = 2;\r\n",
		"sub/deep/y.tsx":       "needle tsx\n",
		"build/out.go":         "needle built\n",
		"sub/build":            "a file named build is not a folder: needle\n",
		"gen/a/b.go":           "needle generated\n",
		"gen.go":               "needle gen.go\n",
		".hidden/h.go":         "needle hidden\n",
		".git/config":          "needle in git\n",
		"bin.dat":              "needle\x00binary\n",
		"long.txt":             "needle " + strings.Repeat("x", 3000) + "\n",
		"nested/.git/HEAD":     "ref\n",
		"nested/inner.log":     "needle nested repo log\n",
		"nested/sub/notes.txt": "needle nested\n",
	}
	for rel, content := range files {
		te.file(t, rel, content)
	}
	if err := os.Symlink(filepath.Join(te.ws, "main.go"), filepath.Join(te.ws, "link.go")); err != nil {
		t.Fatal(err)
	}
}

func TestGlob(t *testing.T) {
	te := newTestEnv(t)
	searchTree(t, te)
	// Distinct mtimes: util.go newest, main.go oldest.
	now := time.Now()
	for i, rel := range []string{"main.go", "gen.go", "util.go"} {
		tm := now.Add(time.Duration(i-10) * time.Minute)
		if err := os.Chtimes(filepath.Join(te.ws, rel), tm, tm); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		args    obj
		wantErr bool
		want    string // exact output
		has     []string
		not     []string
	}{
		{name: "top level, newest first", args: obj{"pattern": "*.go"}, want: "link.go\nutil.go\ngen.go\nmain.go\n"},
		{name: "recursive respects gitignore", args: obj{"pattern": "**/*.go"}, has: []string{"main.go", ".hidden/h.go"}, not: []string{"build/out.go", "gen/a/b.go", ".git"}},
		{name: "negation and nested ignore", args: obj{"pattern": "**/*.log"}, has: []string{"keep.log", "sub/important.log", "nested/inner.log"}, not: []string{"a.log"}},
		{name: "anchored pattern", args: obj{"pattern": "**/rootonly.txt"}, want: "sub/rootonly.txt\n"},
		{name: "nested gitignore", args: obj{"pattern": "sub/**"}, has: []string{"sub/build", "sub/deep/x.ts"}, not: []string{"secret"}},
		{name: "braces", args: obj{"pattern": "**/*.{ts,tsx}"}, has: []string{"sub/deep/x.ts", "sub/deep/y.tsx"}},
		{name: "path argument", args: obj{"pattern": "*.ts", "path": "sub/deep"}, want: "sub/deep/x.ts\n"},
		{name: "absolute pattern", args: obj{"pattern": filepath.Join(te.ws, "sub", "deep", "*.tsx")}, want: "sub/deep/y.tsx\n"},
		{name: "escaped hash", args: obj{"pattern": "*hash*"}, want: "No files match \"*hash*\" in ."},
		{name: "no match", args: obj{"pattern": "**/*.rs"}, want: "No files match \"**/*.rs\" in ."},
		{name: "missing folder pattern", args: obj{"pattern": "nope/*.go"}, want: "No files match \"*.go\" in nope."},
		{name: "path is a file", args: obj{"pattern": "*", "path": "main.go"}, wantErr: true, has: []string{"main.go is a file, not a folder"}},
		{name: "missing path", args: obj{"pattern": "*", "path": "nope"}, wantErr: true, has: []string{"folder nope does not exist"}},
		{name: "invalid pattern", args: obj{"pattern": "[a-"}, wantErr: true, has: []string{"invalid glob pattern"}},
		{name: "unbalanced brace", args: obj{"pattern": "*.{go"}, wantErr: true, has: []string{"unbalanced {"}},
		{name: "folder only", args: obj{"pattern": "sub/"}, wantErr: true, has: []string{"names a folder"}},
		{name: "no pattern", args: obj{}, wantErr: true, has: []string{"pattern is required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tGlob, te.Env, tc.args)
			if r.IsError != tc.wantErr {
				t.Fatalf("IsError = %v: %s", r.IsError, text(r))
			}
			got := text(r)
			if tc.want != "" && got != tc.want && !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			contains(t, got, tc.has...)
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Fatalf("output contains %q:\n%s", n, got)
				}
			}
		})
	}
}

func TestGlobCap(t *testing.T) {
	te := newTestEnv(t)
	base := time.Now().Add(-time.Hour)
	for i := 0; i < 130; i++ {
		p := te.file(t, fmt.Sprintf("d/f%03d.txt", i), "")
		tm := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, tm, tm); err != nil {
			t.Fatal(err)
		}
	}
	r := call(t, tGlob, te.Env, obj{"pattern": "**/*.txt"})
	out := mustOK(t, r)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 101 || lines[0] != "d/f129.txt" || lines[99] != "d/f030.txt" {
		t.Fatalf("first %q, 100th %q, %d lines", lines[0], lines[99], len(lines))
	}
	contains(t, lines[100], "showing the 100 newest of 130 matching files")
	if !r.Meta.Truncated {
		t.Fatal("meta not truncated")
	}
}

func TestGrep(t *testing.T) {
	for _, engine := range grepEngines(t) {
		t.Run(engine.name, func(t *testing.T) {
			engine.set(t)
			te := newTestEnv(t)
			searchTree(t, te)
			tests := []struct {
				name    string
				args    obj
				wantErr bool
				has     []string
				not     []string
			}{
				{name: "basic", args: obj{"pattern": "func needle"}, has: []string{"util.go:3:func needle() {}\n"}},
				{name: "gitignore respected", args: obj{"pattern": "needle"}, has: []string{"keep.log:1:", "sub/important.log:1:", ".hidden/h.go:1:", "sub/build:1:", "nested/inner.log:1:"}, not: []string{"a.log", "build/out.go", "gen/a/b.go", "secret", ".git/", "bin.dat", "link.go", "#hash", "\nrootonly.txt"}},
				{name: "CR stripped", args: obj{"pattern": "needle =", "include": "*.ts"}, has: []string{"sub/deep/x.ts:1:const needle = 1;\n"}},
				{name: "include braces", args: obj{"pattern": "needle", "include": "*.{ts,tsx}"}, has: []string{"sub/deep/x.ts:1:", "sub/deep/y.tsx:1:"}, not: []string{".go"}},
				{name: "include with slash", args: obj{"pattern": "needle", "include": "sub/**/*.tsx"}, has: []string{"sub/deep/y.tsx:1:"}, not: []string{"x.ts"}},
				{name: "include does not re-include ignored", args: obj{"pattern": "needle", "include": "*.log"}, not: []string{"a.log"}, has: []string{"keep.log"}},
				{name: "long line cut", args: obj{"pattern": "needle x", "include": "long.txt"}, has: []string{"[... line cut: 1007 more characters]"}},
				{name: "case insensitive", args: obj{"pattern": "(?i)NEEDLE AGAIN"}, has: []string{"util.go:4:// needle again"}},
				{name: "single file", args: obj{"pattern": "needle", "path": "util.go"}, has: []string{"util.go:3:", "util.go:4:"}},
				{name: "ignored file named explicitly", args: obj{"pattern": "needle", "path": "a.log"}, has: []string{"a.log:1:needle in a log"}},
				{name: "subfolder keeps root rules", args: obj{"pattern": "needle", "path": "sub"}, has: []string{"sub/rootonly.txt"}, not: []string{"secret"}},
				{name: "no match", args: obj{"pattern": "haystack"}, has: []string{"No matches for /haystack/ in ."}},
				{name: "invalid regex", args: obj{"pattern": "a(b"}, wantErr: true, has: []string{"invalid regular expression", "missing closing )"}},
				{name: "missing path", args: obj{"pattern": "x", "path": "nope"}, wantErr: true, has: []string{"nope does not exist"}},
				{name: "invalid include", args: obj{"pattern": "x", "include": "[a-"}, wantErr: true, has: []string{"invalid glob pattern"}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					r := call(t, tGrep, te.Env, tc.args)
					if r.IsError != tc.wantErr {
						t.Fatalf("IsError = %v: %s", r.IsError, text(r))
					}
					got := "\n" + text(r)
					contains(t, got, tc.has...)
					for _, n := range tc.not {
						if strings.Contains(got, n) {
							t.Fatalf("output contains %q:\n%s", n, got)
						}
					}
				})
			}
		})
	}
}

func TestGrepCap(t *testing.T) {
	for _, engine := range grepEngines(t) {
		t.Run(engine.name, func(t *testing.T) {
			engine.set(t)
			te := newTestEnv(t)
			for i := 0; i < 3; i++ {
				te.file(t, fmt.Sprintf("f%d.txt", i), strings.Repeat("hit\n", 60))
			}
			r := call(t, tGrep, te.Env, obj{"pattern": "hit"})
			lines := strings.Split(strings.TrimSpace(mustOK(t, r)), "\n")
			if len(lines) != 101 || lines[0] != "f0.txt:1:hit" || lines[59] != "f0.txt:60:hit" || lines[99] != "f1.txt:40:hit" {
				t.Fatalf("lines: %q ... %q (%d)", lines[0], lines[99], len(lines))
			}
			contains(t, lines[100], "showing the first 100 of 180 matching lines")
			if !r.Meta.Truncated {
				t.Fatal("meta not truncated")
			}
		})
	}
}

// TestGrepEnginesAgree runs the same searches through rg and the Go engine
// and demands byte-identical output.
func TestGrepEnginesAgree(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not on PATH")
	}
	te := newTestEnv(t)
	searchTree(t, te)
	// Rules above the repository root must not apply inside it: the
	// workspace's parent is not a repository, ws itself becomes one here.
	if err := os.WriteFile(filepath.Join(filepath.Dir(te.ws), ".gitignore"), []byte("util.go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	te.file(t, ".git/HEAD", "ref\n")
	for i := 0; i < 40; i++ {
		te.file(t, fmt.Sprintf("many/%02d/f.txt", i), strings.Repeat("needle line\n", 5))
	}
	queries := []obj{
		{"pattern": "needle"},
		{"pattern": "needle", "path": "sub"},
		{"pattern": "needle", "path": "nested"},
		{"pattern": "needle", "include": "*.go"},
		{"pattern": "needle", "include": "*.{ts,tsx,log}"},
		{"pattern": "needle", "include": "many/**/f.txt"},
		{"pattern": `\bneedle\b`},
		{"pattern": "^const"},
		{"pattern": `2;$`},
		{"pattern": "(?i)NEEDLE (AGAIN|KEPT)"},
		{"pattern": `x{100}`},
		{"pattern": "nothing-matches-this"},
		{"pattern": `\Qneedle()\E`}, // RE2 only: rg refuses, Go answers
	}
	for _, q := range queries {
		grepForceGo = true
		goOut := text(call(t, tGrep, te.Env, q))
		grepForceGo = false
		rgOut := text(call(t, tGrep, te.Env, q))
		if goOut != rgOut {
			t.Errorf("query %v:\n--- go\n%s\n--- rg\n%s", q, goOut, rgOut)
		}
	}
	// The rg engine really ran (no silent fallback), and a pattern only RE2
	// knows falls back to Go.
	for _, tc := range []struct {
		pattern string
		want    error
	}{{"needle", nil}, {`\Qneedle()\E`, errNoRipgrep}} {
		q, err := tGrep.parse(args(t, obj{"pattern": tc.pattern}), te.Env)
		if err != nil {
			t.Fatal(err)
		}
		col := newGrepCollector(te.ws)
		if err := grepRipgrep(t.Context(), q, col); err != tc.want {
			t.Fatalf("rg %q: err = %v, want %v", tc.pattern, err, tc.want)
		}
		if tc.want == nil && col.total == 0 {
			t.Fatal("rg found nothing")
		}
	}
	// Sanity: the repository boundary held (util.go is found).
	grepForceGo = false
	contains(t, text(call(t, tGrep, te.Env, obj{"pattern": "func needle"})), "util.go:3:")
}

type grepEngine struct {
	name string
	set  func(t *testing.T)
}

func grepEngines(t *testing.T) []grepEngine {
	engines := []grepEngine{{"go", func(t *testing.T) {
		grepForceGo = true
		t.Cleanup(func() { grepForceGo = false })
	}}}
	if _, err := exec.LookPath("rg"); err == nil {
		engines = append(engines, grepEngine{"rg", func(t *testing.T) { grepForceGo = false }})
	} else {
		t.Log("rg not on PATH: only the Go engine is tested")
	}
	return engines
}

func TestGitignoreRules(t *testing.T) {
	tests := []struct {
		rules string
		path  string
		dir   bool
		want  bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "x/y/a.log", false, true},
		{"*.log\n!keep.log", "keep.log", false, false},
		{"*.log\n!keep.log", "x/keep.log", false, false},
		{"build/", "build", true, true},
		{"build/", "build", false, false},
		{"build/", "x/build", true, true},
		{"/root.txt", "root.txt", false, true},
		{"/root.txt", "x/root.txt", false, false},
		{"doc/*.md", "doc/a.md", false, true},
		{"doc/*.md", "x/doc/a.md", false, false},
		{"doc/*.md", "doc/x/a.md", false, false},
		{"**/foo", "a/b/foo", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"gen/**", "gen", true, false},
		{"gen/**", "gen/x", false, true},
		{"gen/**", "gen/x/y", false, true},
		{"[!a]*.txt", "b.txt", false, true},
		{"[!a]*.txt", "a.txt", false, false},
		{"\\#x", "#x", false, true},
		{"trailing   ", "trailing", false, true},
		{"# comment\n\n", "# comment", false, false},
		{"*", ".hidden", false, true},
		{"foo?", "foo1", false, true},
	}
	for _, tc := range tests {
		f := parseGitignore("/r", []byte(tc.rules))
		got, _ := f.match("/r/"+tc.path, tc.dir)
		if got != tc.want {
			t.Errorf("rules %q path %q dir=%v: ignored=%v, want %v", tc.rules, tc.path, tc.dir, got, tc.want)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"**", "a/b/c", true},
		{"**", "", true},
		{"src/**", "src", true},
		{"src/**", "src/a/b.go", true},
		{"src/**", "srcx/a", false},
		{"*.go", "a.go", true},
		{"*.go", "d/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "x/y/a.go", true},
		{"*.{go,md}", "r.md", true},
		{"{a,b{c,d}}", "bd", true},
		{"[", "[", false},
		{"/etc/**", "/etc/passwd", true},
	}
	for _, tc := range tests {
		if got := MatchGlob(tc.pat, tc.name); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v", tc.pat, tc.name, got)
		}
	}
}

// BenchmarkGrep compares the engines on 2,000 files of 200 lines.
func BenchmarkGrep(b *testing.B) {
	dir := b.TempDir()
	ws, _ := filepath.EvalSymlinks(dir)
	line := strings.Repeat("lorem ipsum dolor sit amet ", 3) + "\n"
	for i := 0; i < 2000; i++ {
		p := filepath.Join(ws, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i))
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		body := strings.Repeat(line, 199) + fmt.Sprintf("needle %d\n", i)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := &Env{Cwd: ws}
	raw := args(b, obj{"pattern": `needle \d+`})
	for _, eng := range []struct {
		name  string
		force bool
	}{{"go", true}, {"rg", false}} {
		if !eng.force {
			if _, err := exec.LookPath("rg"); err != nil {
				continue
			}
		}
		b.Run(eng.name, func(b *testing.B) {
			grepForceGo = eng.force
			defer func() { grepForceGo = false }()
			for b.Loop() {
				if r := tGrep.Run(b.Context(), raw, env); r.IsError {
					b.Fatal(text(r))
				}
			}
		})
	}
}
