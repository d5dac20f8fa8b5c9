package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/dsh-dev/dsh/core/tool"
)

// Rule is a remembered "always" answer: calls of Tool matching Pattern are
// allowed (Allow) or refused without asking.
//
// Pattern is, for bash, a command prefix in words ("git status" matches
// "git status -s") or, for a command a prefix cannot judge, the exact
// command line; for file tools, a path glob ("src/**" relative to the
// workspace, "/etc/**" outside it); "*" matches every call of the tool.
type Rule struct {
	Tool    string `json:"tool"`
	Pattern string `json:"pattern"`
	Allow   bool   `json:"allow"`
}

// String renders a rule for logs and decisions: `allow bash(git status)`.
func (r Rule) String() string {
	verb := "deny"
	if r.Allow {
		verb = "allow"
	}
	return fmt.Sprintf("%s %s(%s)", verb, r.Tool, r.Pattern)
}

// Rules is the remembered rules of one project, persisted as JSON at a path
// chosen by the caller. Safe for concurrent use; Add is safe across
// processes (flock on a lock file next to the rules, re-read under the
// lock) so two sessions of one project never lose each other's rules.
type Rules struct {
	path  string
	mu    sync.Mutex
	rules []Rule
}

type rulesFile struct {
	Version int    `json:"version"`
	Rules   []Rule `json:"rules"`
}

// LoadRules reads the rules at path; a missing file is an empty set. A
// file that is not valid rules JSON is an error, never silently ignored:
// it may hold a deny the user counts on.
func LoadRules(path string) (*Rules, error) {
	if path == "" {
		return nil, errors.New("permission rules: no file path given")
	}
	rules, err := readRules(path)
	if err != nil {
		return nil, err
	}
	return &Rules{path: path, rules: rules}, nil
}

func readRules(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("permission rules: read %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var f rulesFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("permission rules: %s is not a valid rules file: %w", path, err)
	}
	for i, r := range f.Rules {
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("permission rules: %s: rule %d: %w", path, i, err)
		}
	}
	return f.Rules, nil
}

func (r Rule) validate() error {
	if strings.TrimSpace(r.Tool) == "" {
		return errors.New("tool is empty")
	}
	if strings.TrimSpace(r.Pattern) == "" {
		return errors.New("pattern is empty")
	}
	return nil
}

// Path is the file the rules are kept in.
func (rs *Rules) Path() string { return rs.path }

// List returns a copy of the rules.
func (rs *Rules) List() []Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]Rule(nil), rs.rules...)
}

// Add remembers a rule and persists the set atomically (temp file, fsync,
// rename, folder fsync). A rule for the same tool and pattern replaces the
// older one: the latest answer wins.
func (rs *Rules) Add(r Rule) error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("permission rules: %w", err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(rs.path), 0o755); err != nil {
		return fmt.Errorf("permission rules: %w", err)
	}
	unlock, err := lockFile(rs.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	current, err := readRules(rs.path)
	if err != nil {
		return err
	}
	merged := make([]Rule, 0, len(current)+1)
	for _, c := range current {
		if c.Tool != r.Tool || c.Pattern != r.Pattern {
			merged = append(merged, c)
		}
	}
	merged = append(merged, r)
	if err := writeRules(rs.path, merged); err != nil {
		return err
	}
	rs.rules = merged
	return nil
}

// Remove forgets a rule (same tool, pattern and verb) and persists the set
// like Add. It reports whether the rule was there.
func (rs *Rules) Remove(r Rule) (bool, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.path == "" {
		return false, nil
	}
	unlock, err := lockFile(rs.path + ".lock")
	if err != nil {
		return false, err
	}
	defer unlock()
	current, err := readRules(rs.path)
	if err != nil {
		return false, err
	}
	kept := make([]Rule, 0, len(current))
	for _, c := range current {
		if c != r {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(current) {
		rs.rules = current
		return false, nil
	}
	if err := writeRules(rs.path, kept); err != nil {
		return false, err
	}
	rs.rules = kept
	return true, nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("permission rules: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("permission rules: lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func writeRules(path string, rules []Rule) (err error) {
	data, err := json.MarshalIndent(rulesFile{Version: 1, Rules: rules}, "", "  ")
	if err != nil {
		return fmt.Errorf("permission rules: %w", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("permission rules: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("permission rules: write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("permission rules: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("permission rules: fsync: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("permission rules: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("permission rules: rename into place: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("permission rules: fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("permission rules: fsync %s: %w", dir, err)
	}
	return nil
}

// Match finds the rule deciding req: a matching deny wins over any allow.
// For bash, a deny matches when any command the line may run starts with
// its words: each part of ;, &&, ||, | and substitutions, through absolute
// paths, command/builtin/exec/env/sudo/nice/timeout/xargs and other
// wrappers, and inside bash -c, eval and find -exec (see analyse); an allow needs every simple command
// covered by some allow rule and a line a prefix can judge, or the exact
// line. For file tools, a deny matches when any path matches; an allow
// needs every path matched.
func (rs *Rules) Match(req Request) (Rule, bool) {
	if rs == nil {
		return Rule{}, false
	}
	rs.mu.Lock()
	var deny, allow []Rule
	for _, r := range rs.rules {
		if r.Tool != req.Tool {
			continue
		}
		if r.Allow {
			allow = append(allow, r)
		} else {
			deny = append(deny, r)
		}
	}
	rs.mu.Unlock()
	if len(deny) == 0 && len(allow) == 0 {
		return Rule{}, false
	}
	if req.Command != "" {
		return matchCommand(req.Command, deny, allow)
	}
	if len(req.Paths) > 0 {
		return matchPaths(req, deny, allow)
	}
	for _, r := range append(deny, allow...) {
		if r.Pattern == "*" {
			return r, true
		}
	}
	return Rule{}, false
}

func matchCommand(cmd string, deny, allow []Rule) (Rule, bool) {
	line := strings.TrimSpace(cmd)
	sp := splitCommand(line)
	if len(deny) > 0 {
		a := analyse(line)
		for _, r := range deny {
			if r.Pattern == "*" || r.Pattern == line || a.denies(r.Pattern) {
				return r, true
			}
		}
	}
	for _, r := range allow {
		if r.Pattern == "*" || r.Pattern == line {
			return r, true
		}
	}
	if sp.opaque || len(sp.parts) == 0 {
		return Rule{}, false
	}
	var first Rule
	for i, part := range sp.parts {
		found := false
		for _, r := range allow {
			if hasWordPrefix(part, r.Pattern) {
				if i == 0 {
					first = r
				}
				found = true
				break
			}
		}
		if !found {
			return Rule{}, false
		}
	}
	return first, true
}

// Suspect returns a deny rule for bash whose command req's line mentions
// when the line cannot be analysed with confidence (see analysis): it may
// run the denied command in a way no rule can see (`X=rm; $X f`,
// `echo rm f | sh`), so it must be asked about, never allowed by a mode or
// an allow rule. A line a deny rule matches outright is Match's business.
func (rs *Rules) Suspect(req Request) (Rule, bool) {
	if rs == nil || req.Command == "" {
		return Rule{}, false
	}
	rs.mu.Lock()
	var deny []Rule
	for _, r := range rs.rules {
		if r.Tool == req.Tool && !r.Allow && r.Pattern != "*" {
			deny = append(deny, r)
		}
	}
	rs.mu.Unlock()
	if len(deny) == 0 {
		return Rule{}, false
	}
	line := strings.TrimSpace(req.Command)
	if !analyse(line).unsure {
		return Rule{}, false
	}
	for _, r := range deny {
		if mentions(line, r.Pattern) {
			return r, true
		}
	}
	return Rule{}, false
}

// hasWordPrefix reports whether the words of pattern begin words.
func hasWordPrefix(words []string, pattern string) bool {
	pw := strings.Fields(pattern)
	if len(pw) == 0 || len(pw) > len(words) {
		return false
	}
	for i := range pw {
		if pw[i] != words[i] {
			return false
		}
	}
	return true
}

func stripAssignments(words []string) []string {
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:]
	}
	return words
}

func matchPaths(req Request, deny, allow []Rule) (Rule, bool) {
	forms := make([]string, len(req.Paths))
	for i, p := range req.Paths {
		forms[i] = pathForm(req.Workspace, p)
	}
	for _, r := range deny {
		for _, f := range forms {
			if pathRuleMatches(r.Pattern, f) {
				return r, true
			}
		}
	}
	var first Rule
	for i, f := range forms {
		found := false
		for _, r := range allow {
			if pathRuleMatches(r.Pattern, f) {
				if i == 0 {
					first = r
				}
				found = true
				break
			}
		}
		if !found {
			return Rule{}, false
		}
	}
	return first, true
}

// pathForm is how a path is matched against rules: relative to the
// workspace when inside it, so a project's rules survive moving it;
// absolute otherwise.
func pathForm(workspace, p string) string {
	if workspace != "" && tool.Inside(workspace, p) {
		ws, err := tool.Resolve("/", workspace)
		if err == nil {
			if rel, err := filepath.Rel(ws, p); err == nil {
				return filepath.ToSlash(rel)
			}
		}
	}
	return p
}

func pathRuleMatches(pattern, form string) bool {
	if pattern == "*" {
		return true
	}
	if filepath.IsAbs(pattern) != filepath.IsAbs(form) {
		return false
	}
	return tool.MatchGlob(pattern, form)
}

// CommandPrefix normalises a command line to the prefix an "always" answer
// remembers: the first word, plus the second when it looks like a
// subcommand (`git status -s` → `git status`, `ls -la` → `ls`). It returns
// "" for a line a prefix cannot stand for: several commands, a
// substitution, a redirection to a file, or a leading VAR=value.
func CommandPrefix(cmd string) string {
	sp := splitCommand(strings.TrimSpace(cmd))
	if sp.opaque || len(sp.parts) != 1 {
		return ""
	}
	return prefixOf(sp.parts[0])
}

func prefixOf(words []string) string {
	if len(words) == 0 || isAssignment(words[0]) || strings.ContainsAny(words[0], " \t") {
		return ""
	}
	if len(words) > 1 && isSubcommand(words[1]) {
		return words[0] + " " + words[1]
	}
	return words[0]
}

func isSubcommand(w string) bool {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// PathPattern is the glob an "always" answer remembers for a file path:
// its folder (the path itself when it is a folder) and everything below,
// relative to the workspace when inside it (`src/**`, or `**` at the
// root), absolute otherwise (`/etc/**`).
func PathPattern(workspace, p string) string {
	dir := p
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		dir = filepath.Dir(p)
	}
	form := pathForm(workspace, dir)
	switch form {
	case ".":
		return "**"
	case "/":
		return "/**"
	}
	return form + "/**"
}

// RulesFor returns the rules an "always" answer to req creates. For bash:
// one prefix rule per command of the line when each has a prefix (allow
// only), else the exact line. For file tools: one glob per folder touched.
// Otherwise the tool as a whole ("*").
func RulesFor(req Request, allow bool) []Rule {
	if req.Command != "" {
		line := strings.TrimSpace(req.Command)
		sp := splitCommand(line)
		if allow && !sp.opaque && len(sp.parts) > 0 {
			var out []Rule
			ok := true
			for _, part := range sp.parts {
				p := prefixOf(part)
				if p == "" {
					ok = false
					break
				}
				out = appendUnique(out, Rule{Tool: req.Tool, Pattern: p, Allow: allow})
			}
			if ok {
				return out
			}
		}
		if !allow && len(sp.parts) == 1 && !sp.opaque {
			if p := CommandPrefix(line); p != "" {
				return []Rule{{Tool: req.Tool, Pattern: p, Allow: false}}
			}
		}
		return []Rule{{Tool: req.Tool, Pattern: line, Allow: allow}}
	}
	if len(req.Paths) > 0 {
		var out []Rule
		for _, p := range req.Paths {
			out = appendUnique(out, Rule{Tool: req.Tool, Pattern: PathPattern(req.Workspace, p), Allow: allow})
		}
		return out
	}
	return []Rule{{Tool: req.Tool, Pattern: "*", Allow: allow}}
}

func appendUnique(rs []Rule, r Rule) []Rule {
	for _, x := range rs {
		if x == r {
			return rs
		}
	}
	return append(rs, r)
}
