package core

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/saferead"
)

// Nested instruction files. The context message carries the AGENTS.md
// chain from the repository root down to the cwd; a file in a folder below
// (or beside that chain, elsewhere in the repository) applies only to work
// under its folder, so it joins the result of the first tool call that
// touches a path under it — once per session, as the original does. The
// files shown are recorded on that tool/result (Instructions), so a resume
// knows them; a compaction forgets them (the results they rode on are
// summarised away), so they are shown again when next touched.

// Bounds of nested instructions: one file, and all of them between
// compactions (the context message's own files have maxInstructions).
const (
	maxNestedFile  = 16 << 10
	maxNestedTotal = 64 << 10
)

// nestedState is what the session has shown, guarded by Session.mu.
type nestedState struct {
	shown map[string]bool // real paths
	bytes int64
}

// noteNested records files shown (a committed tool/result's, or one being
// shown now). Called with s.mu held.
func (s *Session) noteNested(files []event.InstructionFile) {
	if s.nested.shown == nil {
		s.nested.shown = map[string]bool{}
	}
	for _, f := range files {
		s.nested.shown[realPath(f.Path)] = true
		s.nested.bytes += f.Shown
	}
}

// nestedInstructions returns the instruction files that apply to paths
// (the files a tool call touched) and have not been shown in this session,
// as text to append to the call's result, and the files for its record.
func (s *Session) nestedInstructions(paths []string) (string, []event.InstructionFile) {
	top, chain := s.instructionScope()
	if top == "" {
		return "", nil
	}
	var found []string
	for _, p := range paths {
		for _, f := range instructionFilesFor(top, p) {
			if r := realPath(f); !chain[r] && !slices.Contains(found, f) {
				found = append(found, f)
			}
		}
	}
	var b strings.Builder
	var files []event.InstructionFile
	for _, f := range found {
		in, ok := s.claimNested(f)
		if !ok {
			continue
		}
		files = append(files, in.file)
		writeNested(&b, top, in)
	}
	return b.String(), files
}

// instructionScope is the folder nested files are looked for under (the
// repository root, else the cwd) and the real paths of the context
// message's own files.
func (s *Session) instructionScope() (string, map[string]bool) {
	s.commitMu.Lock()
	facts := s.envFacts
	s.commitMu.Unlock()
	if facts == nil {
		return "", nil
	}
	top := facts.GitRoot
	if top == "" {
		top = facts.Cwd
	}
	chain := map[string]bool{}
	for _, f := range facts.Instructions {
		chain[realPath(f.Path)] = true
	}
	return top, chain
}

// instructionFilesFor lists the instruction file of each folder from top
// down to path's own (path itself when it is a folder), where one exists.
func instructionFilesFor(top, path string) []string {
	dir := path
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		dir = filepath.Dir(path)
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	var out []string
	for d := dir; ; d = filepath.Dir(d) {
		for _, name := range instructionNames {
			if p := filepath.Join(d, name); nonEmptyFile(p) {
				out = append(out, p)
				break
			}
		}
		if d == top || filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(out)
	return out
}

// claimNested reads f if it was not shown yet and the session's budget
// allows, and marks it shown (parallel calls claim each file once).
func (s *Session) claimNested(f string) (instruction, bool) {
	r := realPath(f)
	s.mu.Lock()
	room := min(int64(maxNestedFile), maxNestedTotal-s.nested.bytes)
	if s.nested.shown[r] || room <= 0 {
		s.mu.Unlock()
		return instruction{}, false
	}
	// Claimed (shown counts its bytes once its result is committed:
	// absorb notes the recorded files).
	s.noteNested([]event.InstructionFile{{Path: f}})
	s.mu.Unlock()
	return readInstruction(s.nestedReader(), f, room)
}

// nestedReader is the rule nested files are read with: inside the
// repository (or cwd) and the session's other roots.
func (s *Session) nestedReader() saferead.Policy {
	top, _ := s.instructionScope()
	return s.rt.instructionReaders(top, top, s.AdditionalDirs()...).project
}

// writeNested appends one file as the result shows it.
func writeNested(b *strings.Builder, top string, in instruction) {
	rel := func(p string) string {
		if r, err := filepath.Rel(top, p); err == nil {
			return r
		}
		return p
	}
	fmt.Fprintf(b, "\n\n[dsh: project instructions for work under %s/, from %s (in addition to those of the context message):]\n",
		rel(filepath.Dir(in.file.Path)), rel(in.file.Path))
	b.WriteString(strings.TrimRight(in.text, "\n"))
	if in.file.Shown < in.file.Bytes {
		fmt.Fprintf(b, "\n[cut at %d of %d bytes; read the file for the rest]", in.file.Shown, in.file.Bytes)
	}
	fmt.Fprintf(b, "\n[end of %s]", rel(in.file.Path))
}

// realPath resolves symlinks where it can (a CLAUDE.md → AGENTS.md link is
// one file).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
