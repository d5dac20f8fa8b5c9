package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
)

// TestHostileSessionsStayInRoot creates a session for every hostile id,
// each under a hostile cwd, and checks that every file lands inside the
// root, that each session reads back by its id, and that List sees them all.
func TestHostileSessionsStayInRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	s := New(root)
	ids := hostile()
	cwds := hostile()
	want := map[string]bool{}
	for i, id := range ids {
		cwd := cwds[(i+7)%len(cwds)]
		l, err := s.Create(Header{ID: id, Cwd: cwd})
		if id == "" || !utf8.ValidString(id) || !utf8.ValidString(cwd) {
			// JSON headers cannot hold these: refused with a clear error.
			if err == nil || errors.Is(err, ErrExists) {
				t.Fatalf("Create(%.40q, cwd %.40q): err = %v", id, cwd, err)
			}
			cwd = strings.ToValidUTF8(cwd, "?")
			if id == "" || !utf8.ValidString(id) {
				continue
			}
			l, err = s.Create(Header{ID: id, Cwd: cwd})
		}
		if err != nil {
			t.Fatalf("Create(%.40q): %v", id, err)
		}
		ev := event.New(event.TypeSessionTitle, event.SessionTitle{Title: id})
		ev.Seq = 0
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		want[id] = true
	}
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != base && !strings.HasPrefix(path, root+string(filepath.Separator)) && path != root {
			t.Errorf("%q is outside the root", path)
		}
		if len(d.Name()) > 255 {
			t.Errorf("component of %d bytes", len(d.Name()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range want {
		h, evs, err := s.Read(id)
		if err != nil || h.ID != id || len(evs) != 1 {
			t.Fatalf("Read(%.40q) = %v, %d events, %v", id, h.ID, len(evs), err)
		}
		if title, _ := event.Decode[event.SessionTitle](evs[0]); title.Title != id {
			t.Fatalf("Read(%.40q) returned another session's events", id)
		}
	}
	infos, err := s.List("")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(want) {
		t.Errorf("List found %d sessions, want %d", len(infos), len(want))
	}
	for _, in := range infos {
		if !want[in.Header.ID] || in.Title != in.Header.ID {
			t.Errorf("List: id %.40q title %.40q", in.Header.ID, in.Title)
		}
	}
	// The same ids are all distinct sessions: creating any again fails.
	for id := range want {
		if _, err := s.Create(Header{ID: id, Cwd: "/elsewhere"}); !errors.Is(err, ErrExists) {
			t.Fatalf("second Create(%.40q): %v", id, err)
		}
	}
}

func TestCreate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "sessions")
	s := New(root)
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("New touched the disk")
	}
	l, err := s.Create(Header{ID: "s1", Cwd: "/home/me/proj", Origin: "run", Config: &event.Config{Provider: "p", Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	h := l.Header()
	if h.Type != "session" || h.Version != 0 || len(h.CreatedAt) != len("2006-01-02T15:04:05.000Z") ||
		!strings.HasSuffix(h.CreatedAt, "Z") {
		t.Errorf("header = %+v", h)
	}
	wantDir := filepath.Join(root, "--home-me-proj--", "s1")
	if l.Dir() != wantDir {
		t.Errorf("Dir = %q, want %q", l.Dir(), wantDir)
	}
	if s.ProjectDir("/home/me/proj") != filepath.Join(root, "--home-me-proj--") {
		t.Errorf("ProjectDir = %q", s.ProjectDir("/home/me/proj"))
	}
	for path, mode := range map[string]fs.FileMode{root: 0o700, filepath.Dir(wantDir): 0o700, wantDir: 0o700,
		filepath.Join(wantDir, logFile): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode().Perm(), err, mode)
		}
	}
	entries, _ := os.ReadDir(wantDir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "lease,session.jsonl" {
		t.Errorf("session dir holds %v", names)
	}
	first, _, _ := firstLine(bytes.NewReader(readFile(t, filepath.Join(wantDir, logFile))))
	if !bytes.HasPrefix(first, []byte(`{"type":"session","version":0,"id":"s1","createdAt":"`)) ||
		!bytes.Contains(first, []byte(`"origin":"run","delegationDepth":0,"config":{"provider":"p","model":"m"}}`)) {
		t.Errorf("header line = %s", first)
	}
	if _, err := s.Create(Header{ID: "s1", Cwd: "/home/me/proj"}); !errors.Is(err, ErrExists) ||
		err.Error() != `session "s1" already exists` {
		t.Errorf("Create again: %v", err)
	}
	if _, err := s.Create(Header{ID: "s1", Cwd: "/other"}); !errors.Is(err, ErrExists) {
		t.Errorf("Create in another project: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(Header{ID: "s1"}); !errors.Is(err, ErrExists) {
		t.Errorf("Create after Close: %v", err)
	}

	// A creation that crashed after mkdir but before linking the log left
	// an empty directory: Create finishes it.
	if err := os.MkdirAll(filepath.Join(s.ProjectDir("/x"), "half"), 0o700); err != nil {
		t.Fatal(err)
	}
	l2, err := s.Create(Header{ID: "half", Cwd: "/x", CreatedAt: "2020-01-01T00:00:00.000Z"})
	if err != nil {
		t.Fatalf("Create over a half-made dir: %v", err)
	}
	if l2.Header().CreatedAt != "2020-01-01T00:00:00.000Z" {
		t.Errorf("CreatedAt overwritten: %q", l2.Header().CreatedAt)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLookupErrors(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "none"))
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotFound) || err.Error() != `session "ghost" does not exist` {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, _, err := s.Open("ghost")
	check("Open", err)
	_, _, err = s.Read("ghost")
	check("Read", err)
	_, err = s.ReadHeader("ghost")
	check("ReadHeader", err)
	_, err = s.Dir("ghost")
	check("Dir", err)
	_, err = s.Leased("ghost")
	check("Leased", err)
	check("Remove", s.Remove("ghost"))
	if _, _, err := s.Open(""); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Open(\"\"): %v", err)
	}
	if infos, err := s.List(""); err != nil || len(infos) != 0 {
		t.Errorf("List of a missing root = %v, %v", infos, err)
	}
	if _, err := os.Stat(s.Root()); !errors.Is(err, fs.ErrNotExist) {
		t.Error("lookups created the root")
	}
}

func TestRemove(t *testing.T) {
	s, path := createWith(t, "gone", sessionEvents(5))
	dir := filepath.Dir(path)
	if d, err := s.Dir("gone"); err != nil || d != dir {
		t.Fatalf("Dir = %q, %v", d, err)
	}
	if h, err := s.ReadHeader("gone"); err != nil || h.ID != "gone" || h.Cwd != "/work/project" {
		t.Fatalf("ReadHeader = %+v, %v", h, err)
	}
	if err := s.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Error("session dir still there")
	}
	if _, err := os.Stat(filepath.Dir(dir)); err != nil {
		t.Error("project dir removed")
	}
	if err := s.Remove("gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove: %v", err)
	}
	// A session whose log is too damaged to name itself is still found
	// by its folder, reported corrupt, and removable.
	s2, path2 := createWith(t, "wreck", nil)
	if err := os.WriteFile(path2, []byte("\x00\x00\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Open("wreck"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open of a wrecked log: %v", err)
	}
	if _, err := s2.ReadHeader("wreck"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadHeader of a wrecked log: %v", err)
	}
	if err := s2.Remove("wreck"); err != nil {
		t.Errorf("Remove of a wrecked log: %v", err)
	}
}

func TestList(t *testing.T) {
	s := New(t.TempDir())
	mk := func(id, cwd string, evs ...event.Event) {
		t.Helper()
		l, err := s.Create(Header{ID: id, Cwd: cwd})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range seqd(0, evs...) {
			if err := l.Append(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	at := func(ms int64, ev event.Event) event.Event { ev.Time = ms; return ev }
	title := func(s string) event.Event { return event.New(event.TypeSessionTitle, event.SessionTitle{Title: s}) }
	user := func(text string) event.Event {
		return event.New(event.TypeUserMessage, event.Message{ID: "u", Role: "user", Content: []event.ContentBlock{event.Text(text)}})
	}
	mk("old", "/p/a", at(1000, title("first")), at(2000, title("renamed")), at(3000, user("hi")))
	mk("new", "/p/a", at(5000, user(`say "session/title" please`)),
		at(6000, event.New(event.TypeToolResult, event.ToolResult{Meta: []byte(`{"kind":"session/title"}`)})))
	mk("other", "/p/b", at(4000, title("b")))
	mk("empty", "/p/b")

	infos, err := s.List("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range infos {
		got = append(got, fmt.Sprintf("%s:%q:%d:%d", in.Header.ID, in.Title, in.Events, in.UpdatedAt))
	}
	// "empty" has no events: its UpdatedAt is the file mtime, now-ish.
	if len(got) != 4 || !strings.HasPrefix(got[0], `empty:"":0:`) ||
		strings.Join(got[1:], " ") != `new:"":2:6000 other:"b":1:4000 old:"renamed":3:3000` {
		t.Fatalf("List(\"\") = %v", got)
	}
	if infos[1].Dir != filepath.Join(s.ProjectDir("/p/a"), "new") {
		t.Errorf("Dir = %q", infos[1].Dir)
	}
	for _, cwd := range []string{"/p/a", "/p/a/", "/p/b/../a"} {
		infos, err = s.List(cwd)
		if err != nil || len(infos) != 2 || infos[0].Header.ID != "new" || infos[1].Header.ID != "old" {
			t.Errorf("List(%q) = %+v, %v", cwd, infos, err)
		}
	}
	if infos, err = s.List("/p/c"); err != nil || len(infos) != 0 {
		t.Errorf("List(/p/c) = %+v, %v", infos, err)
	}

	// A torn tail is skipped: the last complete record counts.
	dir, _ := s.Dir("old")
	f, err := os.OpenFile(filepath.Join(dir, logFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"session/title","seq":3,"time":9000,"data":{"title":"torn`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// And junk directories are skipped.
	if err := os.MkdirAll(filepath.Join(s.ProjectDir("/p/a"), "junk"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.ProjectDir("/p/a"), "junk", logFile), []byte("nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	infos, err = s.List("/p/a")
	if err != nil || len(infos) != 2 || infos[1].Title != "renamed" || infos[1].Events != 3 || infos[1].UpdatedAt != 3000 {
		t.Errorf("List after torn tail = %+v, %v", infos, err)
	}
}

// TestConcurrentAppends has many goroutines append at once, each taking
// NextSeq and retrying when another won the race. The log must hold every
// event exactly once, in seq order, each goroutine's events in its order.
func TestConcurrentAppends(t *testing.T) {
	s := New(t.TempDir())
	l, err := s.Create(Header{ID: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 150
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				typ := event.TypeStepStart
				if i%3 == 0 {
					typ = event.TypeUserMessage // a commit point: fsynced
				}
				ev := event.New(typ, map[string]int{"g": g, "i": i})
				for {
					ev.Seq = l.NextSeq()
					err := l.Append(ev)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrSequence) {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, evs, err := s.Read("busy")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != writers*each {
		t.Fatalf("%d events, want %d", len(evs), writers*each)
	}
	next := make([]int, writers)
	for _, ev := range evs {
		d, err := event.Decode[map[string]int](ev)
		if err != nil {
			t.Fatal(err)
		}
		if d["i"] != next[d["g"]] {
			t.Fatalf("writer %d: event %d where %d was due", d["g"], d["i"], next[d["g"]])
		}
		next[d["g"]]++
	}
}

// TestAppendVisibleOnReturn checks that an event is on disk (readable by
// another reader) as soon as Append returns, and Sync works in between.
func TestAppendVisibleOnReturn(t *testing.T) {
	s := New(t.TempDir())
	l, err := s.Create(Header{ID: "vis"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, ev := range turnEvents(1, 0) {
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
		_, evs, err := s.Read("vis")
		if err != nil {
			t.Fatal(err)
		}
		if evs[i].Seq != int64(i) || evs[i].Type != ev.Type {
			t.Fatalf("after Append %d, Read sees %v", i, types(evs))
		}
		if i == 3 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Latest leaves a delegated session to its parent: an in-process child, and
// a session of a dsh another dsh's gateway started (depth > 0), also one of
// an older log that recorded no parent.
func TestLatestSkipsDelegatedSessions(t *testing.T) {
	s := New(t.TempDir())
	mk := func(h Header, ms int64) {
		t.Helper()
		h.Cwd = "/p/a"
		l, err := s.Create(h)
		if err != nil {
			t.Fatal(err)
		}
		ev := event.New(event.TypeSessionTitle, event.SessionTitle{Title: h.ID})
		ev.Time = ms
		if err := l.Append(seqd(0, ev)[0]); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mk(Header{ID: "mine"}, 1000)
	mk(Header{ID: "inproc-child", ParentSession: "mine", Origin: "subagent", DelegationDepth: 1}, 2000)
	mk(Header{ID: "remote-child", ParentSession: "mine", Origin: "sdk", DelegationDepth: 1}, 3000)
	mk(Header{ID: "old-remote-child", Origin: "acp", DelegationDepth: 1}, 4000)
	in, err := s.Latest("/p/a")
	if err != nil || in.Header.ID != "mine" {
		t.Fatalf("Latest = %q, %v; want the session a person started", in.Header.ID, err)
	}
}
