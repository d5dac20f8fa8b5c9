package tool

import (
	"fmt"
	"strings"
	"testing"
)

// benchSource is a 10,000-line Go-like file with one distinctive block.
func benchSource() string {
	var b strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, "\tif v%d := compute(%d); v%d > limit {\n", i, i, i)
	}
	b.WriteString("\t\tfunc special() {\n\t\t\treturn 42\n\t\t}\n")
	return b.String()
}

// BenchmarkEditIndentMatch: old_string found only at the last step
// (indentation adjusted) in a 10,000-line file.
func BenchmarkEditIndentMatch(b *testing.B) {
	src := benchSource()
	e := editSpec{Old: "func special() {\n\treturn 42\n}\n", New: "func special() {\n\treturn 43\n}\n"}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, n, how, err := applyEdit(src, e, "f.go"); err != nil || n != 1 || how != matchIndent {
			b.Fatal(n, how, err)
		}
	}
}

// BenchmarkEditMissClosestBlock: a miss in a 10,000-line file, with the
// search for the closest block.
func BenchmarkEditMissClosestBlock(b *testing.B) {
	src := benchSource()
	e := editSpec{Old: "func spezial() {\n\treturn 41\n}\n", New: "x"}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, _, _, err := applyEdit(src, e, "f.go"); err == nil || !strings.Contains(err.Error(), "closest block") {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitText: a 1 MB result cut to the budget (no spill store).
func BenchmarkFitText(b *testing.B) {
	text := strings.Repeat(strings.Repeat("x", 99)+"\n", 10000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if out, cut := FitText(nil, text); !cut || len(out) > OutputBudget {
			b.Fatal(len(out))
		}
	}
}
