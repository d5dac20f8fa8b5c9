package ndjson

import (
	"encoding/json"
	"testing"
)

func members(obj string) map[string]string {
	out := map[string]string{}
	ObjectMembers([]byte(obj), func(k string, v []byte) bool {
		out[k] = string(v)
		return true
	})
	return out
}

func TestObjectMembers(t *testing.T) {
	got := members(` { "id" : "a\"}b" , "params":{"s":"x\\","n":[1,{"q":"]}"}]},"m":-1.5e3,"t":true,"z":null,` +
		`"\u0069d2":"k","e":"","bs":"\\\\","id":7 } `)
	want := map[string]string{"id": "7", "params": `{"s":"x\\","n":[1,{"q":"]}"}]}`, "m": "-1.5e3", "t": "true",
		"z": "null", "id2": `"k"`, "e": `""`, "bs": `"\\\\"`}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	if s, ok := StringValue([]byte(`"a\nb"`)); !ok || s != "a\nb" {
		t.Errorf("%q", s)
	}
	if _, ok := StringValue([]byte(`5`)); ok {
		t.Error("number as string")
	}
	n := 0
	ObjectMembers([]byte(`{"a":1,"b":2}`), func(string, []byte) bool { n++; return false })
	if n != 1 {
		t.Error("stop not honoured")
	}
	for _, notObj := range []string{``, `[]`, `"x"`, `{}`} {
		if m := members(notObj); len(m) != 0 {
			t.Errorf("%q: %v", notObj, m)
		}
	}
}

// FuzzObjectMembers checks the light walk against encoding/json on every
// valid object.
func FuzzObjectMembers(f *testing.F) {
	f.Add(`{"a":"\\\"","b":[{"c":"}"}],"d":1}`)
	f.Add(`{"x":"\u00e9\\","y":{"z":[]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var ref map[string]json.RawMessage
		if !json.Valid([]byte(s)) || json.Unmarshal([]byte(s), &ref) != nil || ref == nil {
			return
		}
		got := members(s)
		if len(got) != len(ref) {
			t.Fatalf("%q: got %v want %v", s, got, ref)
		}
		for k, v := range ref {
			if got[k] != string(v) {
				t.Fatalf("%q: %s = %s, want %s", s, k, got[k], v)
			}
		}
	})
}
