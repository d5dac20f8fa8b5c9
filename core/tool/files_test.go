package tool

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

func TestRead(t *testing.T) {
	te := newTestEnv(t)
	te.file(t, "a.txt", "one\ntwo\nthree\n")
	te.file(t, "noeol.txt", "x\ny")
	te.file(t, "empty.txt", "")
	te.file(t, "long.txt", "short\n"+strings.Repeat("é", 2500)+"\n")
	te.file(t, "bin.dat", "abc\x00def")
	if err := os.Mkdir(filepath.Join(te.ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	te.file(t, "many.txt", many.String())

	tests := []struct {
		name    string
		args    obj
		wantErr bool
		want    []string
		not     []string
	}{
		{name: "numbered", args: obj{"file_path": "a.txt"}, want: []string{"     1\tone\n     2\ttwo\n     3\tthree\n"}},
		{name: "absolute path", args: obj{"file_path": filepath.Join(te.ws, "a.txt")}, want: []string{"     2\ttwo"}},
		{name: "offset and limit", args: obj{"file_path": "a.txt", "offset": 2, "limit": 1}, want: []string{"     2\ttwo\n", "showing lines 2-2 of 3; use offset=3"}, not: []string{"one", "three"}},
		{name: "offset zero is the start", args: obj{"file_path": "a.txt", "offset": 0}, want: []string{"     1\tone"}},
		{name: "no final newline", args: obj{"file_path": "noeol.txt"}, want: []string{"     2\ty\n"}},
		{name: "empty file", args: obj{"file_path": "empty.txt"}, want: []string{"empty.txt is empty"}},
		{name: "long line cut", args: obj{"file_path": "long.txt"}, want: []string{"[... line cut: 500 more characters]", "1 line(s) longer than 2000 characters were cut"}},
		{name: "2000 lines by default", args: obj{"file_path": "many.txt"}, want: []string{"  2000\tline 2000\n", "showing lines 1-2000 of 2500; use offset=2001"}, not: []string{"line 2001"}},
		{name: "page two", args: obj{"file_path": "many.txt", "offset": 2001}, want: []string{"  2500\tline 2500\n"}, not: []string{"showing"}},
		{name: "missing file", args: obj{"file_path": "nope.txt"}, wantErr: true, want: []string{"nope.txt does not exist"}},
		{name: "directory", args: obj{"file_path": "dir"}, wantErr: true, want: []string{"dir is a directory, not a file"}},
		{name: "binary", args: obj{"file_path": "bin.dat"}, wantErr: true, want: []string{"bin.dat is a binary file"}},
		{name: "offset past end", args: obj{"file_path": "a.txt", "offset": 9}, wantErr: true, want: []string{"offset 9 is past the end of a.txt, which has 3 lines"}},
		{name: "no file_path", args: obj{}, wantErr: true, want: []string{"file_path is required"}},
		{name: "negative offset", args: obj{"file_path": "a.txt", "offset": -1}, wantErr: true, want: []string{"offset must be a line number from 1"}},
		{name: "zero limit", args: obj{"file_path": "a.txt", "limit": 0}, wantErr: true, want: []string{"limit must be at least 1"}},
		{name: "wrong type", args: obj{"file_path": 7}, wantErr: true, want: []string{"file_path must be a string"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tRead, te.Env, tc.args)
			if tc.wantErr != r.IsError {
				t.Fatalf("IsError=%v, want %v: %s", r.IsError, tc.wantErr, text(r))
			}
			contains(t, text(r), tc.want...)
			for _, n := range tc.not {
				if strings.Contains(text(r), n) {
					t.Fatalf("output contains %q:\n%s", n, text(r))
				}
			}
		})
	}
	if r := call(t, tRead, te.Env, obj{"file_path": "a.txt"}); r.Meta == nil || r.Meta.Kind != "read" || r.Meta.Paths[0] != filepath.Join(te.ws, "a.txt") {
		t.Fatalf("meta = %+v", r.Meta)
	}
	if !te.Reads.Seen(filepath.Join(te.ws, "a.txt")) {
		t.Fatal("read did not record the file in the tracker")
	}
	if _, err := tRead.Inspect(args(t, "x"), te.Env); err == nil || !strings.Contains(err.Error(), "expected a JSON object") {
		t.Fatalf("non-object arguments: %v", err)
	}
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadImage(t *testing.T) {
	te := newTestEnv(t)
	te.file(t, "pic.png", string(pngBytes(t, 3, 2)))
	te.file(t, "pic.webp", string(webpHeader(5, 7)))

	r := call(t, tRead, te.Env, obj{"file_path": "pic.png"})
	mustErr(t, r, "pic.png is an image (image/png", "cannot view images")

	var saved []byte
	te.ModelImages = true
	te.SaveAttachment = func(mt string, data []byte) (*event.Attachment, error) {
		saved = data
		return &event.Attachment{AttachmentID: "sha256:abc", MediaType: mt, Bytes: int64(len(data))}, nil
	}
	r = call(t, tRead, te.Env, obj{"file_path": "pic.png"})
	mustOK(t, r)
	if len(r.Content) != 2 || r.Content[1].Type != event.BlockImage {
		t.Fatalf("content = %+v", r.Content)
	}
	att := r.Content[1].Attachment
	if att.MediaType != "image/png" || att.Width != 3 || att.Height != 2 || att.AttachmentID != "sha256:abc" || len(saved) == 0 {
		t.Fatalf("attachment = %+v", att)
	}
	r = call(t, tRead, te.Env, obj{"file_path": "pic.webp"})
	mustOK(t, r)
	if a := r.Content[1].Attachment; a.MediaType != "image/webp" || a.Width != 5 || a.Height != 7 {
		t.Fatalf("webp attachment = %+v", a)
	}
	te.SaveAttachment = func(string, []byte) (*event.Attachment, error) { return nil, errors.New("disk full") }
	mustErr(t, call(t, tRead, te.Env, obj{"file_path": "pic.png"}), "could not attach image pic.png: disk full")
}

func TestWrite(t *testing.T) {
	te := newTestEnv(t)
	t.Run("creates file and parents", func(t *testing.T) {
		r := call(t, tWrite, te.Env, obj{"file_path": "new/deep/f.txt", "content": "a\nb\n"})
		contains(t, mustOK(t, r), "Created new/deep/f.txt (2 lines).")
		got, err := os.ReadFile(filepath.Join(te.ws, "new/deep/f.txt"))
		if err != nil || string(got) != "a\nb\n" {
			t.Fatalf("file = %q, %v", got, err)
		}
		d := r.Meta.Diff
		if d == nil || d.OldText != nil || d.NewText != "a\nb\n" || r.Meta.Kind != "edit" {
			t.Fatalf("meta = %+v diff=%+v", r.Meta, d)
		}
		contains(t, d.Unified, "@@ -0,0 +1,2 @@\n+a\n+b\n")
	})
	t.Run("overwrite unread is refused", func(t *testing.T) {
		te.file(t, "old.txt", "old\n")
		mustErr(t, call(t, tWrite, te.Env, obj{"file_path": "old.txt", "content": "new\n"}), "write refused", "has not been read in this session")
	})
	t.Run("overwrite after read keeps mode", func(t *testing.T) {
		p := te.file(t, "script.sh", "echo old\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		mustOK(t, call(t, tRead, te.Env, obj{"file_path": "script.sh"}))
		r := call(t, tWrite, te.Env, obj{"file_path": "script.sh", "content": "echo new\n"})
		contains(t, mustOK(t, r), "Overwrote script.sh (1 lines).")
		if r.Meta.Diff.OldText == nil || *r.Meta.Diff.OldText != "echo old\n" {
			t.Fatalf("diff = %+v", r.Meta.Diff)
		}
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o755 {
			t.Fatalf("mode = %v", fi.Mode())
		}
		// Its own write counts as seen: a second write needs no read.
		mustOK(t, call(t, tWrite, te.Env, obj{"file_path": "script.sh", "content": "echo newer\n"}))
	})
	t.Run("stale read is refused", func(t *testing.T) {
		p := te.file(t, "stale.txt", "v1\n")
		mustOK(t, call(t, tRead, te.Env, obj{"file_path": "stale.txt"}))
		if err := os.WriteFile(p, []byte("v2 by someone else\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustErr(t, call(t, tWrite, te.Env, obj{"file_path": "stale.txt", "content": "mine\n"}), "has changed on disk since it was last read; read it again")
	})
	t.Run("directory", func(t *testing.T) {
		if err := os.Mkdir(filepath.Join(te.ws, "adir"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustErr(t, call(t, tWrite, te.Env, obj{"file_path": "adir", "content": "x"}), "adir is a directory")
	})
	t.Run("content required", func(t *testing.T) {
		mustErr(t, call(t, tWrite, te.Env, obj{"file_path": "x.txt"}), "content is required")
	})
	t.Run("empty content is a file", func(t *testing.T) {
		contains(t, mustOK(t, call(t, tWrite, te.Env, obj{"file_path": "e.txt", "content": ""})), "Created e.txt (0 lines)")
	})
}

func TestEdit(t *testing.T) {
	te := newTestEnv(t)
	src := "package main\n\nfunc a() {\n\treturn\n}\n\nfunc b() {\n\treturn\n}\n"
	p := te.file(t, "m.go", src)
	te.file(t, "unread.go", "x\n")

	// Before any read.
	mustErr(t, call(t, tEdit, te.Env, obj{"file_path": "m.go", "old_string": "a()", "new_string": "c()"}), "edit refused", "has not been read")
	mustOK(t, call(t, tRead, te.Env, obj{"file_path": "m.go"}))

	tests := []struct {
		name string
		args obj
		want []string
	}{
		{"absent", obj{"file_path": "m.go", "old_string": "zzz", "new_string": "y"}, []string{"old_string was not found in m.go"}},
		{"not unique", obj{"file_path": "m.go", "old_string": "\treturn\n", "new_string": "\treturn // x\n"}, []string{"old_string occurs 2 times in m.go", "replace_all"}},
		{"identical", obj{"file_path": "m.go", "old_string": "a", "new_string": "a"}, []string{"identical"}},
		{"empty old", obj{"file_path": "m.go", "old_string": "", "new_string": "a"}, []string{"old_string is empty"}},
		{"missing new", obj{"file_path": "m.go", "old_string": "a"}, []string{"new_string is required"}},
		{"missing file", obj{"file_path": "nope.go", "old_string": "a", "new_string": "b"}, []string{"nope.go does not exist"}},
		{"directory", obj{"file_path": ".", "old_string": "a", "new_string": "b"}, []string{"is a directory"}},
		{"unread file", obj{"file_path": "unread.go", "old_string": "x", "new_string": "y"}, []string{"unread.go has not been read in this session; read it with the read tool first"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustErr(t, call(t, tEdit, te.Env, tc.args), tc.want...)
		})
	}
	if got, _ := os.ReadFile(p); string(got) != src {
		t.Fatalf("failed edits changed the file: %q", got)
	}

	r := call(t, tEdit, te.Env, obj{"file_path": "m.go", "old_string": "func a() {", "new_string": "func a2() {"})
	out := mustOK(t, r)
	contains(t, out, "Edited m.go: replaced 1 occurrence.", "--- a/m.go\n+++ b/m.go\n@@ -1,6 +1,6 @@\n package main\n \n-func a() {\n+func a2() {\n \treturn\n }\n \n")
	d := r.Meta.Diff
	if d == nil || d.OldText == nil || *d.OldText != src || !strings.Contains(d.NewText, "func a2()") || d.Unified == "" || d.Path != p {
		t.Fatalf("diff meta = %+v", d)
	}
	// A consecutive edit works without a new read.
	mustOK(t, call(t, tEdit, te.Env, obj{"file_path": "m.go", "old_string": "\treturn\n", "new_string": "\treturn // done\n", "replace_all": true}))
	got, _ := os.ReadFile(p)
	if strings.Count(string(got), "// done") != 2 {
		t.Fatalf("replace_all result: %q", got)
	}
	// A change on disk makes the read stale.
	if err := os.WriteFile(p, append(got, "// user\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	mustErr(t, call(t, tEdit, te.Env, obj{"file_path": "m.go", "old_string": "a2", "new_string": "a3"}), "has changed on disk since it was last read; read it again")
	mustOK(t, call(t, tRead, te.Env, obj{"file_path": "m.go"}))
	mustOK(t, call(t, tEdit, te.Env, obj{"file_path": "m.go", "old_string": "a2", "new_string": "a3"}))
}

func TestEditCRLF(t *testing.T) {
	te := newTestEnv(t)
	p := te.file(t, "w.txt", "one\r\ntwo\r\nthree\r\n")
	mustOK(t, call(t, tRead, te.Env, obj{"file_path": "w.txt"}))
	mustOK(t, call(t, tEdit, te.Env, obj{"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}))
	if got, _ := os.ReadFile(p); string(got) != "1\r\n2\r\nthree\r\n" {
		t.Fatalf("got %q", got)
	}
}

// remoteFS is a FileSystem that is not the disk (an editor's buffers): the
// tracker must compare contents, not mtimes.
type remoteFS struct {
	mu    sync.Mutex
	files map[string]string
}

func (f *remoteFS) ReadFile(_ context.Context, p string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.files[p]
	if !ok {
		return nil, fmt.Errorf("buffer %s: %w", p, os.ErrNotExist)
	}
	return []byte(s), nil
}

func (f *remoteFS) WriteFile(_ context.Context, p string, data []byte, _ uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[p] = string(data)
	return nil
}

func TestEditThroughOtherFileSystem(t *testing.T) {
	te := newTestEnv(t)
	p := filepath.Join(te.ws, "buf.go")
	fs := &remoteFS{files: map[string]string{p: "unsaved v1\n"}}
	te.Files = fs
	mustOK(t, call(t, tRead, te.Env, obj{"file_path": "buf.go"}))
	mustOK(t, call(t, tEdit, te.Env, obj{"file_path": "buf.go", "old_string": "v1", "new_string": "v2"}))
	if fs.files[p] != "unsaved v2\n" {
		t.Fatalf("buffer = %q", fs.files[p])
	}
	fs.files[p] = "typed by the user\n"
	mustErr(t, call(t, tEdit, te.Env, obj{"file_path": "buf.go", "old_string": "user", "new_string": "x"}), "has changed")
	contains(t, mustOK(t, call(t, tWrite, te.Env, obj{"file_path": "fresh.go", "content": "x"})), "Created fresh.go")
}

func TestReadTrackerConcurrent(t *testing.T) {
	tr := NewReadTracker()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := fmt.Sprintf("/f%d", i%3)
			for j := 0; j < 200; j++ {
				data := []byte(fmt.Sprint(j))
				tr.Record(p, data, timeZero)
				_ = tr.Check(p, data)
				_ = tr.Seen(p)
			}
		}(i)
	}
	wg.Wait()
	if err := tr.Check("/other", nil); !errors.Is(err, ErrNotRead) {
		t.Fatalf("err = %v", err)
	}
	tr.Record("/x", []byte("a"), timeZero)
	if err := tr.Check("/x", []byte("b")); !errors.Is(err, ErrChanged) {
		t.Fatalf("err = %v", err)
	}
	tr.Forget("/x")
	if tr.Seen("/x") {
		t.Fatal("Forget did not forget")
	}
}

func TestLocalFSWrite(t *testing.T) {
	dir := t.TempDir()
	fs := LocalFS()
	ctx := context.Background()
	p := filepath.Join(dir, "a", "b", "c.txt")
	if err := fs.WriteFile(ctx, p, []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file mode %v %v", fi.Mode(), err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile(ctx, p, []byte("again"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("existing mode not kept: %v", fi.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
	if err := fs.WriteFile(ctx, dir, []byte("x"), 0); err == nil {
		t.Fatal("writing over a directory succeeded")
	}
	if _, err := fs.ReadFile(ctx, filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadFile(ctx, fifo); !errors.Is(err, errNotRegular) {
		t.Fatalf("fifo: %v", err)
	}
	if _, err := fs.ReadFile(ctx, dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("dir: %v", err)
	}
}

func TestTodoWrite(t *testing.T) {
	te := newTestEnv(t)
	r := call(t, tTodo, te.Env, obj{"todos": []obj{{"content": "a", "status": "pending"}, {"content": "b", "status": "in_progress"}, {"content": "c", "status": "completed"}}})
	contains(t, mustOK(t, r), "1 pending, 1 in progress, 1 completed")
	if len(te.events) != 1 || te.events[0].Type != event.TypeTodoWrite {
		t.Fatalf("events = %+v", te.events)
	}
	tw, err := event.Decode[event.TodoWrite](te.events[0])
	if err != nil || tw.Turn != 3 || len(tw.Todos) != 3 || tw.Todos[1].Status != "in_progress" {
		t.Fatalf("payload = %+v %v", tw, err)
	}
	mustErr(t, call(t, tTodo, te.Env, obj{"todos": []obj{{"content": "a", "status": "doing"}}}), `todos[0].status is "doing"`)
	mustErr(t, call(t, tTodo, te.Env, obj{"todos": []obj{{"content": " ", "status": "pending"}}}), "todos[0].content is empty")
	mustErr(t, call(t, tTodo, te.Env, obj{}), "todos is required")
	mustOK(t, call(t, tTodo, te.Env, obj{"todos": []obj{}}))
	if tw, _ := event.Decode[event.TodoWrite](te.events[1]); tw.Todos == nil || len(tw.Todos) != 0 {
		t.Fatalf("cleared list = %+v", tw)
	}
}

var timeZero time.Time

// webpHeader is the header of a lossless (VP8L) WebP of w×h pixels: enough
// for content sniffing and the size parser.
func webpHeader(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x05\x00\x00\x00\x2f")
	b = binary.LittleEndian.AppendUint32(b, bits)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}
