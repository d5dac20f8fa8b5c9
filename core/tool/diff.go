package tool

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// maxDiffCost bounds the Myers search (edit distance in lines). Past it the
// changed middle is shown as one removal and one addition: still a correct
// diff, just not a minimal one, and never a slow or huge computation.
const maxDiffCost = 1000

// maxDiffLines bounds the changed middle given to Myers (its snake work is
// O((N+M)·D)); larger middles are shown as a plain replacement.
const maxDiffLines = 100_000

// UnifiedDiff returns a unified diff (context 3) turning oldText into
// newText, with ---/+++ headers naming path; "" when they are equal. Lines
// are compared whole, a missing final newline is marked the way diff(1)
// does, so the output applies with patch(1).
func UnifiedDiff(path, oldText, newText string) string {
	if oldText == newText {
		return ""
	}
	a, b := splitLines(oldText), splitLines(newText)
	ops := diffLines(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", path, path)
	writeHunks(&out, a, b, ops)
	return out.String()
}

// splitLines splits s into lines that keep their "\n"; the last one may
// lack it.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// op is one diff operation over line indexes.
type op struct {
	kind byte // ' ', '-', '+'
	a, b int  // index into a (for ' ' and '-') and b (for ' ' and '+')
}

// diffLines returns the edit script from a to b: common prefix and suffix
// are peeled first (an edit usually touches one region), the middle goes
// through Myers' O(ND) algorithm.
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]op, 0, len(a)+len(b))
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', i, i})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		ops = append(ops, op{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers computes a shortest edit script between a and b, offsetting the
// indexes by oa and ob. Each round keeps a snapshot of only the diagonals it
// reached, so memory is O(D²) small ints for edit distance D.
func myers(a, b []string, oa, ob int) []op {
	n, m := len(a), len(b)
	if n == 0 || m == 0 || n+m > maxDiffLines {
		return replaceAll(n, m, oa, ob)
	}
	maxD := min(n+m, maxDiffCost)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	// trace[d] holds v[off-d-1 .. off+d+1] as it was before round d.
	var trace [][]int32
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		trace = append(trace, append([]int32(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1])
			} else {
				x = int(v[off+k-1]) + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return replaceAll(n, m, oa, ob)
	}
	// Backtrack from (n, m) through the snapshots.
	var rev []op
	x, y := n, m
	for d := found; d > 0; d-- {
		snap := trace[d]
		at := func(k int) int { return int(snap[k+d+1]) }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, op{' ', oa + x, ob + y})
		}
		if x == px {
			y--
			rev = append(rev, op{'+', oa + x, ob + y})
		} else {
			x--
			rev = append(rev, op{'-', oa + x, ob + y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, op{' ', oa + x, ob + y})
	}
	ops := make([]op, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

func replaceAll(n, m, oa, ob int) []op {
	ops := make([]op, 0, n+m)
	for i := 0; i < n; i++ {
		ops = append(ops, op{'-', oa + i, ob})
	}
	for j := 0; j < m; j++ {
		ops = append(ops, op{'+', oa + n, ob + j})
	}
	return ops
}

// writeHunks groups ops into hunks with diffContext lines of context.
func writeHunks(out *strings.Builder, a, b []string, ops []op) {
	i := 0
	for i < len(ops) {
		// Find the next change.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			return
		}
		start := max(i-diffContext, 0)
		for start > 0 && ops[start-1].kind != ' ' {
			start--
		}
		// Extend while changes are separated by at most 2*context lines.
		end := i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			same := 0
			for end+same < len(ops) && ops[end+same].kind == ' ' {
				same++
			}
			if end+same == len(ops) || same > 2*diffContext {
				end += min(same, diffContext)
				break
			}
			end += same
		}
		hunk := ops[start:end]
		aStart, bStart, aLen, bLen := hunkRange(hunk)
		fmt.Fprintf(out, "@@ -%s +%s @@\n", rangeStr(aStart, aLen), rangeStr(bStart, bLen))
		for _, o := range hunk {
			var line string
			switch o.kind {
			case ' ', '-':
				line = a[o.a]
			default:
				line = b[o.b]
			}
			out.WriteByte(o.kind)
			out.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
}

// hunkRange returns the 0-based starts and the lengths of a hunk on each side.
func hunkRange(h []op) (aStart, bStart, aLen, bLen int) {
	aStart, bStart = -1, -1
	for _, o := range h {
		if o.kind != '+' {
			if aStart < 0 {
				aStart = o.a
			}
			aLen++
		}
		if o.kind != '-' {
			if bStart < 0 {
				bStart = o.b
			}
			bLen++
		}
	}
	if aStart < 0 {
		aStart = h[0].a
	}
	if bStart < 0 {
		bStart = h[0].b
	}
	return
}

// rangeStr formats a hunk range the way GNU diff does: 1-based start, the
// count omitted when 1, and the start being the line before when empty.
func rangeStr(start0, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start0)
	case 1:
		return fmt.Sprintf("%d", start0+1)
	}
	return fmt.Sprintf("%d,%d", start0+1, n)
}
