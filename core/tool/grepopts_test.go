package tool

import (
	"fmt"
	"strings"
	"testing"
)

func TestGrepContextFixedAndLimit(t *testing.T) {
	for _, goEngine := range []bool{false, true} {
		t.Run(fmt.Sprintf("go=%v", goEngine), func(t *testing.T) {
			old := grepForceGo
			grepForceGo = goEngine
			defer func() { grepForceGo = old }()
			te := newTestEnv(t)
			var b strings.Builder
			for i := 1; i <= 30; i++ {
				if i == 10 || i == 12 || i == 25 {
					fmt.Fprintf(&b, "hit a.b(%d)\n", i)
				} else {
					fmt.Fprintf(&b, "line %d\n", i)
				}
			}
			te.file(t, "f.txt", b.String())
			te.file(t, "g.txt", "axb(1)\n")

			// Context: overlapping ranges merge, groups split by --.
			out := mustOK(t, call(t, tGrep, te.Env, obj{"pattern": "hit", "context": 1}))
			want := "f.txt-9-line 9\nf.txt:10:hit a.b(10)\nf.txt-11-line 11\nf.txt:12:hit a.b(12)\nf.txt-13-line 13\n--\nf.txt-24-line 24\nf.txt:25:hit a.b(25)\nf.txt-26-line 26\n"
			if out != want {
				t.Fatalf("context:\n%s\nwant:\n%s", out, want)
			}
			out = mustOK(t, call(t, tGrep, te.Env, obj{"pattern": "a.b\\(25", "before": 2, "after": 0}))
			if out != "f.txt-23-line 23\nf.txt-24-line 24\nf.txt:25:hit a.b(25)\n" {
				t.Fatalf("before:\n%s", out)
			}
			// fixed_strings: "a.b(" is literal, so g.txt's axb( does not match.
			out = mustOK(t, call(t, tGrep, te.Env, obj{"pattern": "a.b(", "fixed_strings": true}))
			if strings.Contains(out, "g.txt") || strings.Count(out, "\n") != 3 {
				t.Fatalf("fixed:\n%s", out)
			}
			mustErr(t, call(t, tGrep, te.Env, obj{"pattern": "a.b("}), "invalid regular expression", "fixed_strings")
			// limit, and the note that says it cut.
			out = mustOK(t, call(t, tGrep, te.Env, obj{"pattern": "line", "limit": 5}))
			contains(t, out, "f.txt:5:line 5\n", "(showing the first 5 of 27 matching lines", "raise limit")
			if strings.Contains(out, "line 6") {
				t.Fatalf("limit not applied:\n%s", out)
			}
			// Bad input.
			mustErr(t, call(t, tGrep, te.Env, obj{"pattern": "x", "context": 21}), "context must be from 0 to 20")
			mustErr(t, call(t, tGrep, te.Env, obj{"pattern": "x", "limit": 0}), "limit must be from 1 to 1000, got 0")
			mustErr(t, call(t, tGrep, te.Env, obj{"pattern": "x", "limit": 5000}), "limit must be from 1 to 1000, got 5000")
		})
	}
}
