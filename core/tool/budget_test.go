package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// withSpill gives a test env a session directory with a spill store.
func withSpill(t *testing.T, te *testEnv) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(te.ws), "session")
	te.Spill = NewSpill(dir)
	return dir
}

var numbered = regexp.MustCompile(`(?m)^ *(\d+)\t(.*)$`)

// TestReadCutFooterIsTrue reads a file far larger than the budget page by
// page: every printed line number carries that line of the file, the
// footer names exactly the last line shown, and following the footer's
// offset visits every line once.
func TestReadCutFooterIsTrue(t *testing.T) {
	te := newTestEnv(t)
	var b strings.Builder
	const total = 3000
	for i := 1; i <= total; i++ {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("x", i%120))
	}
	te.file(t, "big.txt", b.String())
	footer := regexp.MustCompile(`showing lines (\d+)-(\d+) of 3000 \(the output budget of \d+ KB is full\); use offset=(\d+) to read on`)
	next, pages := 1, 0
	for next <= total {
		r := call(t, tRead, te.Env, obj{"file_path": "big.txt", "offset": next})
		out := mustOK(t, r)
		if len(out) > OutputBudget {
			t.Fatalf("page of %d bytes is over the budget", len(out))
		}
		if fit := FitResult(te.Env, r); text(fit) != out {
			t.Fatal("the loop's budget cut a read result again")
		}
		rows := numbered.FindAllStringSubmatch(out, -1)
		for k, row := range rows {
			n, _ := strconv.Atoi(row[1])
			if n != next+k {
				t.Fatalf("row %d has number %d, want %d", k, n, next+k)
			}
			if want := fmt.Sprintf("line %d %s", n, strings.Repeat("x", n%120)); row[2] != want {
				t.Fatalf("line %d shows %q, want %q", n, row[2], want)
			}
		}
		lastShown := next + len(rows) - 1
		if lastShown == total {
			if strings.Contains(out, "showing lines") {
				t.Fatalf("last page still has a footer:\n%s", out[len(out)-200:])
			}
			break
		}
		m := footer.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no true footer on page starting %d:\n%s", next, out[len(out)-300:])
		}
		if m[1] != strconv.Itoa(next) || m[2] != strconv.Itoa(lastShown) || m[3] != strconv.Itoa(lastShown+1) {
			t.Fatalf("footer %q but the page shows lines %d-%d", m[0], next, lastShown)
		}
		next = lastShown + 1
		pages++
	}
	if pages < 3 {
		t.Fatalf("only %d pages: the file should not fit the budget", pages)
	}
}

// TestBashSpillHoldsWholeOutput runs a command whose output is far over the
// budget: the result says which lines it cut and where the whole output is;
// the spill file holds every byte; read pages it without permission.
func TestBashSpillHoldsWholeOutput(t *testing.T) {
	te := newTestEnv(t)
	withSpill(t, te)
	r := call(t, tBash, te.Env, obj{"command": "seq 1 200000", "description": "count"})
	out := mustOK(t, r)
	if len(out) > OutputBudget {
		t.Fatalf("result of %d bytes", len(out))
	}
	m := regexp.MustCompile(`bytes cut: lines (\d+)-(\d+) of 200000 \.\.\.\]`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no line range in the cut:\n%s", out[len(out)-400:])
	}
	pm := regexp.MustCompile(`saved in (\S+); page it`).FindStringSubmatch(out)
	if pm == nil {
		t.Fatalf("no spill path:\n%s", out[len(out)-400:])
	}
	path := pm[1]
	if filepath.Dir(path) != te.Spill.Dir() {
		t.Fatalf("spill file %s is not in %s", path, te.Spill.Dir())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= 200000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if string(data) != want.String() {
		t.Fatalf("spill file holds %d bytes, want %d", len(data), want.Len())
	}
	// Lines the result names as cut are in the spill file at those lines.
	first, _ := strconv.Atoi(m[1])
	acc, err := tRead.Inspect(args(t, obj{"file_path": path}), te.Env)
	if err != nil || !acc.SessionOwned {
		t.Fatalf("read of the session's spill file: owned=%v err=%v", acc.SessionOwned, err)
	}
	page := mustOK(t, call(t, tRead, te.Env, obj{"file_path": path, "offset": first, "limit": 3}))
	contains(t, page, fmt.Sprintf("%6d\t%d\n", first, first), fmt.Sprintf("%6d\t%d\n", first+2, first+2))
	// grep may search it too, without permission.
	gacc, err := tGrep.Inspect(args(t, obj{"pattern": "^199999$", "path": path}), te.Env)
	if err != nil || !gacc.SessionOwned {
		t.Fatalf("grep of the session's spill file: owned=%v err=%v", gacc.SessionOwned, err)
	}
	contains(t, mustOK(t, call(t, tGrep, te.Env, obj{"pattern": "^199999$", "path": path})), ":199999:199999")

	// Another session's spill file is not this session's.
	other := newTestEnv(t)
	withSpill(t, other)
	if acc, _ := tRead.Inspect(args(t, obj{"file_path": path}), other.Env); acc.SessionOwned {
		t.Fatal("another session owns this spill file")
	}
	// A file next to the spill folder is not owned either.
	if te.Spill.Owns(filepath.Join(filepath.Dir(te.Spill.Dir()), "session.jsonl")) {
		t.Fatal("the session log counts as a spill file")
	}
}

func TestBashSmallOutputMakesNoSpillFile(t *testing.T) {
	te := newTestEnv(t)
	withSpill(t, te)
	out := mustOK(t, call(t, tBash, te.Env, obj{"command": "echo hi", "description": "hi"}))
	if strings.Contains(out, "saved in") {
		t.Fatalf("small output spilled: %s", out)
	}
	if _, err := os.Stat(te.Spill.Dir()); !os.IsNotExist(err) {
		t.Fatalf("spill folder created for a small output: %v", err)
	}
}

// TestFitText bounds a text no tool bounded (an MCP result, say).
func TestFitText(t *testing.T) {
	te := newTestEnv(t)
	var b strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&b, "row %d\n", i)
	}
	big := b.String()
	if got, cut := FitText(te.Env, "small"); got != "small" || cut {
		t.Fatal("small text changed")
	}
	// No spill store: the cut says the output could not be kept.
	got, cut := FitText(te.Env, big)
	if !cut || len(got) > OutputBudget || !strings.Contains(got, "could not be saved") {
		t.Fatalf("cut=%v len=%d\n%s", cut, len(got), got[len(got)/2:len(got)/2+300])
	}
	withSpill(t, te)
	got, _ = FitText(te.Env, big)
	if len(got) > OutputBudget {
		t.Fatalf("fitted text is %d bytes", len(got))
	}
	m := regexp.MustCompile(`lines (\d+)-(\d+) \(\d+ bytes\) of 20000 not shown; the whole output is saved in (\S+):`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no note:\n%s", got)
	}
	first, _ := strconv.Atoi(m[1])
	last, _ := strconv.Atoi(m[2])
	if !strings.Contains(got, fmt.Sprintf("row %d\n[...", first-1)) || !strings.Contains(got, fmt.Sprintf("...]\nrow %d\n", last+1)) {
		t.Fatalf("the named range %d-%d is not what was cut", first, last)
	}
	data, err := os.ReadFile(m[3])
	if err != nil || string(data) != big {
		t.Fatalf("spill file: %v (%d bytes)", err, len(data))
	}
	// FitResult keeps images and fits the texts together.
	img := event.ContentBlock{Type: event.BlockImage, Attachment: &event.Attachment{AttachmentID: "sha256:x"}}
	r := FitResult(te.Env, Result{Content: []event.ContentBlock{event.Text(big), img, event.Text(big)}, Meta: &event.ToolMeta{Kind: "other"}})
	if len(r.Content) != 2 || r.Content[1].Type != event.BlockImage || len(r.Content[0].Text) > OutputBudget || !r.Meta.Truncated {
		t.Fatalf("FitResult: %d blocks, meta %+v", len(r.Content), r.Meta)
	}
}

func TestSpillWriterBounds(t *testing.T) {
	te := newTestEnv(t)
	withSpill(t, te)
	w := te.Spill.Writer("c/../../x")
	chunk := []byte(strings.Repeat("y", 1<<20))
	for i := 0; i < SpillMaxBytes>>20+2; i++ {
		if n, err := w.Write(chunk); err != nil || n != len(chunk) {
			t.Fatal(n, err)
		}
	}
	s := w.Close()
	if s.Path == "" || filepath.Dir(s.Path) != te.Spill.Dir() || s.Kept != SpillMaxBytes || s.Total != SpillMaxBytes+2<<20 {
		t.Fatalf("%+v", s)
	}
	contains(t, s.Note(), fmt.Sprintf("the first %d of %d bytes", s.Kept, s.Total))
	if SpillMaxBytes > readMaxFileSize {
		t.Fatal("a spill file could be too large for read")
	}
}
