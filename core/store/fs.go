package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
)

// logFile is the log inside a session directory.
const logFile = "session.jsonl"

// Store is a session root: <root>/<project>/<session-id>/session.jsonl.
// A Store holds no state beyond its root, so several may share a root,
// in one process or many; the flock lease arbitrates writers.
type Store struct {
	root   string
	noSync bool
}

// New returns the store at root. Nothing is touched until the first write,
// which creates root with mode 0700 (logs hold prompts and file contents).
func New(root string) *Store { return &Store{root: root} }

// WithoutSync returns a store over the same root whose logs never fsync.
// It exists for benchmarks that measure the harness's own cost apart from
// the disk; nothing in production uses it, since a crash could then lose
// committed events.
func (s *Store) WithoutSync() *Store { return &Store{root: s.root, noSync: true} }

// Root returns the session root directory.
func (s *Store) Root() string { return s.root }

// ProjectDir returns the folder of the sessions (and per-project files such
// as permission rules) of cwd.
func (s *Store) ProjectDir(cwd string) string {
	return filepath.Join(s.root, escapeProject(cwd))
}

// checkID refuses lookups of "": no session can have it.
func checkID(id string) error {
	if id == "" {
		return &wrapErr{msg: "session id is empty", err: ErrNotFound}
	}
	return nil
}

// find returns the directory of session id: a <root>/*/<escaped-id> whose
// log header names exactly id. The header check matters because folder
// names of long ids are cut and hashed, case-insensitive file systems fold
// names, and folders may be copied around by hand. A folder of the right
// name whose header cannot be read at all is returned if nothing better
// exists, so that Open reports the damage (ErrCorrupt) instead of claiming
// the session does not exist, and Remove can still delete it.
func (s *Store) find(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	projects, err := os.ReadDir(s.root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", notFound(id)
		}
		return "", fmt.Errorf("store: list %s: %w", s.root, err)
	}
	name := escapeID(id)
	damaged := ""
	for _, p := range projects { // ReadDir sorts, so the result is stable
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(s.root, p.Name(), name)
		h, err := peekHeader(filepath.Join(dir, logFile))
		switch {
		case err == nil && h.ID == id:
			return dir, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist) && damaged == "":
			damaged = dir
		}
	}
	if damaged != "" {
		return damaged, nil
	}
	return "", notFound(id)
}

// peekHeader decodes the header line of a log leniently (any version), so
// that a log of another format version is still found, and then refused by
// Open with ErrVersion rather than reported missing.
func peekHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	line, complete, err := firstLine(f)
	if err != nil {
		return Header{}, err
	}
	var h Header
	if !complete {
		return h, errors.New("incomplete header line")
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, err
	}
	if h.Type != "session" || h.ID == "" {
		return h, errors.New("not a session header")
	}
	return h, nil
}

// readHeaderFile reads and checks the header line of a log file.
func readHeaderFile(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	line, complete, err := firstLine(f)
	if err != nil {
		return Header{}, fmt.Errorf("read %s: %w", path, err)
	}
	if !complete {
		return Header{}, corrupt(path, 1, "the session header line is incomplete")
	}
	var h Header
	if err := decodeHeader(line, &h, path); err != nil {
		return Header{}, err
	}
	return h, nil
}

// Dir returns the directory of session id; ErrNotFound if there is none.
func (s *Store) Dir(id string) (string, error) { return s.find(id) }

// ReadHeader reads just the header of session id.
func (s *Store) ReadHeader(id string) (Header, error) {
	dir, err := s.find(id)
	if err != nil {
		return Header{}, err
	}
	return readHeaderFile(filepath.Join(dir, logFile))
}

// Leased reports whether a live process, this one included, holds the
// write lease of session id.
func (s *Store) Leased(id string) (bool, error) {
	dir, err := s.find(id)
	if err != nil {
		return false, err
	}
	held, err := probeLease(dir)
	if err != nil {
		return false, fmt.Errorf("store: probe lease of session %q: %w", id, err)
	}
	return held, nil
}

// Create makes a new session: its directory, its log with the header line,
// and the write lease. The header line appears atomically (written to a
// temporary file, fsynced, then linked into place without overwriting), and
// the new directory entries are fsynced up to the root's parent, so a crash
// leaves either no session or a complete header.
func (s *Store) Create(h Header) (*Log, error) {
	if h.ID == "" {
		return nil, errors.New("store: create: session id is empty")
	}
	// The header is JSON, which cannot hold invalid UTF-8: it would be
	// recorded as U+FFFD and the session could never be found by its id.
	if !utf8.ValidString(h.ID) {
		return nil, fmt.Errorf("store: create: session id %q is not valid UTF-8", h.ID)
	}
	if !utf8.ValidString(h.Cwd) {
		return nil, fmt.Errorf("store: create session %q: cwd %q is not valid UTF-8 and cannot be recorded", h.ID, h.Cwd)
	}
	h.Type = "session"
	h.Version = FormatVersion
	if h.CreatedAt == "" {
		h.CreatedAt = time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	exists := &wrapErr{msg: fmt.Sprintf("session %q already exists", h.ID), err: ErrExists}
	if _, err := s.find(h.ID); err == nil {
		return nil, exists
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	line, err := encodeLine(h)
	if err != nil {
		return nil, fmt.Errorf("store: create session %q: encode header: %w", h.ID, err)
	}

	project := s.ProjectDir(h.Cwd)
	dir := filepath.Join(project, escapeID(h.ID))
	if err := os.MkdirAll(project, 0o700); err != nil {
		return nil, fmt.Errorf("store: create session %q: %w", h.ID, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("store: create session %q: %w", h.ID, err)
	}
	// An existing directory is either a concurrent creator (the lease or
	// the no-overwrite link below refuses us) or a creation that crashed
	// before its log was linked, which we may finish.
	ls, err := acquireLease(dir, h.ID)
	if err != nil {
		if errors.Is(err, ErrLeased) {
			return nil, exists
		}
		return nil, err
	}
	f, err := materialize(dir, line)
	if err != nil {
		ls.release()
		if errors.Is(err, fs.ErrExist) {
			return nil, exists
		}
		return nil, fmt.Errorf("store: create session %q: %w", h.ID, err)
	}
	// Make the new entries durable: the log in dir, dir in project,
	// project in root, root in its parent.
	for _, d := range []string{dir, project, s.root, filepath.Dir(s.root)} {
		if err := syncDir(d); err != nil {
			f.Close()
			ls.release()
			return nil, fmt.Errorf("store: create session %q: %w", h.ID, err)
		}
	}
	return newLog(h, dir, f, ls, 0, s.noSync), nil
}

// materialize writes the header to a temporary file, fsyncs it and links
// it as the log, failing with fs.ErrExist if a log is already there. It
// returns the log opened for appending.
func materialize(dir string, header []byte) (*os.File, error) {
	tmp, err := os.CreateTemp(dir, logFile+".tmp*")
	if err != nil {
		return nil, err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	_, werr := tmp.Write(header)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, werr
	}
	path := filepath.Join(dir, logFile)
	if err := os.Link(tmpName, path); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
}

// encodeLine marshals v as one JSON line. HTML escaping is off so payload
// bytes are stored as given (compacted), not rewritten to \u003c and such.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the '\n'
		return nil, err
	}
	return buf.Bytes(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// Open opens session id for writing: it takes the lease, repairs a torn
// last line (keeping a .broken copy of the file as found), closes an
// unfinished turn by appending synthetic events durably, and returns the
// committed events from the last compaction checkpoint on (or from the
// first), the synthetic ones included. The live stream (assistant/chunk)
// is left out, as ReadCommitted leaves it: seqs have gaps where it was. A corrupt log (ErrCorrupt) or one of
// another format version (ErrVersion) is refused and left untouched.
func (s *Store) Open(id string) (*Log, []event.Event, error) {
	dir, err := s.find(id)
	if err != nil {
		return nil, nil, err
	}
	ls, err := acquireLease(dir, id)
	if err != nil {
		return nil, nil, err
	}
	l, events, err := openLeased(dir, id, ls, s.noSync)
	if err != nil {
		ls.release()
		return nil, nil, err
	}
	return l, events, nil
}

func openLeased(dir, id string, ls *lease, noSync bool) (*Log, []event.Event, error) {
	path := filepath.Join(dir, logFile)
	p, err := parseFile(path, id, true, true)
	if err != nil {
		return nil, nil, err
	}
	if p.header.ID != id {
		// The directory was swapped between find and the lease.
		return nil, nil, notFound(id)
	}
	// Work out the closers first: a payload too damaged to close the turn
	// is corruption, and a refused log must be left exactly as found.
	closers, err := closeTurn(p.events, p.next, id, time.Now().UnixMilli(), path)
	if err != nil {
		return nil, nil, err
	}
	if p.torn {
		if err := repairTail(path, p.good); err != nil {
			return nil, nil, fmt.Errorf("store: repair torn tail of %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	l := newLog(p.header, dir, f, ls, p.next, noSync)
	for _, ev := range closers {
		if err := l.Append(ev); err != nil {
			l.lease = nil // the caller releases it
			l.Close()
			return nil, nil, fmt.Errorf("store: close unfinished turn of session %q: %w", id, err)
		}
	}
	if len(closers) > 0 {
		if err := l.Sync(); err != nil {
			l.lease = nil
			l.Close()
			return nil, nil, fmt.Errorf("store: close unfinished turn of session %q: %w", id, err)
		}
	}
	return l, append(p.events, closers...), nil
}

// parseFile parses the log at path. With tail, it reads from the last
// compaction checkpoint on (a resume needs nothing before it), falling back
// to the whole log when there is none or it cannot be read. With
// skipChunks, it leaves the live stream out (readOpts).
func parseFile(path, id string, tail, skipChunks bool) (*parsed, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notFound(id)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	if tail {
		if from, err := lastCheckpoint(f, size); err == nil && from > 0 {
			if _, err := f.Seek(0, io.SeekStart); err == nil {
				p, err := parseLog(f, path, size, readOpts{from: from, skipChunks: skipChunks})
				if err == nil && len(p.events) > 0 && p.events[0].Type == event.TypeCompactionCheckpoint {
					return p, nil
				}
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("store: read %s: %w", path, err)
		}
	}
	return parseLog(f, path, size, readOpts{skipChunks: skipChunks})
}

// repairTail keeps a copy of the log as found, then cuts it to its valid
// prefix of good bytes and fsyncs. The copy is made and synced first, so a
// crash during repair never loses the torn bytes.
func repairTail(path string, good int64) error {
	if err := copyBroken(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(good)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyBroken copies path to path.broken, or path.broken.N if earlier
// repairs left copies, never overwriting one.
func copyBroken(path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	var dst *os.File
	for n := 0; ; n++ {
		name := path + ".broken"
		if n > 0 {
			name += "." + strconv.Itoa(n)
		}
		dst, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n > 1000 {
			return err
		}
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst.Name())
		return err
	}
	return syncDir(filepath.Dir(path))
}

// Read loads session id without the lease and without writing: a torn
// tail is ignored and an unfinished turn is closed in memory only, so a
// session that another process is writing can be read safely. Every event
// is returned, the live stream (assistant/chunk) included: event i has seq i.
func (s *Store) Read(id string) (Header, []event.Event, error) {
	return s.read(id, false)
}

// ReadCommitted is Read without the live stream: assistant/chunk lines are
// checked but neither decoded nor returned, so seqs have gaps where they
// were. It is what a replay reads: the committed history, at the cost of
// its own events.
func (s *Store) ReadCommitted(id string) (Header, []event.Event, error) {
	return s.read(id, true)
}

func (s *Store) read(id string, skipChunks bool) (Header, []event.Event, error) {
	dir, err := s.find(id)
	if err != nil {
		return Header{}, nil, err
	}
	path := filepath.Join(dir, logFile)
	p, err := parseFile(path, id, false, skipChunks)
	if err != nil {
		return Header{}, nil, err
	}
	closers, err := closeTurn(p.events, p.next, id, time.Now().UnixMilli(), path)
	if err != nil {
		return Header{}, nil, err
	}
	return p.header, append(p.events, closers...), nil
}

// Remove deletes session id. It takes the lease first, so a session that a
// live process is writing is refused with ErrLeased.
func (s *Store) Remove(id string) error {
	dir, err := s.find(id)
	if err != nil {
		return err
	}
	ls, err := acquireLease(dir, id)
	if err != nil {
		return err
	}
	defer ls.release()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("store: remove session %q: %w", id, err)
	}
	// The project folder stays: it may hold other sessions or the
	// project's permission rules, and removing it would race creators.
	return syncDir(filepath.Dir(dir))
}

// List returns the stored sessions, newest first. cwd "" lists every
// project; otherwise only sessions whose header cwd equals cwd (cleaned).
// Unreadable sessions are skipped with a warning. Each session costs its
// header line, its last line and a byte scan for session/title records;
// no event is fully decoded.
func (s *Store) List(cwd string) ([]Info, error) {
	var projects []string
	if cwd != "" {
		cwd = filepath.Clean(cwd)
		projects = []string{s.ProjectDir(cwd)}
	} else {
		entries, err := os.ReadDir(s.root)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, fmt.Errorf("store: list %s: %w", s.root, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				projects = append(projects, filepath.Join(s.root, e.Name()))
			}
		}
	}
	var out []Info
	for _, project := range projects {
		entries, err := os.ReadDir(project)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("store: list %s: %w", project, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			dir := filepath.Join(project, e.Name())
			info, err := summarize(dir)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					warn("store: skipping unreadable session", "dir", dir, "err", err)
				}
				continue
			}
			if cwd != "" && filepath.Clean(info.Header.Cwd) != cwd {
				continue
			}
			out = append(out, info)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].UpdatedAt != out[j].UpdatedAt {
			return out[i].UpdatedAt > out[j].UpdatedAt
		}
		return out[i].Header.ID < out[j].Header.ID
	})
	return out, nil
}
