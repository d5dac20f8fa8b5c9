package core

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/saferead"
)

// A prompt may name workspace files with "@": "explain @src/main.go" or
// "@\"notes/a b.txt\"" attaches the file's text, "@src/" lists a folder, as
// Claude Code, opencode and gemini-cli do. The files are read when the
// prompt is queued, from every door alike (ACP, SDK, dsh run), with the
// rules dsh reads any file by on its own (core/saferead): inside the
// workspace roots, never through a secret place, regular files only,
// bounded. What was attached is recorded in the committed user message,
// one text block per mention after the text as typed, so a replay (and a
// resume) shows and sends the same thing. An "@" that names nothing (an
// email address, a decorator, @someone) is left as typed.

// Bounds of the attachments of one prompt.
const (
	mentionMaxFiles   = 20       // mentions attached per prompt; more are left as typed
	mentionFileBytes  = 64 << 10 // bytes of one file (cut past it, saying so)
	mentionTotalBytes = 256 << 10
	mentionDirEntries = 200 // names listed for a folder
)

// mentionTrail are characters that end a sentence around a mention
// ("see @a.go, then") and are not part of the path when the path with them
// names nothing.
const mentionTrail = ".,;:!?)]}'\"`"

// mention is one "@path" found in a prompt's text.
type mention struct {
	path string // as written, unquoted
}

// findMentions lists the "@path" tokens of text in order, each path once.
// An "@" counts at the start of the text or after white space or an
// opening bracket; the path runs to white space, or, quoted, to the
// closing quote.
func findMentions(text string) []mention {
	var out []mention
	seen := map[string]bool{}
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && !mentionBoundary(text[:i])) {
			continue
		}
		rest := text[i+1:]
		var p string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				continue
			}
			p = rest[1 : 1+end]
			i += 1 + end + 1
		} else {
			end := strings.IndexFunc(rest, unicode.IsSpace)
			if end < 0 {
				end = len(rest)
			}
			p = rest[:end]
			i += end
		}
		if p == "" || strings.ContainsRune(p, 0) || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, mention{path: p})
	}
	return out
}

// mentionBoundary reports whether an "@" after before starts a mention.
func mentionBoundary(before string) bool {
	r, _ := utf8.DecodeLastRuneInString(before)
	return unicode.IsSpace(r) || strings.ContainsRune("([{", r)
}

// mentionBlocks are the text blocks to add after content: one for each
// "@path" of its text blocks that names a file or folder in the workspace.
// Paths that name nothing are left alone; one that names something dsh
// may not read gets a block saying why, so the user and the model know it
// was not attached.
func (s *Session) mentionBlocks(content []event.ContentBlock) []event.ContentBlock {
	var ms []mention
	for _, b := range content {
		if b.Type == event.BlockText && strings.Contains(b.Text, "@") {
			ms = append(ms, findMentions(b.Text)...)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	pol := saferead.Policy{Roots: s.roots(), Secret: s.rt.cfg.SecretPaths, Max: mentionFileBytes}
	var blocks []event.ContentBlock
	budget, files := int64(mentionTotalBytes), 0
	for _, m := range ms {
		if files == mentionMaxFiles {
			break
		}
		text, ok := s.attachMention(pol, m.path, &budget)
		if !ok {
			continue
		}
		files++
		blocks = append(blocks, event.Text(text))
	}
	return blocks
}

// attachMention is the block text for the mention of path, ok false when
// the path names nothing (it is then no mention).
func (s *Session) attachMention(pol saferead.Policy, path string, budget *int64) (string, bool) {
	abs, shown, ok := s.mentionPath(path)
	if !ok {
		return "", false
	}
	st, err := os.Stat(abs)
	if err == nil && st.IsDir() {
		return listMention(pol, abs, shown)
	}
	f, err := pol.Read(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false
	case err != nil:
		return fmt.Sprintf("\n\n[dsh: @%s not attached: %s]", shown, mentionRefusal(err)), true
	case bytes.IndexByte(f.Data[:min(len(f.Data), 8000)], 0) >= 0:
		return fmt.Sprintf("\n\n[dsh: @%s not attached: a binary file (%d bytes)]", shown, f.Size), true
	case *budget <= 0:
		return fmt.Sprintf("\n\n[dsh: @%s not attached: the prompt's attachments passed %d KiB; read the file instead]", shown, mentionTotalBytes>>10), true
	}
	data := f.Data
	if int64(len(data)) > *budget {
		data = data[:*budget]
	}
	if int64(len(data)) < f.Size {
		data = cutWholeRunes(data)
	}
	*budget -= int64(len(data))
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n[dsh: @%s attached (%d bytes):]\n", shown, f.Size)
	b.Write(bytes.TrimRight(data, "\n"))
	if int64(len(data)) < f.Size {
		fmt.Fprintf(&b, "\n[cut at %d of %d bytes; read the file for the rest]", len(data), f.Size)
	}
	fmt.Fprintf(&b, "\n[end of %s]", shown)
	return b.String(), true
}

// cutWholeRunes drops a character the cut split at the end of b.
func cutWholeRunes(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// mentionPath resolves a mention's path against the session's cwd. A path
// that names nothing as written is tried without the punctuation that may
// end the sentence around it. shown is the path as the block names it.
func (s *Session) mentionPath(path string) (abs, shown string, ok bool) {
	for p := path; p != ""; p = p[:len(p)-1] {
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(s.header.Cwd, abs)
		}
		if _, err := os.Lstat(abs); err == nil {
			return abs, p, true
		}
		if !strings.ContainsRune(mentionTrail, rune(p[len(p)-1])) {
			break
		}
	}
	return "", "", false
}

// listMention is the block text listing a mentioned folder.
func listMention(pol saferead.Policy, abs, shown string) (string, bool) {
	real, err := pol.Check(abs)
	if err != nil {
		return fmt.Sprintf("\n\n[dsh: @%s not listed: %s]", shown, mentionRefusal(err)), true
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return fmt.Sprintf("\n\n[dsh: @%s not listed: %v]", shown, err), true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n[dsh: @%s is a folder of %d entries:]", shown, len(entries))
	for i, e := range entries {
		if i == mentionDirEntries {
			fmt.Fprintf(&b, "\n[and %d more; list the folder for the rest]", len(entries)-i)
			break
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		b.WriteString("\n" + name)
	}
	fmt.Fprintf(&b, "\n[end of %s]", shown)
	return b.String(), true
}

// mentionRefusal says why a mentioned path was not read, in words.
func mentionRefusal(err error) string {
	switch {
	case errors.Is(err, saferead.ErrOutside):
		return "outside the workspace"
	case errors.Is(err, saferead.ErrSecret):
		return "a secret place (keys, credentials)"
	case errors.Is(err, saferead.ErrNotRegular):
		return "not a regular file"
	case errors.Is(err, saferead.ErrLinkLoop):
		return "a symbolic link loop"
	}
	return err.Error()
}
