package tool

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

// Limits of grep.
const (
	grepMaxMatches   = 100  // matching lines shown by default
	grepMaxLimit     = 1000 // the most limit may ask for
	grepMaxContext   = 20   // lines of context each side, at most
	grepMaxLineChars = 2000
)

const grepSchema = `{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression in RE2 syntax (Go regexp), matched against each line, e.g. \"func\\s+main\", \"TODO|FIXME\". Use (?i) for case-insensitive search."},"path":{"type":"string","description":"File or folder to search, absolute or relative to the working directory. Default: the working directory."},"include":{"type":"string","description":"Only search files whose name matches this glob, e.g. \"*.go\" or \"*.{ts,tsx}\". A glob containing / is matched against the path relative to path."},"fixed_strings":{"type":"boolean","description":"Match pattern as a literal string, not a regular expression. Default false."},"context":{"type":"integer","minimum":0,"maximum":20,"description":"Lines of context to show before and after each match (like grep -C). Default 0."},"before":{"type":"integer","minimum":0,"maximum":20,"description":"Lines of context before each match (like grep -B); overrides context."},"after":{"type":"integer","minimum":0,"maximum":20,"description":"Lines of context after each match (like grep -A); overrides context."},"limit":{"type":"integer","minimum":1,"maximum":1000,"description":"Most matching lines to show. Default 100."}},"required":["pattern"],"additionalProperties":false}`

const grepDescription = `Search file contents with a regular expression (or a literal string with fixed_strings). Returns matching lines as path:line:text, sorted by path and line number, at most 100 unless limit says otherwise, and says when it cut. With context, before or after, the lines around each match are shown as path-line-text, groups separated by --. Files excluded by .gitignore, the .git folder and binary files are skipped.`

// grepForceGo makes grep use its Go engine even when rg is on PATH
// (tests compare both engines).
var grepForceGo = false

type grepTool struct{}

type grepArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Include string `json:"include"`
	Fixed   bool   `json:"fixed_strings"`
	Context *int   `json:"context"`
	Before  *int   `json:"before"`
	After   *int   `json:"after"`
	Limit   *int   `json:"limit"`
}

func (grepTool) Name() string            { return "grep" }
func (grepTool) Description() string     { return grepDescription }
func (grepTool) Schema() json.RawMessage { return json.RawMessage(grepSchema) }
func (grepTool) Kind() Kind              { return KindRead }
func (grepTool) ParallelSafe() bool      { return true }

// grepQuery is a validated grep call.
type grepQuery struct {
	re      *regexp.Regexp
	pattern string
	root    string // resolved file or folder
	include *globPattern
	inclRaw string
	inclRel bool // include has a "/": match the path relative to root
	before  int  // context lines
	after   int
	limit   int // matching lines shown
}

func (grepTool) parse(args json.RawMessage, env *Env) (grepQuery, error) {
	var a grepArgs
	var q grepQuery
	if err := decodeArgs("grep", args, &a); err != nil {
		return q, err
	}
	if err := required("grep", "pattern", a.Pattern); err != nil {
		return q, err
	}
	expr := a.Pattern
	if a.Fixed {
		expr = regexp.QuoteMeta(a.Pattern)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return q, fmt.Errorf("invalid arguments for grep: invalid regular expression (RE2 syntax): %v; set fixed_strings to search for it literally", err)
	}
	num := func(name string, v *int, def, lo, hi int) (int, error) {
		if v == nil {
			return def, nil
		}
		if *v < lo || *v > hi {
			return 0, fmt.Errorf("invalid arguments for grep: %s must be from %d to %d, got %d", name, lo, hi, *v)
		}
		return *v, nil
	}
	ctxLines, err := num("context", a.Context, 0, 0, grepMaxContext)
	if err != nil {
		return q, err
	}
	if q.before, err = num("before", a.Before, ctxLines, 0, grepMaxContext); err != nil {
		return q, err
	}
	if q.after, err = num("after", a.After, ctxLines, 0, grepMaxContext); err != nil {
		return q, err
	}
	if q.limit, err = num("limit", a.Limit, grepMaxMatches, 1, grepMaxLimit); err != nil {
		return q, err
	}
	dir := a.Path
	if dir == "" {
		dir = "."
	}
	root, err := resolveIn(env, dir)
	if err != nil {
		return q, fmt.Errorf("grep: %w", err)
	}
	q.re, q.pattern, q.root, q.inclRaw = re, expr, root, a.Include
	if a.Include != "" {
		g, err := compileGlob(a.Include)
		if err != nil {
			return q, fmt.Errorf("invalid arguments for grep: include: %w", err)
		}
		q.include = g
		q.inclRel = strings.Contains(strings.Trim(a.Include, "/"), "/")
	}
	return q, nil
}

func (t grepTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	q, err := t.parse(args, env)
	if err != nil {
		return Access{}, err
	}
	ws, _ := workspaceOf(env)
	return Access{Paths: []string{q.root}, Title: fmt.Sprintf("Grep %q in %s", q.pattern, display(ws, q.root)), SessionOwned: env.Spill.Owns(q.root)}, nil
}

func (t grepTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	q, err := t.parse(args, env)
	if err != nil {
		return ErrorResult(err.Error())
	}
	ws, _ := workspaceOf(env)
	meta := &event.ToolMeta{Kind: "search", Paths: []string{q.root}}
	fi, err := os.Stat(q.root)
	if err != nil {
		return withMeta(ErrorResult(fmt.Sprintf("%s does not exist", display(ws, q.root))), meta)
	}
	col := newGrepCollector(ws)
	col.max = q.limit
	switch {
	case !fi.IsDir():
		// One named file: searched even if ignored, like rg does.
		if fi.Mode().IsRegular() && q.includes(q.root, filepath.Dir(q.root)) {
			err = grepFile(ctx, q.re, q.root, col)
		}
	case grepForceGo:
		err = grepGo(ctx, q, col)
	default:
		err = grepRipgrep(ctx, q, col)
		if err == errNoRipgrep {
			err = grepGo(ctx, q, col)
		}
	}
	if err != nil {
		return withMeta(ErrorResult(fmt.Sprintf("grep failed: %v", err)), meta)
	}
	if col.total == 0 {
		where := display(ws, q.root)
		if q.inclRaw != "" {
			where += fmt.Sprintf(" (files matching %q)", q.inclRaw)
		}
		return withMeta(TextResult(fmt.Sprintf("No matches for /%s/ in %s.", q.pattern, where)), meta)
	}
	var text string
	var truncated bool
	if q.before > 0 || q.after > 0 {
		text, truncated = col.renderContext(ctx, q.before, q.after)
	} else {
		text, truncated = col.render()
	}
	text, cut := FitText(env, text)
	meta.Truncated = truncated || cut
	return withMeta(TextResult(text), meta)
}

// includes applies the include glob to an absolute file path.
func (q grepQuery) includes(abs, root string) bool {
	if q.include == nil {
		return true
	}
	if q.inclRel {
		rel, ok := relUnder(root, abs)
		return ok && q.include.match(rel)
	}
	return q.include.match(filepath.Base(abs))
}

// grepGo is the Go engine: the same walk as glob (gitignore, no .git, no
// symlinks), binary files skipped.
func grepGo(ctx context.Context, q grepQuery, col *grepCollector) error {
	err := walkFiles(ctx, q.root, -1, func(e walkEntry) bool {
		if !e.d.Type().IsRegular() || !q.includes(e.path, q.root) {
			return true
		}
		return grepFile(ctx, q.re, e.path, col) == nil
	})
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// grepFile searches one file line by line. A file with a NUL byte is
// binary: its matches are dropped.
func grepFile(ctx context.Context, re *regexp.Regexp, path string, col *grepCollector) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil // unreadable: skipped, like rg
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	// Lines of one file arrive in order, so at most the first limit of
	// them can be kept; the rest are only counted.
	var pending []grepHit
	extra := 0
	var line []byte
	n := 0
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(line) > 0 {
			n++
			text := bytes.TrimSuffix(line, []byte("\n"))
			if bytes.IndexByte(text, 0) >= 0 {
				return nil // binary
			}
			if re.Match(text) {
				if len(pending) < col.limit() {
					pending = append(pending, grepHit{path: path, abs: path, line: n, text: hitText(text)})
				} else {
					extra++
				}
			}
			line = line[:0]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil
		}
	}
	for _, h := range pending {
		col.add(h)
	}
	col.total += extra
	return nil
}

// hitText is the shown text of a matching line: no CR, cut at
// grepMaxLineChars characters.
func hitText(line []byte) string {
	s, _ := cutLine(string(bytes.TrimSuffix(line, []byte("\r"))), grepMaxLineChars)
	return s
}

// grepHit is one matching line.
type grepHit struct {
	path string // as shown
	abs  string // absolute
	line int
	text string // the line without its terminator
}

// grepCollector keeps the first max hits (grepMaxMatches unless set) in
// (path, line) order whatever order they arrive in, and counts the rest,
// in bounded memory. Both engines feed it, which is what makes their
// output identical.
type grepCollector struct {
	ws    string
	max   int
	total int
	h     hitHeap
}

func (c *grepCollector) limit() int {
	if c.max > 0 {
		return c.max
	}
	return grepMaxMatches
}

func newGrepCollector(ws string) *grepCollector { return &grepCollector{ws: ws} }

func (c *grepCollector) add(h grepHit) {
	c.total++
	if h.abs == "" {
		h.abs = h.path
	}
	h.path = display(c.ws, h.abs)
	heap.Push(&c.h, h)
	if c.h.Len() > c.limit() {
		heap.Pop(&c.h)
	}
}

func (c *grepCollector) render() (string, bool) {
	hits := []grepHit(c.h)
	sort.Slice(hits, func(i, j int) bool { return hitLess(hits[i], hits[j]) })
	var b strings.Builder
	for _, h := range hits {
		b.WriteString(h.path)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(h.line))
		b.WriteByte(':')
		b.WriteString(h.text)
		b.WriteByte('\n')
	}
	if c.total > len(hits) {
		fmt.Fprintf(&b, "(showing the first %d of %d matching lines, by path and line; narrow the pattern, path or include, or raise limit, to see the others)\n", len(hits), c.total)
		return b.String(), true
	}
	return b.String(), false
}

func hitLess(a, b grepHit) bool {
	if a.path != b.path {
		return a.path < b.path
	}
	return a.line < b.line
}

// hitHeap is a max-heap on (path, line): its root is the last hit kept.
type hitHeap []grepHit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return hitLess(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(grepHit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// renderContext renders the kept hits with before/after lines of context
// read from their files, grep -C style: "path:line:text" for matches,
// "path-line-text" around them, "--" between groups that do not touch.
func (c *grepCollector) renderContext(ctx context.Context, before, after int) (string, bool) {
	hits := []grepHit(c.h)
	sort.Slice(hits, func(i, j int) bool { return hitLess(hits[i], hits[j]) })
	var b strings.Builder
	first := true
	for i := 0; i < len(hits); {
		j := i
		for j < len(hits) && hits[j].abs == hits[i].abs {
			j++
		}
		file := hits[i:j]
		matched := map[int]bool{}
		for _, h := range file {
			matched[h.line] = true
		}
		// Merge the ranges of this file's hits.
		type rng struct{ from, to int }
		var ranges []rng
		for _, h := range file {
			r := rng{max(1, h.line-before), h.line + after}
			if n := len(ranges); n > 0 && r.from <= ranges[n-1].to+1 {
				ranges[n-1].to = max(ranges[n-1].to, r.to)
				continue
			}
			ranges = append(ranges, r)
		}
		lines := readLineRanges(ctx, file[0].abs, func(n int) bool {
			for _, r := range ranges {
				if n >= r.from && n <= r.to {
					return true
				}
			}
			return false
		}, ranges[len(ranges)-1].to)
		for _, r := range ranges {
			if !first {
				b.WriteString("--\n")
			}
			first = false
			for n := r.from; n <= r.to; n++ {
				text, ok := lines[n]
				if !ok {
					break // past the end of the file
				}
				sep := byte('-')
				if matched[n] {
					sep = ':'
				}
				b.WriteString(file[0].path)
				b.WriteByte(sep)
				b.WriteString(strconv.Itoa(n))
				b.WriteByte(sep)
				b.WriteString(text)
				b.WriteByte('\n')
			}
		}
		i = j
	}
	if c.total > len(hits) {
		fmt.Fprintf(&b, "(showing the first %d of %d matching lines, by path and line, with context; narrow the pattern, path or include, or raise limit, to see the others)\n", len(hits), c.total)
		return b.String(), true
	}
	return b.String(), false
}

// readLineRanges returns the lines of path that want accepts, up to line
// last, as shown text.
func readLineRanges(ctx context.Context, path string, want func(int) bool, last int) map[int]string {
	out := map[int]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var line []byte
	for n := 1; n <= last && ctx.Err() == nil; {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(line) > 0 && want(n) {
			out[n] = hitText(bytes.TrimSuffix(line, []byte("\n")))
		}
		line = line[:0]
		n++
		if err != nil {
			break
		}
	}
	return out
}
