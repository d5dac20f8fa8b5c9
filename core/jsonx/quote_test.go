package jsonx

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a<b>&c", "quote\" back\\ \n\r\t\b\f\x01", "\u2028\u2029 é 😀", "bad \xff\xfe utf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s, true); string(got) != string(want) {
			t.Fatalf("forHTML: got %s want %s", got, want)
		}
		plain := AppendString(nil, s, false)
		if !utf8.Valid(plain) {
			t.Fatalf("not valid UTF-8: %q", plain)
		}
		var back string
		if err := json.Unmarshal(plain, &back); err != nil {
			t.Fatalf("not valid JSON: %s: %v", plain, err)
		}
		var viaMarshal string
		json.Unmarshal(want, &viaMarshal)
		if back != viaMarshal {
			t.Fatalf("round trip differs: %q vs %q", back, viaMarshal)
		}
	})
}
