package snapshot

import (
	"context"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/dsh-dev/dsh/core/tool"
)

// A snapshot of an unchanged workspace is one lstat per file, and on a
// large workspace those system calls are nearly all of its cost; they run
// in the kernel, so a pool of workers running them side by side uses every
// core. The walk hands the folders' files out in batches; the results are
// folded in the order the walk found them, so a snapshot is the same
// whatever the number of workers.
const (
	// batchFiles bounds the files of one batch, so the files of one big
	// folder are shared among the workers too.
	batchFiles = 256
	// inflight bounds the batches walked but not yet folded (memory).
	inflight = 64
)

// defaultWorkers is the size of the pool: more workers than cores, since
// a worker waiting on a read or a page of the inode cache leaves its core
// to another.
func defaultWorkers() int { return min(4*runtime.GOMAXPROCS(0), 32) }

// batch is a run of one folder's files: the walk fills in the folder and
// the names, a worker what it found.
type batch struct {
	dir   string // absolute
	rel   string // the folder relative to the root, slash-separated, with a trailing slash ("" for the root)
	names []string
	found []found
	err   error
	done  chan struct{}
}

// found is what a worker found of one file: ok is false for a file to
// leave out silently (gone, a socket or a device); old is its cached
// entry, had whether there was one.
type found struct {
	rel     string
	ce, old cacheEntry
	ok, had bool
}

// scan walks root and looks at each file against its cached entry in old
// (read only) with a pool of s.workers, calling fold with every file kept
// and its cached entry, in walk order. It returns the first error of the walk, a look or fold;
// every worker has ended when it returns.
func (s *Store) scan(ctx context.Context, root string, old map[string]cacheEntry, trustBefore int64, fold func(f *found) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *batch)
	order := make(chan *batch, inflight)
	var wg sync.WaitGroup
	for range max(s.workers, 1) {
		wg.Go(func() {
			for b := range jobs {
				s.lookBatch(ctx, b, old, trustBefore)
				close(b.done)
			}
		})
	}
	var walkErr error
	wg.Go(func() {
		defer close(order)
		defer close(jobs)
		walkErr = tool.WalkWorkspace(ctx, root, s.excluded, func(dir string, files []fs.DirEntry) bool {
			rel := ""
			if dir != root {
				rel = filepath.ToSlash(dir[len(root)+1:]) + "/"
			}
			for chunk := range slices.Chunk(files, batchFiles) {
				b := &batch{dir: dir, rel: rel, names: make([]string, len(chunk)), done: make(chan struct{})}
				for i, e := range chunk {
					b.names[i] = e.Name()
				}
				select {
				case order <- b:
				case <-ctx.Done():
					return false
				}
				jobs <- b // the workers take jobs until it is closed
			}
			return true
		})
	})
	var err error
	for b := range order {
		<-b.done
		if err != nil {
			continue // after an error: drain, so the walk and the workers end
		}
		err = b.err
		for i := range b.found {
			if err != nil {
				break
			}
			if b.found[i].ok {
				err = fold(&b.found[i])
			}
		}
		if err != nil {
			cancel()
		}
	}
	wg.Wait()
	if err == nil {
		err = walkErr
	}
	return err
}

// lookBatch looks at the files of b, relative to their folder. A folder
// gone since the walk listed it takes its files with it.
func (s *Store) lookBatch(ctx context.Context, b *batch, old map[string]cacheEntry, trustBefore int64) {
	if b.err = ctx.Err(); b.err != nil {
		return
	}
	d, err := openFolder(b.dir)
	if err != nil {
		return
	}
	defer d.close()
	b.found = make([]found, len(b.names))
	for i, name := range b.names {
		rel := b.rel + name
		prev, had := old[rel]
		ce, ok, err := s.look(d, name, prev, trustBefore)
		if err != nil {
			b.err = err
			return
		}
		b.found[i] = found{rel: rel, ce: ce, ok: ok, old: prev, had: had}
	}
}
