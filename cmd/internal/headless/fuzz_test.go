package headless

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzBound feeds arbitrary text through every bounded path: as tool
// arguments (parsed), as ids, as tool-result text and as an error message.
// Every line must be one valid JSON object of valid UTF-8 within the line
// bound, and nothing may panic.
func FuzzBound(f *testing.F) {
	for _, s := range []string{
		"", "{}", `{"a":1}`, "1e400", `{"__proto__":1}`, "[[[[[[]]]]]]", `{"a":"\u0000"}`,
		strings.Repeat("[", 80) + strings.Repeat("]", 80), "\xff\xfe", "€😀", `{"a":1,"a":2}`,
		`"` + strings.Repeat("\\u0001", 3000) + `"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := &lineWriter{}
		p := NewProjector(w)
		steps := []func() error{
			func() error { return p.Session(s, s) },
			func() error { return p.Event(toolCallEvent(s, s, s)) },
			func() error { return p.Event(toolCallEvent("c", "t", strings.Repeat(s, 1+(40<<10)/(len(s)+1)))) },
			func() error { return p.Event(toolResultEvent(s, s, false)) },
			func() error { return p.Error(s) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		for _, line := range w.writes {
			if len(line) > MaxLineBytes {
				t.Fatalf("line of %d bytes", len(line))
			}
			if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
				t.Fatalf("not one line: %.100q", line)
			}
			if !utf8.ValidString(line) || !json.Valid([]byte(line)) {
				t.Fatalf("invalid line: %.200q", line)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil || m["type"] == nil {
				t.Fatalf("not an event object: %.200q", line)
			}
		}
	})
}
