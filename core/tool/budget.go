package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dsh-dev/dsh/core/event"
)

// OutputBudget is the most text one tool result gives the model, in bytes
// (48 KiB, about 12k tokens). Every tool fits its own output into it, and
// FitResult holds every other result (MCP tools, subagents) to the same
// number, so nothing is cut a second time after a tool has said what it
// shows. The figure follows the field: opencode keeps 50 KB, gemini-cli
// 40,000 characters; well under any context window, big enough for a
// 1,000-line source file.
const OutputBudget = 48 << 10

// SpillMaxBytes bounds one spill file: read's file size limit, so every
// spill file can be paged. Output past it is counted and said, not kept,
// so a command printing forever cannot fill the disk.
const SpillMaxBytes = readMaxFileSize

// spillDirName is the folder of spill files inside a session's directory.
const spillDirName = "spill"

// Spill is a session's store of outputs too large for one result: each is
// kept whole in a file under the session's directory, and the result names
// the file so the model can page it with read (offset/limit) or search it
// with grep, without asking, in every permission mode. The files live and
// die with the session's directory. Safe for concurrent use.
type Spill struct {
	dir string // absolute, symlinks resolved
	mu  sync.Mutex
	n   int
}

// NewSpill returns the spill store of a session whose directory is
// sessionDir. Nothing is created until a first output overflows.
func NewSpill(sessionDir string) *Spill {
	dir := filepath.Join(sessionDir, spillDirName)
	if r, err := Resolve("/", dir); err == nil {
		dir = r
	}
	return &Spill{dir: dir}
}

// Dir is the folder the spill files go to.
func (s *Spill) Dir() string { return s.dir }

// Owns reports whether path (absolute, resolved) is an existing spill file
// of this session: a regular file directly inside its spill folder. Other
// sessions' spill files are not owned.
func (s *Spill) Owns(path string) bool {
	if s == nil || s.dir == "" || filepath.Dir(path) != s.dir {
		return false
	}
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// create opens a new spill file whose name starts with label.
func (s *Spill) create(label string) (*os.File, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("spill folder: %w", err)
	}
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	name := fmt.Sprintf("%s-%d.txt", safeLabel(label), n)
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		// A file of an earlier run of the session may hold the name.
		f, err = os.CreateTemp(s.dir, safeLabel(label)+"-*.txt")
	}
	if err != nil {
		return nil, fmt.Errorf("spill file: %w", err)
	}
	return f, nil
}

// safeLabel keeps a label usable as a file name.
func safeLabel(label string) string {
	var b strings.Builder
	for _, r := range label {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "output"
	}
	return b.String()
}

// SpillWriter receives a whole output as it is produced. The first
// OutputBudget bytes stay in memory; at the first byte past them a spill
// file is created and everything goes there, up to SpillMaxBytes. Writes
// never fail (a command must not die because its copy could not be kept);
// Close says what happened.
type SpillWriter struct {
	s     *Spill
	label string

	mu    sync.Mutex
	buf   []byte
	f     *os.File
	kept  int64
	total int64
	err   error
}

// Writer returns a SpillWriter whose file, if one is needed, is named
// after label (a call id, a job id). A nil Spill gives a writer that only
// counts.
func (s *Spill) Writer(label string) *SpillWriter {
	return &SpillWriter{s: s, label: label}
}

func (w *SpillWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.total += int64(n)
	if w.err != nil || w.s == nil {
		return n, nil
	}
	if w.f == nil {
		if len(w.buf)+len(p) <= OutputBudget {
			w.buf = append(w.buf, p...)
			return n, nil
		}
		f, err := w.s.create(w.label)
		if err != nil {
			w.err = err
			return n, nil
		}
		w.f = f
		if !w.writeFile(w.buf) {
			return n, nil
		}
		w.buf = nil
	}
	w.writeFile(p)
	return n, nil
}

// writeFile appends to the spill file within SpillMaxBytes.
func (w *SpillWriter) writeFile(p []byte) bool {
	room := SpillMaxBytes - w.kept
	if room <= 0 {
		return false
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	k, err := w.f.Write(p)
	w.kept += int64(k)
	if err != nil {
		w.err = fmt.Errorf("spill file: %w", err)
		return false
	}
	return true
}

// Spilled is what a SpillWriter kept.
type Spilled struct {
	Path  string // "" when the output fit in memory or could not be kept
	Kept  int64  // bytes in the file
	Total int64  // bytes written
	Err   error  // why the output could not be kept, if it could not
}

// Close closes the spill file, if any, and says where the output is.
func (w *SpillWriter) Close() Spilled {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := Spilled{Kept: w.kept, Total: w.total, Err: w.err}
	if w.f != nil {
		out.Path = w.f.Name()
		if err := w.f.Close(); err != nil && out.Err == nil {
			out.Err = fmt.Errorf("spill file: %w", err)
		}
		w.f = nil
	}
	return out
}

// Note is the sentence a result ends with when its output was spilled:
// where the whole output is and how to page it.
func (s Spilled) Note() string {
	switch {
	case s.Path != "" && s.Kept < s.Total:
		return fmt.Sprintf("[the first %d of %d bytes of the output are saved in %s; page it with read (offset/limit) or search it with grep]", s.Kept, s.Total, s.Path)
	case s.Path != "":
		return fmt.Sprintf("[the whole output (%d bytes) is saved in %s; page it with read (offset/limit) or search it with grep]", s.Total, s.Path)
	case s.Err != nil:
		return fmt.Sprintf("[the whole output could not be saved: %v]", s.Err)
	}
	return ""
}

// FitText fits text into OutputBudget for the call env runs. Text that
// fits comes back unchanged. Longer text is saved whole in a spill file of
// the session; the returned text keeps its first and last lines, says
// which lines are not shown, and names the file with the read call that
// shows them. The second result reports the cut.
func FitText(env *Env, text string) (string, bool) {
	if len(text) <= OutputBudget {
		return text, false
	}
	var sp *Spill
	label := "output"
	if env != nil {
		sp = env.Spill
		if env.CallID != "" {
			label = env.CallID
		}
	}
	saved := Spilled{Total: int64(len(text)), Err: fmt.Errorf("this session keeps no spill files")}
	if sp != nil {
		w := sp.Writer(label)
		_, _ = w.Write([]byte(text))
		saved = w.Close()
	}
	return cutLines(text, saved), true
}

// cutLines keeps the head and tail lines of text within OutputBudget and
// says, by line number, what the spill file holds in between.
func cutLines(text string, saved Spilled) string {
	const noteRoom = 1024
	headMax := (OutputBudget - noteRoom) * 2 / 3
	tailMax := OutputBudget - noteRoom - headMax
	head := text[:headMax]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i+1]
	} else {
		head = string(trimRuneEnd([]byte(head)))
	}
	tail := text[len(text)-tailMax:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	} else {
		tail = string(trimRuneStart([]byte(tail)))
	}
	totalLines := lineCount(text)
	headLines := strings.Count(head, "\n")
	tailLines := lineCount(tail)
	first, last := headLines+1, totalLines-tailLines
	var b strings.Builder
	b.Grow(len(head) + len(tail) + noteRoom)
	b.WriteString(head)
	if !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	hidden := len(text) - len(head) - len(tail)
	if saved.Path != "" {
		fmt.Fprintf(&b, "[... lines %d-%d (%d bytes) of %d not shown; the whole output is saved in %s: read it with file_path %q, offset %d to see them, or search it with grep ...]\n",
			first, last, hidden, totalLines, saved.Path, saved.Path, first)
	} else {
		fmt.Fprintf(&b, "[... lines %d-%d (%d bytes) of %d not shown; %s ...]\n", first, last, hidden, totalLines, strings.Trim(saved.Note(), "[]"))
	}
	b.WriteString(tail)
	return b.String()
}

// FitResult holds a result's text to OutputBudget (FitText over its text
// blocks together; images and other blocks are kept as they are). The
// loop applies it to every result, so a tool that bounds its own output
// is never cut again, and one that does not (an MCP tool, a subagent) is
// bounded the same way with nothing lost.
func FitResult(env *Env, r Result) Result {
	total, texts := 0, 0
	for _, b := range r.Content {
		if b.Type == event.BlockText {
			total += len(b.Text)
			texts++
		}
	}
	if total <= OutputBudget {
		return r
	}
	fitted, _ := FitText(env, event.JoinText(r.Content))
	out := make([]event.ContentBlock, 0, len(r.Content)-texts+1)
	placed := false
	for _, b := range r.Content {
		if b.Type != event.BlockText {
			out = append(out, b)
			continue
		}
		if !placed {
			out = append(out, event.Text(fitted))
			placed = true
		}
	}
	r.Content = out
	if r.Meta != nil {
		m := *r.Meta
		m.Truncated = true
		r.Meta = &m
	}
	return r
}
