package tool

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// globMaxResults caps the paths glob returns.
const globMaxResults = 100

const globSchema = `{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern matched against paths relative to path, e.g. \"**/*.go\", \"src/**/*.{ts,tsx}\", \"*.md\". * and ? never cross a /; ** matches any number of folders."},"path":{"type":"string","description":"Folder to search in, absolute or relative to the working directory. Default: the working directory."}},"required":["pattern"],"additionalProperties":false}`

const globDescription = `Find files by name pattern. Returns matching file paths, newest first, at most 100. Files excluded by .gitignore and the .git folder are skipped.`

type globTool struct{}

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func (globTool) Name() string            { return "glob" }
func (globTool) Description() string     { return globDescription }
func (globTool) Schema() json.RawMessage { return json.RawMessage(globSchema) }
func (globTool) Kind() Kind              { return KindRead }
func (globTool) ParallelSafe() bool      { return true }

// globPlan is a parsed glob call: where to walk and what to match there.
type globPlan struct {
	base    string // the path argument, resolved
	root    string // base plus the pattern's literal leading folders
	pattern string // the rest of the pattern, relative to root
	glob    *globPattern
}

func (globTool) parse(args json.RawMessage, env *Env) (globPlan, error) {
	var a globArgs
	var pl globPlan
	if err := decodeArgs("glob", args, &a); err != nil {
		return pl, err
	}
	if err := required("glob", "pattern", a.Pattern); err != nil {
		return pl, err
	}
	dir := a.Path
	if dir == "" {
		dir = "."
	}
	base, err := resolveIn(env, dir)
	if err != nil {
		return pl, fmt.Errorf("glob: %w", err)
	}
	pl.base = base
	// Peel the literal leading folders off the pattern (they may climb
	// with ".." or be absolute) so the walk starts where matches can be
	// and the permission gate sees the real folder.
	pat := a.Pattern
	prefix := ""
	if filepath.IsAbs(pat) {
		prefix = "/"
	}
	segs := strings.Split(pat, "/")
	lit := []string{}
	i := 0
	for ; i < len(segs)-1; i++ {
		if strings.ContainsAny(segs[i], `*?[{\`) {
			break
		}
		lit = append(lit, segs[i])
	}
	rest := strings.Join(segs[i:], "/")
	root := base
	if prefix != "" || len(lit) > 0 {
		litPath := filepath.Join(append([]string{prefix}, lit...)...)
		if root, err = Resolve(base, litPath); err != nil {
			return pl, fmt.Errorf("glob: %w", err)
		}
	}
	if rest == "" {
		return pl, fmt.Errorf("invalid arguments for glob: pattern %q names a folder, not files; add a file pattern such as %q", a.Pattern, strings.TrimSuffix(a.Pattern, "/")+"/**/*")
	}
	g, err := compileGlob(rest)
	if err != nil {
		return pl, fmt.Errorf("invalid arguments for glob: %w", err)
	}
	pl.root, pl.pattern, pl.glob = root, rest, g
	return pl, nil
}

func (t globTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	pl, err := t.parse(args, env)
	if err != nil {
		return Access{}, err
	}
	ws, _ := workspaceOf(env)
	return Access{Paths: []string{pl.root}, Title: "Glob " + filepath.Join(display(ws, pl.root), pl.pattern)}, nil
}

func (t globTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	pl, err := t.parse(args, env)
	if err != nil {
		return ErrorResult(err.Error())
	}
	ws, _ := workspaceOf(env)
	meta := &event.ToolMeta{Kind: "search", Paths: []string{pl.root}}
	fi, err := os.Stat(pl.base)
	switch {
	case err != nil:
		return withMeta(ErrorResult(fmt.Sprintf("folder %s does not exist", display(ws, pl.base))), meta)
	case !fi.IsDir():
		return withMeta(ErrorResult(fmt.Sprintf("%s is a file, not a folder; glob searches folders", display(ws, pl.base))), meta)
	}
	top := &newestHeap{}
	total := 0
	if fi, err := os.Stat(pl.root); err == nil && fi.IsDir() {
		err = walkFiles(ctx, pl.root, pl.glob.maxDepth(), func(e walkEntry) bool {
			rel := e.path[len(pl.root):]
			rel = strings.TrimPrefix(rel, "/")
			if !pl.glob.match(rel) {
				return true
			}
			info, err := e.d.Info()
			if err != nil {
				return true
			}
			if info.Mode()&fs.ModeSymlink != 0 {
				if ti, err := os.Stat(e.path); err != nil || ti.IsDir() {
					return true
				}
			}
			total++
			heap.Push(top, globHit{path: e.path, mtime: info.ModTime()})
			if top.Len() > globMaxResults {
				heap.Pop(top)
			}
			return true
		})
		if err != nil {
			return withMeta(ErrorResult(fmt.Sprintf("glob was cancelled: %v", err)), meta)
		}
	}
	if total == 0 {
		return withMeta(TextResult(fmt.Sprintf("No files match %q in %s.", pl.pattern, display(ws, pl.root))), meta)
	}
	hits := []globHit(*top)
	sort.Slice(hits, func(i, j int) bool { return newer(hits[i], hits[j]) })
	var b strings.Builder
	for _, h := range hits {
		b.WriteString(display(ws, h.path))
		b.WriteByte('\n')
	}
	if total > len(hits) {
		meta.Truncated = true
		fmt.Fprintf(&b, "(showing the %d newest of %d matching files; narrow the pattern or path to see the others)\n", len(hits), total)
	}
	return withMeta(TextResult(b.String()), meta)
}

type globHit struct {
	path  string
	mtime time.Time
}

// newer orders newest first, then by path for a stable answer.
func newer(a, b globHit) bool {
	if !a.mtime.Equal(b.mtime) {
		return a.mtime.After(b.mtime)
	}
	return a.path < b.path
}

// newestHeap keeps the N newest hits: its root is the oldest kept.
type newestHeap []globHit

func (h newestHeap) Len() int           { return len(h) }
func (h newestHeap) Less(i, j int) bool { return newer(h[j], h[i]) }
func (h newestHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *newestHeap) Push(x any)        { *h = append(*h, x.(globHit)) }
func (h *newestHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
