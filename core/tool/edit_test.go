package tool

import (
	"os"
	"strings"
	"testing"
)

// readThen writes a file, reads it with the tool (so edits may change it)
// and returns its path.
func readThen(t *testing.T, te *testEnv, name, content string) string {
	t.Helper()
	p := te.file(t, name, content)
	mustOK(t, call(t, tRead, te.Env, obj{"file_path": name}))
	return p
}

func fileIs(t *testing.T, p, want string) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("file is\n%q\nwant\n%q", got, want)
	}
}

func TestEditForgivingSteps(t *testing.T) {
	src := "func f() {\n\tif x {   \n\t\treturn 1\n\t}\n}\n"
	cases := []struct {
		name, file, old, new, want, how string
	}{
		{"exact", src, "\t\treturn 1\n", "\t\treturn 2\n", strings.Replace(src, "return 1", "return 2", 1), ""},
		{"line endings", "a\r\nb\r\nc\r\n", "a\r\nb\n", "x\ny\n", "x\r\ny\r\nc\r\n", matchLineEndings},
		{"line endings LF file", "a\nb\nc\n", "a\r\nb\r\n", "x\r\n", "x\nc\n", matchLineEndings},
		{"trailing whitespace", src, "\tif x {\n\t\treturn 1\n", "\tif y {\n\t\treturn 1\n", "func f() {\n\tif y {\n\t\treturn 1\n\t}\n}\n", matchTrailing},
		{"indentation", src, "if x {\n\treturn 1\n}", "if x {\n\treturn 1\n} else {\n\treturn 0\n}",
			"func f() {\n\tif x {\n\t\treturn 1\n\t} else {\n\t\treturn 0\n\t}\n}\n", matchIndent},
		{"indentation spaces to tabs", "class A:\n    def f(self):\n        pass\n", "def f(self):\n    pass\n", "def g(self):\n    return 1\n",
			"class A:\n    def g(self):\n        return 1\n", matchIndent},
		{"CRLF and indentation", "x\r\n  y\r\n  z\r\n", "y\nz\n", "y\nw\n", "x\r\n  y\r\n  w\r\n", matchIndent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t)
			p := readThen(t, te, "f.txt", tc.file)
			out := mustOK(t, call(t, tEdit, te.Env, obj{"file_path": "f.txt", "old_string": tc.old, "new_string": tc.new}))
			fileIs(t, p, tc.want)
			if tc.how != "" {
				contains(t, out, "(matched with "+tc.how+")")
			} else if strings.Contains(out, "matched with") {
				t.Fatalf("exact match reported as forgiving: %s", out)
			}
		})
	}
}

func TestEditNormalisedTwiceIsRefusedWithBothPlaces(t *testing.T) {
	te := newTestEnv(t)
	src := "a:\n  x = 1  \nb:\n    x = 1\n"
	p := readThen(t, te, "d.txt", src)
	// Exactly, "x = 1\n" occurs at line 4 only... but as a trailing-space
	// block it matches lines 2 and 4 after indentation: refused.
	mustErr(t, call(t, tEdit, te.Env, obj{"file_path": "d.txt", "old_string": "      x = 1   ", "new_string": "x = 2"}),
		"occurs 2 times in d.txt with indentation adjusted (at line 2, line 4)", "include more surrounding lines")
	fileIs(t, p, src)
	// replace_all takes both, each re-indented to its own place.
	mustOK(t, call(t, tEdit, te.Env, obj{"file_path": "d.txt", "old_string": "      x = 1   ", "new_string": "      x = 2", "replace_all": true}))
	fileIs(t, p, "a:\n  x = 2\nb:\n    x = 2\n")
}

func TestEditMissShowsClosestBlock(t *testing.T) {
	te := newTestEnv(t)
	var b strings.Builder
	for i := 1; i <= 50; i++ {
		b.WriteString("filler line number something\n")
	}
	b.WriteString("func compute(a int, b int) int {\n\treturn a + b\n}\n")
	p := readThen(t, te, "c.go", b.String())
	msg := mustErr(t, call(t, tEdit, te.Env, obj{"file_path": "c.go", "old_string": "func compute(a, b int) int {\n\treturn a * b\n}", "new_string": "x"}),
		"old_string was not found in c.go", "closest block", "    51\tfunc compute(a int, b int) int {\n", "    52\t\treturn a + b\n", "    53\t}\n")
	if strings.Contains(msg, "filler") {
		t.Fatalf("the closest block is the wrong one:\n%s", msg)
	}
	fileIs(t, p, b.String())
	mustErr(t, call(t, tEdit, te.Env, obj{"file_path": "c.go", "old_string": "zzzzqqqq", "new_string": "x"}), "no part of the file looks like it")
}

func TestMultiEdit(t *testing.T) {
	te := newTestEnv(t)
	src := "one\ntwo\nthree\nfour\n"
	p := readThen(t, te, "m.txt", src)
	edits := func(es ...[2]string) []obj {
		var out []obj
		for _, e := range es {
			out = append(out, obj{"old_string": e[0], "new_string": e[1]})
		}
		return out
	}
	// The third edit fails: nothing is written.
	msg := mustErr(t, call(t, tMulti, te.Env, obj{"file_path": "m.txt", "edits": edits([2]string{"one", "1"}, [2]string{"two", "2"}, [2]string{"five", "5"}, [2]string{"four", "4"})}),
		"edit 3 of 4 failed, so nothing was written", "old_string was not found")
	_ = msg
	fileIs(t, p, src)
	// Edits apply in order, each to the result of the ones before.
	r := call(t, tMulti, te.Env, obj{"file_path": "m.txt", "edits": edits([2]string{"one", "uno"}, [2]string{"uno\ntwo", "uno dos"}, [2]string{"four", "cuatro"})})
	out := mustOK(t, r)
	fileIs(t, p, "uno dos\nthree\ncuatro\n")
	contains(t, out, "Edited m.txt with 3 edits", "--- a/m.txt\n+++ b/m.txt\n")
	if strings.Count(out, "+++ b/m.txt") != 1 || r.Meta.Diff == nil || *r.Meta.Diff.OldText != src {
		t.Fatalf("want one diff of the whole change:\n%s", out)
	}
	// Bad input.
	mustErr(t, call(t, tMulti, te.Env, obj{"file_path": "m.txt", "edits": []obj{}}), "at least one edit")
	mustErr(t, call(t, tMulti, te.Env, obj{"file_path": "m.txt", "edits": []obj{{"old_string": "a", "new_string": "a"}}}), "edit 1: old_string and new_string are identical")
	mustErr(t, call(t, tMulti, te.Env, obj{"file_path": "m.txt", "edits": []obj{{"new_string": "a"}}}), "edit 1: old_string is required")
	// The read-before-write guard stays.
	te.file(t, "unread.txt", "x\n")
	mustErr(t, call(t, tMulti, te.Env, obj{"file_path": "unread.txt", "edits": edits([2]string{"x", "y"})}), "has not been read")
	// A file changed since it was read.
	if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustErr(t, call(t, tMulti, te.Env, obj{"file_path": "m.txt", "edits": edits([2]string{"changed", "y"})}), "has changed on disk since it was last read")
}

// TestChangeRefusesHugeFileBeforeReading: a 2 GiB (sparse) file is refused
// by write, edit and multi_edit without loading it.
func TestChangeRefusesHugeFileBeforeReading(t *testing.T) {
	te := newTestEnv(t)
	p := te.file(t, "huge.bin", "")
	if err := os.Truncate(p, 2<<30); err != nil {
		t.Fatal(err)
	}
	te.Reads.Record(p, nil, modTimeOf(p)) // even if the tracker thought it was read
	for _, c := range []struct {
		tl Tool
		a  obj
	}{
		{tEdit, obj{"file_path": "huge.bin", "old_string": "a", "new_string": "b"}},
		{tMulti, obj{"file_path": "huge.bin", "edits": []obj{{"old_string": "a", "new_string": "b"}}}},
		{tWrite, obj{"file_path": "huge.bin", "content": "small"}},
		{tRead, obj{"file_path": "huge.bin"}},
	} {
		mustErr(t, call(t, c.tl, te.Env, c.a), "2147483648 bytes")
	}
	if fi, _ := os.Stat(p); fi.Size() != 2<<30 {
		t.Fatal("the file changed")
	}
}

// TestHugeEditIsABoundedEvent: editing a 3 MB file (12 MB made a 46 MiB
// event before) yields a result whose
// meta carries a bounded diff and hashes, not both texts whole.
func TestHugeEditIsABoundedEvent(t *testing.T) {
	te := newTestEnv(t)
	withSpill(t, te)
	var b strings.Builder
	for b.Len() < 3<<20 {
		b.WriteString("some ordinary source line, long enough to count\n")
	}
	src := b.String()
	readThen := func() {
		te.Reads.Record(te.file(t, "big.txt", src), []byte(src), modTimeOf(te.ws+"/big.txt"))
	}
	readThen()
	r := call(t, tEdit, te.Env, obj{"file_path": "big.txt", "old_string": "ordinary", "new_string": "special", "replace_all": true})
	out := mustOK(t, r)
	d := r.Meta.Diff
	if !d.Elided || d.OldText != nil || d.NewText != "" || d.OldSHA256 != sha(src) || d.NewSHA256 != sha(strings.ReplaceAll(src, "ordinary", "special")) {
		t.Fatalf("diff not elided: elided=%v old=%v new=%d", d.Elided, d.OldText != nil, len(d.NewText))
	}
	if len(d.Unified) > unifiedMax+200 || len(out) > OutputBudget {
		t.Fatalf("unified %d bytes, result %d bytes", len(d.Unified), len(out))
	}
	// A new 3 MB file through write: the same bound.
	r = call(t, tWrite, te.Env, obj{"file_path": "new.txt", "content": src})
	mustOK(t, r)
	if d := r.Meta.Diff; !d.Elided || d.NewText != "" || len(d.Unified) > unifiedMax+200 {
		t.Fatalf("write diff not bounded: elided=%v unified=%d", d.Elided, len(d.Unified))
	}
}
