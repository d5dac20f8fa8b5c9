package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/dsh-dev/dsh/core/event"
)

// Bounds of what one change puts in its event (a 12 MB edit once made a
// 46 MiB event: both texts whole, plus the diff).
const (
	// changeMaxFileSize is the largest file edit, multi_edit and write
	// will load to change; checked before reading. It is read's limit: a
	// larger file cannot have been read, so cannot be changed safely.
	changeMaxFileSize = readMaxFileSize
	// diffInlineMax bounds the old and new texts carried together in a
	// result's diff; past it they are elided and the hashes stand in.
	diffInlineMax = 1 << 20
	// unifiedMax bounds the unified diff carried in a result's meta.
	unifiedMax = 256 << 10
)

// tooLarge refuses, before reading, a file larger than changeMaxFileSize.
// It returns "" when the file is small enough or does not exist.
func tooLarge(p, shown, verb string) string {
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() || fi.Size() <= changeMaxFileSize {
		return ""
	}
	return fmt.Sprintf("%s refused: %s is %d bytes, over the %d MiB limit of read, edit and write, so it was not loaded; change it with bash (for example sed -i) instead",
		verb, shown, fi.Size(), changeMaxFileSize>>20)
}

// loadForChange reads a file an edit will change, refusing when it is too
// large, was not read in this session or changed since.
func loadForChange(ctx context.Context, env *Env, p, shown, verb string) (string, string) {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return "", fmt.Sprintf("%s is a directory, not a file", shown)
	}
	if msg := tooLarge(p, shown, verb); msg != "" {
		return "", msg
	}
	data, err := filesOf(env).ReadFile(ctx, p)
	if err != nil {
		return "", fileError(verb, shown, err)
	}
	if env.Reads == nil {
		return "", "internal error: this session does not track reads, so files cannot be edited safely"
	}
	if err := env.Reads.Check(p, data); err != nil {
		return "", verb + " refused: " + err.Error()
	}
	return string(data), ""
}

// diffOf is the bounded diff of a change for the result's meta: unified
// is UnifiedDiff of the change, old nil means a new file.
func diffOf(p string, old *string, updated, unified string) *event.Diff {
	was := ""
	if old != nil {
		was = *old
	}
	d := &event.Diff{Path: p, OldText: old, NewText: updated, Unified: unified, NewSHA256: sha(updated)}
	if old != nil {
		d.OldSHA256 = sha(*old)
	}
	if len(was)+len(updated) > diffInlineMax {
		d.OldText, d.NewText, d.Elided = nil, "", true
	}
	if len(d.Unified) > unifiedMax {
		cut := string(trimRuneEnd([]byte(d.Unified[:unifiedMax])))
		d.Unified = cut + fmt.Sprintf("\n[... the diff continues for %d more bytes ...]\n", len(d.Unified)-len(cut))
	}
	return d
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
