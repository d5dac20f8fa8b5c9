package tool

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiffExact(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"equal", "a\n", "a\n", ""},
		{"create", "", "a\nb\n", "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"delete all", "a\n", "", "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n"},
		{"middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n",
			"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n"},
		{"no newline at end", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"two hunks", strings.Repeat("x\n", 3) + "A\n" + strings.Repeat("y\n", 10) + "B\n", strings.Repeat("x\n", 3) + "a\n" + strings.Repeat("y\n", 10) + "b\n",
			"--- a/f\n+++ b/f\n@@ -1,7 +1,7 @@\n x\n x\n x\n-A\n+a\n y\n y\n y\n@@ -12,4 +12,4 @@\n y\n y\n y\n-B\n+b\n"},
	}
	for _, tc := range tests {
		if got := UnifiedDiff("f", tc.old, tc.new); got != tc.want {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
}

// TestUnifiedDiffApplies checks random diffs two ways: our own applier
// rebuilds the new text, and patch(1), when present, agrees.
func TestUnifiedDiffApplies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	patchBin, _ := exec.LookPath("patch")
	dir := t.TempDir()
	for i := 0; i < 300; i++ {
		old := randomText(rng)
		neu := mutate(rng, old)
		d := UnifiedDiff("f", old, neu)
		if old == neu {
			if d != "" {
				t.Fatalf("diff of equal texts: %q", d)
			}
			continue
		}
		got, err := applyUnified(old, d)
		if err != nil || got != neu {
			t.Fatalf("case %d: apply failed (%v)\nold %q\nnew %q\ngot %q\ndiff:\n%s", i, err, old, neu, got, d)
		}
		if patchBin != "" && i%10 == 0 {
			f := filepath.Join(dir, "f")
			if err := os.WriteFile(f, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(patchBin, "-s", "-p1", "--no-backup-if-mismatch")
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader(d)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("patch(1) refused case %d: %v %s\n%s", i, err, out, d)
			}
			if b, _ := os.ReadFile(f); string(b) != neu {
				t.Fatalf("patch(1) result differs for case %d", i)
			}
		}
	}
}

func TestUnifiedDiffLarge(t *testing.T) {
	// Completely different large texts stay fast and correct (the cost
	// bound falls back to a plain replacement).
	var a, b strings.Builder
	for i := 0; i < 5000; i++ {
		a.WriteString("a" + strconv.Itoa(i) + "\n")
		b.WriteString("b" + strconv.Itoa(i) + "\n")
	}
	d := UnifiedDiff("f", a.String(), b.String())
	got, err := applyUnified(a.String(), d)
	if err != nil || got != b.String() {
		t.Fatalf("large diff did not apply: %v", err)
	}
}

func BenchmarkUnifiedDiff(b *testing.B) {
	var s strings.Builder
	for i := 0; i < 2000; i++ {
		s.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	old := s.String()
	neu := strings.Replace(old, "line 1000\n", "changed\n", 1)
	for b.Loop() {
		UnifiedDiff("f", old, neu)
	}
}

func randomText(rng *rand.Rand) string {
	n := rng.IntN(12)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(string(rune('a' + rng.IntN(4))))
		b.WriteByte('\n')
	}
	s := b.String()
	if s != "" && rng.IntN(4) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

func mutate(rng *rand.Rand, s string) string {
	lines := splitLines(s)
	for k := rng.IntN(4); k >= 0; k-- {
		switch rng.IntN(3) {
		case 0:
			if len(lines) > 0 {
				i := rng.IntN(len(lines))
				lines = append(lines[:i], lines[i+1:]...)
			}
		case 1:
			i := rng.IntN(len(lines) + 1)
			lines = append(lines[:i], append([]string{string(rune('a'+rng.IntN(5))) + "\n"}, lines[i:]...)...)
		case 2:
			if len(lines) > 0 {
				lines[rng.IntN(len(lines))] = "z\n"
			}
		}
	}
	out := strings.Join(lines, "")
	if out != "" && rng.IntN(5) == 0 {
		out = strings.TrimSuffix(out, "\n")
	}
	return out
}

// applyUnified applies a unified diff produced by UnifiedDiff.
func applyUnified(old, d string) (string, error) {
	a := splitLines(old)
	var out []string
	pos := 0
	lines := strings.SplitAfter(d, "\n")
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "@@ ") {
			var aStart int
			spec := strings.Fields(l)[1][1:]
			startStr, countStr, hasCount := strings.Cut(spec, ",")
			aStart, _ = strconv.Atoi(startStr)
			if hasCount && countStr == "0" {
				aStart++ // "-N,0" names the line before
			}
			for pos < aStart-1 {
				out = append(out, a[pos])
				pos++
			}
			continue
		}
		noEOL := i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`)
		body := l[1:]
		if noEOL {
			body = strings.TrimSuffix(body, "\n")
		}
		switch l[0] {
		case ' ':
			if a[pos] != body {
				return "", errApply(pos, a[pos], body)
			}
			out = append(out, a[pos])
			pos++
		case '-':
			if a[pos] != body {
				return "", errApply(pos, a[pos], body)
			}
			pos++
		case '+':
			out = append(out, body)
		case '\\':
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, ""), nil
}

type applyErr string

func (e applyErr) Error() string { return string(e) }

func errApply(pos int, have, want string) error {
	return applyErr("line " + strconv.Itoa(pos+1) + ": have " + strconv.Quote(have) + ", diff removes " + strconv.Quote(want))
}
