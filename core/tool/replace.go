package tool

import (
	"fmt"
	"strings"
)

// An edit's old_string is looked for in steps, each more forgiving than the
// last, and each held to the same rule: one place (or replace_all), never a
// guess between two. A model that copies a block from read's output gets
// the trailing spaces or the indentation slightly wrong more often than it
// gets the words wrong (codex seeks exact, then rstrip, then trim; opencode
// and gemini-cli chain similar replacers).
const (
	matchExact       = "exact"
	matchLineEndings = "line endings normalised"
	matchTrailing    = "trailing whitespace ignored"
	matchIndent      = "indentation adjusted"
)

// span is one place old_string matched: content[start:end] is replaced by
// repl.
type span struct {
	start, end int
	repl       string
}

// editSpec is one replacement.
type editSpec struct {
	Old, New   string
	ReplaceAll bool
}

// replaceError is a failed edit: its text goes to the model.
type replaceError struct{ msg string }

func (e *replaceError) Error() string { return e.msg }

// applyEdit performs one edit on content. It returns the new content, the
// number of places replaced and how they were matched.
func applyEdit(content string, e editSpec, shown string) (string, int, string, error) {
	spans, how, err := locate(content, e, shown)
	if err != nil {
		return "", 0, "", err
	}
	var b strings.Builder
	b.Grow(len(content) + len(spans)*(len(e.New)-len(e.Old)+16))
	at := 0
	for _, s := range spans {
		b.WriteString(content[at:s.start])
		b.WriteString(s.repl)
		at = s.end
	}
	b.WriteString(content[at:])
	return b.String(), len(spans), how, nil
}

// locate finds where e applies in content, step by step.
func locate(content string, e editSpec, shown string) ([]span, string, error) {
	crlf := strings.Contains(content, "\r\n")
	var lines []fileLine // indexed once, by the first step that needs them
	lineIndex := func() []fileLine {
		if lines == nil {
			lines = indexLines(content)
		}
		return lines
	}
	steps := []struct {
		how  string
		find func() []span
	}{
		{matchExact, func() []span { return exactSpans(content, e.Old, e.New) }},
		{matchLineEndings, func() []span {
			old, repl := toLF(e.Old), toLF(e.New)
			if crlf {
				old, repl = toCRLF(old), toCRLF(repl)
			}
			if old == e.Old {
				return nil // nothing normalised: the exact step said it all
			}
			return exactSpans(content, old, repl)
		}},
		{matchTrailing, func() []span { return lineSpans(content, lineIndex(), e, crlf, false) }},
		{matchIndent, func() []span { return lineSpans(content, lineIndex(), e, crlf, true) }},
	}
	for _, st := range steps {
		spans := st.find()
		switch {
		case len(spans) == 0:
			continue
		case len(spans) > 1 && !e.ReplaceAll:
			with := ""
			if st.how != matchExact {
				with = " with " + st.how
			}
			return nil, "", &replaceError{fmt.Sprintf("old_string occurs %d times in %s%s (at %s); include more surrounding lines to make it unique, or set replace_all to replace every occurrence",
				len(spans), shown, with, places(content, spans))}
		}
		return spans, st.how, nil
	}
	return nil, "", &replaceError{missMessage(content, lineIndex(), e.Old, shown)}
}

// exactSpans are the non-overlapping occurrences of old.
func exactSpans(content, old, repl string) []span {
	if old == "" {
		return nil
	}
	var out []span
	for at := 0; ; {
		i := strings.Index(content[at:], old)
		if i < 0 {
			return out
		}
		out = append(out, span{start: at + i, end: at + i + len(old), repl: repl})
		at += i + len(old)
	}
}

func toLF(s string) string   { return strings.ReplaceAll(s, "\r\n", "\n") }
func toCRLF(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// fileLine is one line of a file with its byte range (text without its
// line ending).
type fileLine struct {
	start, end int // end excludes "\r\n" or "\n"
	next       int // start of the next line
}

func indexLines(content string) []fileLine {
	var out []fileLine
	for at := 0; at < len(content); {
		i := strings.IndexByte(content[at:], '\n')
		if i < 0 {
			out = append(out, fileLine{start: at, end: len(content), next: len(content)})
			break
		}
		end := at + i
		if end > at && content[end-1] == '\r' {
			end--
		}
		out = append(out, fileLine{start: at, end: end, next: at + i + 1})
		at += i + 1
	}
	return out
}

// oldLines splits old_string into lines (line endings dropped), and says
// whether it ended with a line ending.
func oldLines(s string) ([]string, bool) {
	s = toLF(s)
	nl := strings.HasSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n"), nl
}

// lineSpans matches old_string line by line, ignoring the trailing
// whitespace of each line and, with indent, a uniform difference of leading
// indentation (the replacement is then re-indented by the same offset).
func lineSpans(content string, lines []fileLine, e editSpec, crlf, indent bool) []span {
	want, endsNL := oldLines(e.Old)
	if len(want) == 0 || strings.TrimSpace(strings.Join(want, "")) == "" {
		return nil
	}
	n := len(want)
	var wantCmp []string
	var wantIndent string
	if indent {
		wantIndent = commonIndent(want)
		wantCmp = dedent(want, wantIndent)
	} else {
		wantCmp = rstripAll(want)
	}
	// A cheap test of the first line skips almost every window.
	firstWant := strings.TrimSpace(want[0])
	var out []span
	for i := 0; i+n <= len(lines); i++ {
		if strings.TrimSpace(content[lines[i].start:lines[i].end]) != firstWant {
			continue
		}
		got := make([]string, n)
		for k := 0; k < n; k++ {
			got[k] = content[lines[i+k].start:lines[i+k].end]
		}
		var haveIndent string
		var gotCmp []string
		if indent {
			haveIndent = commonIndent(got)
			gotCmp = dedent(got, haveIndent)
		} else {
			gotCmp = rstripAll(got)
		}
		if !equalLines(gotCmp, wantCmp) {
			continue
		}
		repl := toLF(e.New)
		if indent {
			repl = reindent(repl, wantIndent, haveIndent)
		}
		end := lines[i+n-1].end
		if endsNL {
			end = lines[i+n-1].next
		} else {
			repl = strings.TrimSuffix(repl, "\n")
		}
		if crlf {
			repl = toCRLF(repl)
		}
		out = append(out, span{start: lines[i].start, end: end, repl: repl})
		i += n - 1 // non-overlapping
	}
	return out
}

func rstripAll(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.TrimRight(l, " \t\r")
	}
	return out
}

func equalLines(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// commonIndent is the longest run of leading spaces and tabs shared by all
// non-blank lines.
func commonIndent(ls []string) string {
	first := true
	var ind string
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			ind, first = lead, false
			continue
		}
		k := 0
		for k < len(ind) && k < len(lead) && ind[k] == lead[k] {
			k++
		}
		ind = ind[:k]
	}
	return ind
}

// dedent removes ind from each line and trailing whitespace; blank lines
// become empty.
func dedent(ls []string, ind string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		l = strings.TrimRight(l, " \t\r")
		out[i] = strings.TrimPrefix(l, ind)
	}
	return out
}

// reindent moves each line of s from indentation from to indentation to.
func reindent(s, from, to string) string {
	if from == to {
		return s
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ls[i] = to + strings.TrimPrefix(l, from)
	}
	return strings.Join(ls, "\n")
}

// places names where spans start, by line, for a refusal.
func places(content string, spans []span) string {
	var parts []string
	for i, s := range spans {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(spans)-5))
			break
		}
		first := strings.Count(content[:s.start], "\n") + 1
		last := first + strings.Count(strings.TrimSuffix(content[s.start:s.end], "\n"), "\n")
		if last > first {
			parts = append(parts, fmt.Sprintf("lines %d-%d", first, last))
		} else {
			parts = append(parts, fmt.Sprintf("line %d", first))
		}
	}
	return strings.Join(parts, ", ")
}

// Limits of the closest-block search of a miss.
const (
	missMaxShown = 30        // lines of the closest block shown
	missMaxWork  = 4_000_000 // line comparisons; past it only first lines are compared
)

// missMessage says old_string was not found and shows the block of the file
// most like it, numbered as read numbers lines, so the model can copy the
// real text.
func missMessage(content string, lines []fileLine, old, shown string) string {
	msg := fmt.Sprintf("old_string was not found in %s, not even ignoring line endings, trailing whitespace and indentation", shown)
	want, _ := oldLines(old)
	if len(lines) == 0 {
		return msg + "; the file is empty"
	}
	n := min(len(want), len(lines))
	cheap := len(lines)*n > missMaxWork
	best, bestScore := -1, 0.0
	for i := 0; i+n <= len(lines); i++ {
		score := 0.0
		for k := 0; k < n; k++ {
			if cheap && k > 0 {
				break
			}
			score += similarity(strings.TrimSpace(content[lines[i+k].start:lines[i+k].end]), strings.TrimSpace(want[k]))
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	compared := n
	if cheap {
		compared = 1
	}
	if best < 0 || bestScore < 0.3*float64(compared) {
		return msg + ", and no part of the file looks like it; read the file again and copy the text exactly"
	}
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString(". The closest block of the file is (line number, a tab, then the line):\n")
	for k := best; k < best+n && k < best+missMaxShown; k++ {
		line, _ := cutLine(content[lines[k].start:lines[k].end], readMaxLineChars)
		fmt.Fprintf(&b, "%6d\t%s\n", k+1, line)
	}
	if n > missMaxShown {
		fmt.Fprintf(&b, "(and %d more lines)\n", n-missMaxShown)
	}
	b.WriteString("Copy old_string from the file as it is (without the line-number prefixes) and retry.")
	return b.String()
}

// similarity of two lines in [0,1]: the share of the longer one covered by
// their common prefix and suffix. Cheap (linear), and enough to find the
// block a model meant.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	m := max(len(a), len(b))
	if m == 0 {
		return 1
	}
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return float64(p+s) / float64(m)
}
