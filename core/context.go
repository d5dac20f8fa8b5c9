package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/safegit"
	"github.com/dsh-dev/dsh/core/saferead"
)

// The context message tells the model about its world: OS, shell, date,
// cwd, git, and the project instructions (AGENTS.md). It is a user-role
// message recorded as its own event (context/environment) just before the
// first prompt of a session, so the user's own words stay the last user
// message. Before a later prompt a new one is recorded only when a fact
// changed (the date, the branch, an instruction file): history is only
// ever appended to, so DeepSeek's cached prefix is never rewritten.

// Bounds of the context message.
const (
	// maxInstructions bounds the project instructions of one context
	// message, all files together. Files are read in order (user file,
	// then repository root down to the cwd); the file that crosses the
	// bound is cut, with its path given so the model can read the rest.
	maxInstructions = 64 << 10
	// gitTimeout bounds the git status run for a context message.
	gitTimeout = 3 * time.Second
	// shellPath is the shell the bash tool runs (tool.LocalExec).
	shellPath = "/bin/bash"
)

// instructionNames are the project-instruction file names, in order of
// preference: a directory's first existing non-empty one is used.
var instructionNames = []string{"AGENTS.md", "CLAUDE.md"}

// instruction is an instruction file as included in a context message.
type instruction struct {
	file event.InstructionFile
	text string
}

// environment gathers the facts of a context message for cwd.
func (r *Runtime) environment(ctx context.Context, cwd string) (event.EnvFacts, []instruction) {
	now := r.cfg.Now()
	name, off := now.Zone()
	f := event.EnvFacts{
		OS: runtime.GOOS, Arch: runtime.GOARCH, Cwd: cwd,
		Date:     now.Format("2006-01-02"),
		TimeZone: fmt.Sprintf("%s (%s)", name, formatOffset(off)),
	}
	if r.baseTools().byName["bash"] != nil {
		f.Shell = shellPath
	}
	root := gitRoot(cwd)
	if root != "" {
		f.GitRoot = root
		f.GitBranch, f.GitStatus = gitState(ctx, cwd, root)
	}
	instr := readInstructions(r.instructionReaders(root, cwd), r.cfg.UserInstructions, root, cwd)
	for _, in := range instr {
		f.Instructions = append(f.Instructions, in.file)
	}
	return f, instr
}

func formatOffset(sec int) string {
	sign := '+'
	if sec < 0 {
		sign, sec = '-', -sec
	}
	return fmt.Sprintf("%c%02d:%02d", sign, sec/3600, sec%3600/60)
}

// gitRoot is the nearest directory at or above cwd holding .git (a
// directory, or a file in a worktree or submodule), or "".
func gitRoot(cwd string) string {
	for dir := cwd; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// gitState returns the branch and a short status summary of the
// repository at root, asking git (bounded by gitTimeout). Without a
// usable git it reads the branch from HEAD and says the status is
// unknown.
func gitState(ctx context.Context, cwd, root string) (branch, status string) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	// The model may have planted programs in the repository's config
	// (core.fsmonitor, filters): safegit keeps git from running them.
	out, err := safegit.Repo{Dir: cwd}.Output(ctx, "status", "--porcelain=v1", "--branch", "--ignore-submodules=all")
	if err != nil {
		return headBranch(root), "unknown (git status failed)"
	}
	return parseGitStatus(out)
}

// parseGitStatus summarises `git status --porcelain=v1 --branch`.
func parseGitStatus(out []byte) (branch, status string) {
	changed, untracked, conflicts := 0, 0, 0
	tracking := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			branch, tracking = parseBranchLine(strings.TrimPrefix(line, "## "))
		case strings.HasPrefix(line, "?? "):
			untracked++
		case len(line) >= 3:
			xy := line[:2]
			if strings.Contains(xy, "U") || xy == "AA" || xy == "DD" {
				conflicts++
			} else {
				changed++
			}
		}
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{changed, "changed"}, {untracked, "untracked"}, {conflicts, "with merge conflicts"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	status = "clean"
	if len(parts) > 0 {
		status = strings.Join(parts, ", ")
	}
	if tracking != "" {
		status += "; " + tracking
	}
	return branch, status
}

// parseBranchLine reads "main...origin/main [ahead 1]", "No commits yet
// on main" or "HEAD (no branch)".
func parseBranchLine(s string) (branch, tracking string) {
	if rest, ok := strings.CutPrefix(s, "No commits yet on "); ok {
		return rest, "no commits yet"
	}
	if strings.HasPrefix(s, "HEAD (no branch)") {
		return "(detached HEAD)", ""
	}
	if i := strings.Index(s, " ["); i >= 0 && strings.HasSuffix(s, "]") {
		tracking = s[i+2 : len(s)-1]
		s = s[:i]
	}
	branch, upstream, ok := strings.Cut(s, "...")
	if ok && tracking != "" {
		tracking += " of " + upstream
	}
	return branch, tracking
}

// headBranch reads the branch from .git/HEAD (following a worktree's
// "gitdir:" file), for when git cannot be run.
func headBranch(root string) string {
	// .git and HEAD are the repository's: a FIFO or a link to /dev/zero
	// must not hang or fill dsh.
	read := func(p string) ([]byte, error) {
		f, err := saferead.Policy{Roots: []string{"/"}, Max: 4 << 10}.Read(p)
		return f.Data, err
	}
	gitDir := filepath.Join(root, ".git")
	if data, err := read(gitDir); err == nil {
		if d, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: "); ok {
			if !filepath.IsAbs(d) {
				d = filepath.Join(root, d)
			}
			gitDir = d
		}
	}
	data, err := read(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	head := strings.TrimSpace(string(data))
	if ref, ok := strings.CutPrefix(head, "ref: refs/heads/"); ok {
		return ref
	}
	return "(detached HEAD)"
}

// instructionDirs lists the directories whose instruction files apply to
// cwd: the repository root down to cwd, or cwd alone outside a repository.
func instructionDirs(root, cwd string) []string {
	if root == "" {
		return []string{cwd}
	}
	var dirs []string
	for dir := cwd; ; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
		if dir == root || filepath.Dir(dir) == dir {
			break
		}
	}
	slices.Reverse(dirs)
	return dirs
}

// readers are the rules instruction files are read with: the project's
// must lie in the repository (or the cwd outside one) or the session's
// other roots; the user's own file (in the user's config folder, which
// commands cannot write) may link anywhere. Neither may be or pass through
// a secret place, nor be anything but a regular file.
type readers struct {
	project, user saferead.Policy
}

// instructionReaders are the readers for a session in cwd whose
// repository root is root ("" outside one).
func (r *Runtime) instructionReaders(root, cwd string, more ...string) readers {
	top := root
	if top == "" {
		top = cwd
	}
	return readers{
		project: saferead.Policy{Roots: append([]string{top}, more...), Secret: r.cfg.SecretPaths},
		user:    saferead.Policy{Roots: []string{"/"}, Secret: r.cfg.SecretPaths},
	}
}

// readInstructions reads the user-level file, then each directory's file
// from the repository root down to cwd, each file once (a symlinked
// CLAUDE.md → AGENTS.md counts once), within maxInstructions in total.
func readInstructions(rd readers, userFile, root, cwd string) []instruction {
	var paths []string
	if userFile != "" {
		paths = append(paths, userFile)
	}
	for _, dir := range instructionDirs(root, cwd) {
		for _, name := range instructionNames {
			p := filepath.Join(dir, name)
			if nonEmptyFile(p) {
				paths = append(paths, p)
				break
			}
		}
	}
	seen := map[string]bool{}
	budget := int64(maxInstructions)
	var out []instruction
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		pol := rd.project
		if p == userFile {
			pol = rd.user
		}
		in, ok := readInstruction(pol, p, budget)
		if !ok {
			continue
		}
		budget -= in.file.Shown
		out = append(out, in)
		if budget <= 0 {
			break
		}
	}
	return out
}

func nonEmptyFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

// readInstruction reads at most budget bytes of p under pol; a file pol
// refuses (a link to a key, outside the workspace, a FIFO) is left out.
func readInstruction(pol saferead.Policy, p string, budget int64) (instruction, bool) {
	pol.Max = budget
	f, err := pol.Read(p)
	if err != nil || len(bytes.TrimSpace(f.Data)) == 0 {
		return instruction{}, false
	}
	data := f.Data
	text := string(data)
	if f.Cut() {
		// Cut on a rune boundary; the rest is for the model to read.
		text = strings.ToValidUTF8(text, "")
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	sum := sha256.Sum256(data)
	return instruction{text: text, file: event.InstructionFile{Path: p, Bytes: f.Size, Shown: int64(len(data)),
		SHA256: hex.EncodeToString(sum[:])}}, true
}

// envChanges names the facts of cur that differ from prev. The git
// status summary is not compared: the agent's own edits change it.
func envChanges(prev, cur event.EnvFacts) []string {
	var out []string
	add := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	add("os", prev.OS != cur.OS || prev.Arch != cur.Arch)
	add("shell", prev.Shell != cur.Shell)
	add("date", prev.Date != cur.Date || prev.TimeZone != cur.TimeZone)
	add("cwd", prev.Cwd != cur.Cwd)
	add("git", prev.GitRoot != cur.GitRoot || prev.GitBranch != cur.GitBranch)
	add("instructions", !slices.Equal(prev.Instructions, cur.Instructions))
	return out
}

// contextText renders a context message. changed is nil for the first
// one; a later one says what changed and repeats the instructions only
// when they did.
func contextText(f event.EnvFacts, instr []instruction, changed []string) string {
	weekday := "?"
	if d, err := time.Parse("2006-01-02", f.Date); err == nil {
		weekday = d.Weekday().String()
	}
	var b strings.Builder
	b.WriteString(model.ContextTag)
	b.WriteString("\n")
	if changed == nil {
		b.WriteString("Facts about this session's environment, from dsh (not written by the user). " +
			"They hold until a later context message says otherwise.\n")
	} else {
		fmt.Fprintf(&b, "The environment changed since the last context message (%s). Current facts, from dsh:\n",
			strings.Join(changed, ", "))
	}
	fmt.Fprintf(&b, "Operating system: %s/%s\n", f.OS, f.Arch)
	if f.Shell != "" {
		fmt.Fprintf(&b, "Shell: %s (the bash tool starts a fresh one for each call)\n", f.Shell)
	}
	fmt.Fprintf(&b, "Today's date: %s (%s), time zone %s\n", f.Date, weekday, f.TimeZone)
	fmt.Fprintf(&b, "Working directory: %s\n", f.Cwd)
	if f.GitRoot == "" {
		b.WriteString("Git: the working directory is not inside a git repository\n")
	} else {
		branch := f.GitBranch
		if branch == "" {
			branch = "unknown"
		}
		fmt.Fprintf(&b, "Git: repository at %s, branch %s; working tree now: %s\n", f.GitRoot, branch, f.GitStatus)
	}
	b.WriteString("\n")
	switch {
	case changed != nil && !slices.Contains(changed, "instructions"):
		b.WriteString("Project instructions: unchanged.\n")
	case len(instr) == 0:
		b.WriteString("Project instructions: no AGENTS.md or CLAUDE.md applies to this working directory.\n")
	default:
		b.WriteString("Project instructions, from the most general to the most specific (a later file " +
			"overrides an earlier one; the user's own words override them all):\n")
		for _, in := range instr {
			fmt.Fprintf(&b, "\n<instructions path=%q>\n", in.file.Path)
			b.WriteString(strings.TrimRight(in.text, "\n"))
			if in.file.Shown < in.file.Bytes {
				fmt.Fprintf(&b, "\n[... cut: %d of %d bytes shown; read %s for the rest]",
					in.file.Shown, in.file.Bytes, in.file.Path)
			}
			b.WriteString("\n</instructions>\n")
		}
	}
	b.WriteString("</dsh-context>")
	return b.String()
}

// sendContext records a context message before a turn's prompts: always
// before the first prompt of a session, later only when a fact changed.
func (s *Session) sendContext(ctx context.Context, turn int) error {
	facts, instr := s.rt.environment(ctx, s.header.Cwd)
	s.commitMu.Lock()
	prev := s.envFacts
	s.commitMu.Unlock()
	env := event.Environment{Turn: turn, Reason: "initial", Facts: facts}
	var changed []string
	if prev != nil {
		changed = envChanges(*prev, facts)
		if len(changed) == 0 {
			return nil
		}
		env.Reason, env.Changed = "changed", changed
	}
	text := contextText(facts, instr, changed)
	env.Message = event.Message{ID: uuid.NewString(), Role: "user", Content: []event.ContentBlock{event.Text(text)},
		Source: event.Source{Kind: "context"}}
	_, err := s.emit(event.TypeEnvironment, env)
	return err
}

// isChild reports whether the session works for a parent agent: a child
// session of this process, or any session of a dsh started by another
// dsh's subagent gateway.
func (s *Session) isChild() bool {
	return s.header.ParentSession != "" || s.header.DelegationDepth > 0
}
