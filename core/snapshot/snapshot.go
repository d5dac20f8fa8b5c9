// Package snapshot keeps content-addressed snapshots of workspace folders
// in a session's own folder, so a rewind can put the files back as they
// were when a turn started — whatever changed them, the file tools or a
// command — in any folder, a git repository or not.
//
// A snapshot of one root is a manifest: every file the file tools can see
// (.gitignore honoured, .git skipped, symlinks kept as links), by path,
// mode and the SHA-256 of its content. Contents live once each under
// objects/, manifests under manifests/, both named by hash. A stat cache
// per root (size, mtime, inode, mode → hash), kept in memory and on disk,
// makes a snapshot of an unchanged workspace cost one walk and an lstat
// per file, as git's index does: nothing is read or written. The user's
// repository and its index are never touched and no git runs.
package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core/atomicfile"
	"github.com/dsh-dev/dsh/core/event"
)

// Defaults of Options.
const (
	DefaultMaxFileBytes  = 4 << 20
	DefaultMaxStoreBytes = 2 << 30
	DefaultMaxFiles      = 200_000
)

// racyWindow: a file whose mtime is this close to (or after) the start of
// the snapshot that cached it may have changed again within the same
// timestamp tick, so its cached hash is not trusted (git's "racily clean").
const racyWindow = 2 * time.Second

// ErrTooMany refuses a snapshot of a root holding more files than
// Options.MaxFiles: the turn goes on without one.
var ErrTooMany = errors.New("too many files to snapshot")

// Options bound a store.
type Options struct {
	// MaxFileBytes: larger files are left out of snapshots (and said so).
	MaxFileBytes int64
	// MaxStoreBytes bounds the contents a session's store holds; a file
	// whose content would pass it is left out (and said so).
	MaxStoreBytes int64
	// MaxFiles bounds the files of one root; a larger root gets no
	// snapshot (ErrTooMany).
	MaxFiles int
	// Exclude are folders never captured (the session store itself, when
	// it lies inside a workspace).
	Exclude []string
}

// Entry is one file of a manifest.
type Entry struct {
	Path string      `json:"p"` // slash-separated, relative to the root
	Mode fs.FileMode `json:"m"` // permission bits, plus fs.ModeSymlink for a link
	Size int64       `json:"s"`
	Hash string      `json:"h"` // SHA-256 of the content (of the target, for a link)
}

// Manifest is the snapshot of one root.
type Manifest struct {
	Root    string              `json:"root"`
	Entries []Entry             `json:"entries"` // sorted by Path
	Skipped []event.SkippedFile `json:"skipped,omitempty"`
}

// find returns the entry at path, or nil.
func (m *Manifest) find(path string) *Entry {
	i, ok := slices.BinarySearchFunc(m.Entries, path, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return nil
	}
	return &m.Entries[i]
}

func (m *Manifest) skipped(path string) bool {
	for _, s := range m.Skipped {
		if s.Path == path {
			return true
		}
	}
	return false
}

// Store is the snapshot store of one session, in one folder.
type Store struct {
	dir string
	opt Options

	workers int // of a scan (see scan.go)

	mu     sync.Mutex // held by Take
	caches map[string]*rootCache

	blobMu  sync.Mutex      // the scan's workers store contents side by side
	used    int64           // bytes under objects/; -1 until counted
	writing map[string]bool // contents being stored now, by hash
}

// Open returns the store in dir (created on the first snapshot).
func Open(dir string, opt Options) *Store {
	if opt.MaxFileBytes <= 0 {
		opt.MaxFileBytes = DefaultMaxFileBytes
	}
	if opt.MaxStoreBytes <= 0 {
		opt.MaxStoreBytes = DefaultMaxStoreBytes
	}
	if opt.MaxFiles <= 0 {
		opt.MaxFiles = DefaultMaxFiles
	}
	return &Store{dir: dir, opt: opt, workers: defaultWorkers(), caches: map[string]*rootCache{}, used: -1, writing: map[string]bool{}}
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// cacheEntry is what the stat cache knows of one file.
type cacheEntry struct {
	Size    int64
	MtimeNs int64
	Ino     uint64
	Mode    fs.FileMode
	Hash    string // "" when the file was skipped
	Skip    string // why it was skipped
}

// rootCache is the stat cache of one root and its last manifest.
type rootCache struct {
	Files    map[string]cacheEntry
	Manifest string
	Skipped  []event.SkippedFile
	Count    int
	TakenNs  int64
}

// Result is one snapshot of several roots.
type Result struct {
	Roots        []event.SnapshotRoot
	Skipped      []event.SkippedFile // the first maxListedSkips
	SkippedCount int
}

const maxListedSkips = 20

// Take snapshots roots (absolute, cleaned). A root that is not a folder
// is left out.
func (s *Store) Take(ctx context.Context, roots []string) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res Result
	for _, root := range roots {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			continue
		}
		c, err := s.takeRoot(ctx, root)
		if err != nil {
			return Result{}, fmt.Errorf("snapshot %s: %w", root, err)
		}
		res.Roots = append(res.Roots, event.SnapshotRoot{Root: root, Manifest: c.Manifest, Files: c.Count})
		res.SkippedCount += len(c.Skipped)
		for _, sk := range c.Skipped {
			if len(res.Skipped) < maxListedSkips {
				sk.Path = filepath.Join(root, filepath.FromSlash(sk.Path))
				res.Skipped = append(res.Skipped, sk)
			}
		}
	}
	return res, nil
}

// takeRoot walks root against its stat cache and returns the cache, now
// naming the root's manifest (the previous one when nothing changed).
func (s *Store) takeRoot(ctx context.Context, root string) (*rootCache, error) {
	c := s.cache(root)
	start := time.Now().UnixNano()
	trustBefore := c.TakenNs - int64(racyWindow)
	entries := make([]Entry, 0, len(c.Files))
	var skipped []event.SkippedFile
	files := make(map[string]cacheEntry, len(c.Files))
	changed, hashed := false, false
	err := s.scan(ctx, root, c.Files, trustBefore, func(f *found) error {
		if len(files) >= s.opt.MaxFiles {
			return fmt.Errorf("%w: more than %d under %s", ErrTooMany, s.opt.MaxFiles, root)
		}
		rel, ce := f.rel, f.ce
		if !f.had || f.old != ce {
			changed = true
		}
		if !f.had || f.old.MtimeNs >= trustBefore {
			hashed = true
		}
		files[rel] = ce
		if ce.Hash == "" {
			skipped = append(skipped, event.SkippedFile{Path: rel, Size: ce.Size, Reason: ce.Skip})
		} else {
			entries = append(entries, Entry{Path: rel, Mode: ce.Mode, Size: ce.Size, Hash: ce.Hash})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !changed && len(files) == len(c.Files) && c.Manifest != "" {
		if hashed {
			// Files that were too new to trust were read again and had
			// not changed: from now on their stat says enough.
			c.Files, c.TakenNs = files, start
			s.saveCache(root, c)
		}
		return c, nil
	}
	byPath := func(a, b string) int { return strings.Compare(a, b) }
	slices.SortFunc(entries, func(a, b Entry) int { return byPath(a.Path, b.Path) })
	slices.SortFunc(skipped, func(a, b event.SkippedFile) int { return byPath(a.Path, b.Path) })
	id, err := s.writeManifest(&Manifest{Root: root, Entries: entries, Skipped: skipped})
	if err != nil {
		return nil, err
	}
	*c = rootCache{Files: files, Manifest: id, Skipped: skipped, Count: len(entries), TakenNs: start}
	s.saveCache(root, c)
	return c, nil
}

// look returns the cache entry of the file name in folder d, hashing (and
// storing) its content unless the cached entry old still matches. ok is
// false for an entry to leave out silently (gone, a socket or device).
// Workers call it side by side.
func (s *Store) look(d *folder, name string, old cacheEntry, trustBefore int64) (cacheEntry, bool, error) {
	ce, ok := d.stat(name)
	if !ok {
		return cacheEntry{}, false, nil
	}
	if old.Size == ce.Size && old.MtimeNs == ce.MtimeNs && old.Ino == ce.Ino && old.Mode == ce.Mode && ce.MtimeNs < trustBefore {
		return old, true, nil
	}
	if ce.Mode.IsRegular() && ce.Size > s.opt.MaxFileBytes {
		ce.Skip = fmt.Sprintf("larger than the snapshot bound of %d bytes", s.opt.MaxFileBytes)
		return ce, true, nil
	}
	var data []byte
	if ce.Mode&fs.ModeSymlink != 0 {
		target, err := d.readLink(name, ce.Size)
		if err != nil {
			return cacheEntry{}, false, nil
		}
		data = []byte(target)
	} else {
		var err error
		if data, err = d.readFile(name, ce.Size); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return cacheEntry{}, false, nil
			}
			ce.Skip = "unreadable: " + err.Error()
			return ce, true, nil
		}
	}
	ce.Size = int64(len(data))
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	stored, err := s.putBlob(hash, data)
	if err != nil {
		return cacheEntry{}, false, err
	}
	if !stored {
		ce.Skip = fmt.Sprintf("the session's snapshot store is full (%d bytes)", s.opt.MaxStoreBytes)
		return ce, true, nil
	}
	ce.Hash = hash
	return ce, true, nil
}

func (s *Store) excluded(abs string) bool {
	for _, x := range s.opt.Exclude {
		if abs == x {
			return true
		}
	}
	return abs == s.dir
}

// cache returns the stat cache of root, loading it from disk the first
// time; a missing or unreadable cache starts empty (every file is hashed
// once more, nothing is lost).
func (s *Store) cache(root string) *rootCache {
	if c := s.caches[root]; c != nil {
		return c
	}
	c := &rootCache{}
	if f, err := os.Open(s.cachePath(root)); err == nil {
		if gob.NewDecoder(f).Decode(c) != nil || !s.hasManifest(c.Manifest) {
			c = &rootCache{}
		}
		f.Close()
	}
	if c.Files == nil {
		c.Files = map[string]cacheEntry{}
	}
	s.caches[root] = c
	return c
}

func (s *Store) cachePath(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(s.dir, "cache", hex.EncodeToString(sum[:8])+".gob")
}

// saveCache writes the cache of root (temp file, rename). It is only a
// speed-up, so a failure is ignored: the next process hashes again.
func (s *Store) saveCache(root string, c *rootCache) {
	path := s.cachePath(root)
	var buf bytes.Buffer
	if gob.NewEncoder(&buf).Encode(c) != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	_ = atomicfile.Write(path, buf.Bytes(), false)
}

// Load reads the manifest id, checking its hash.
func (s *Store) Load(id string) (*Manifest, error) {
	if !validHash(id) {
		return nil, fmt.Errorf("snapshot: bad manifest id %q", id)
	}
	data, err := os.ReadFile(s.manifestPath(id))
	if err != nil {
		return nil, fmt.Errorf("snapshot: manifest %s: %w", id, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != id {
		return nil, fmt.Errorf("snapshot: manifest %s is damaged", id)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("snapshot: manifest %s: %w", id, err)
	}
	return &m, nil
}

func (s *Store) manifestPath(id string) string { return filepath.Join(s.dir, "manifests", id+".json") }

func (s *Store) hasManifest(id string) bool {
	if !validHash(id) {
		return false
	}
	_, err := os.Stat(s.manifestPath(id))
	return err == nil
}

// writeManifest stores m durably and returns its id.
func (s *Store) writeManifest(m *Manifest) (string, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:])
	path := s.manifestPath(id)
	if _, err := os.Stat(path); err == nil {
		return id, nil
	}
	err = os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = atomicfile.Write(path, data, true)
	}
	if err != nil {
		return "", fmt.Errorf("write manifest: %w", err)
	}
	return id, nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}
