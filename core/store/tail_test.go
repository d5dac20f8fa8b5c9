package store

import (
	"bytes"
	"testing"
)

// TestLastIndexAgrees: lastIndex finds what bytes.LastIndex finds,
// overlapping and adjacent matches, edges and empty inputs included.
func TestLastIndexAgrees(t *testing.T) {
	for _, c := range []struct{ b, sep string }{
		{"", "a"}, {"a", "a"}, {"aaaa", "aa"}, {"abcabc", "abc"}, {"xabcx", "abc"}, {"abc", "abcd"},
		{"abab", ""}, {"", ""}, {"\n{\"type\":\"compaction/checkpoint\",\n{\"type\":\"compaction/checkpoint\",", string(checkpointMark)},
	} {
		if got, want := lastIndex([]byte(c.b), []byte(c.sep)), bytes.LastIndex([]byte(c.b), []byte(c.sep)); got != want {
			t.Errorf("lastIndex(%q, %q) = %d, want %d", c.b, c.sep, got, want)
		}
	}
}

func FuzzLastIndex(f *testing.F) {
	f.Add([]byte("aaaa"), []byte("aa"))
	f.Fuzz(func(t *testing.T, b, sep []byte) {
		if got, want := lastIndex(b, sep), bytes.LastIndex(b, sep); got != want {
			t.Fatalf("lastIndex(%q, %q) = %d, want %d", b, sep, got, want)
		}
	})
}
