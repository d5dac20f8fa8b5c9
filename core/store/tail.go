package store

import (
	"bytes"
	"io"
	"os"
)

// checkpointMark starts the line of a compaction checkpoint as this store
// writes it (the envelope's type comes first). A JSON string cannot hold a
// raw newline, so the mark cannot occur inside another record.
var checkpointMark = []byte("\n{\"type\":\"compaction/checkpoint\",")

// tailChunk is how much lastCheckpoint reads at a time, from the end.
const tailChunk = 256 << 10

// lastCheckpoint returns the offset of the line of the last compaction
// checkpoint in f (of size bytes), or -1 if there is none. It reads the
// file backwards, so a checkpoint near the end costs one read.
func lastCheckpoint(f *os.File, size int64) (int64, error) {
	buf := make([]byte, tailChunk+len(checkpointMark))
	end := size
	for end > 0 {
		start := max(end-tailChunk, 0)
		n := int(end - start)
		if over := min(int64(len(checkpointMark)-1), size-end); over > 0 {
			n += int(over) // overlap the previous chunk so a mark across the cut is seen
		}
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, start); err != nil && err != io.EOF {
			return -1, err
		}
		if i := lastIndex(chunk, checkpointMark); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return -1, nil
}

// lastIndex is bytes.LastIndex by forward searches: bytes.Index runs on the
// CPU's vector instructions, bytes.LastIndex byte by byte (Rabin-Karp), and
// a log with no checkpoint is searched through to its first byte on every
// wake (a tenth of a 100,000-event wake's CPU went there).
func lastIndex(b, sep []byte) int {
	last := -1
	for i := 0; i <= len(b); {
		j := bytes.Index(b[i:], sep)
		if j < 0 {
			break
		}
		last = i + j
		i = last + 1
	}
	return last
}
