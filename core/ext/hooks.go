package ext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/lazyre"
)

// Hook events dsh runs (Claude Code's names).
const (
	PreToolUse       = "PreToolUse"
	PostToolUse      = "PostToolUse"
	UserPromptSubmit = "UserPromptSubmit"
	Stop             = "Stop"
	SessionStart     = "SessionStart"
	PreCompact       = "PreCompact"
)

var hookEvents = []string{PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart, PreCompact}

// Bounds of hooks.
const (
	// DefaultHookTimeout is a hook's time when it names none; a named one
	// is capped at MaxHookTimeout.
	DefaultHookTimeout = 60 * time.Second
	MaxHookTimeout     = 10 * time.Minute
	// MaxHookOutput bounds what is kept of a hook's stdout and of its
	// stderr.
	MaxHookOutput = 64 << 10
	// maxSettingsBytes bounds a settings file.
	maxSettingsBytes = 1 << 20
)

// Hook is one command to run on an event.
type Hook struct {
	Event   string
	Matcher string
	Command string
	Timeout time.Duration
	// Source is the file the hook came from; Scope whether it is the
	// user's (runs always) or a project's (runs once trusted).
	Source string
	Scope  Scope
	match  func(string) bool
}

// Matches reports whether the hook applies to target: a tool name for the
// tool events (dsh's; Claude Code's names in the matcher are mapped), the
// source of SessionStart, the trigger of PreCompact; events without a
// target match always.
func (h Hook) Matches(target string) bool { return h.match == nil || h.match(target) }

type hookGroup struct {
	Matcher *string `json:"matcher"`
	Hooks   []struct {
		Type    string   `json:"type"`
		Command string   `json:"command"`
		Timeout *float64 `json:"timeout"`
	} `json:"hooks"`
}

// ParseHooks reads a "hooks" object in Claude Code's settings shape:
// {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
// "command": "…", "timeout": 30}]}]}. An entry dsh cannot run (another
// type, an event it does not have) is a diagnostic; the rest load.
func ParseHooks(raw json.RawMessage, source string, scope Scope) ([]Hook, []Diagnostic) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var byEvent map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byEvent); err != nil {
		return nil, []Diagnostic{{source, "hooks: want an object of events, such as {\"PreToolUse\": [...]}"}}
	}
	var out []Hook
	var diags []Diagnostic
	events := make([]string, 0, len(byEvent))
	for ev := range byEvent {
		events = append(events, ev)
	}
	sort.Strings(events)
	for _, ev := range events {
		if !contains(hookEvents, ev) {
			diags = append(diags, Diagnostic{source, fmt.Sprintf("hooks: event %q is not run by dsh (it runs %s); ignored", ev, strings.Join(hookEvents, ", "))})
			continue
		}
		var groups []hookGroup
		if err := json.Unmarshal(byEvent[ev], &groups); err != nil {
			diags = append(diags, Diagnostic{source, fmt.Sprintf("hooks.%s: want a list of {matcher, hooks: [...]}", ev)})
			continue
		}
		for gi, g := range groups {
			matcher := ""
			if g.Matcher != nil {
				matcher = *g.Matcher
			}
			match, err := compileMatcher(ev, matcher)
			if err != nil {
				diags = append(diags, Diagnostic{source, fmt.Sprintf("hooks.%s[%d]: %v; ignored", ev, gi, err)})
				continue
			}
			for hi, h := range g.Hooks {
				where := fmt.Sprintf("hooks.%s[%d].hooks[%d]", ev, gi, hi)
				if h.Type != "command" {
					diags = append(diags, Diagnostic{source, fmt.Sprintf("%s: type %q is not supported (dsh runs type \"command\"); ignored", where, h.Type)})
					continue
				}
				if strings.TrimSpace(h.Command) == "" {
					diags = append(diags, Diagnostic{source, where + ": command is empty; ignored"})
					continue
				}
				t := DefaultHookTimeout
				if h.Timeout != nil {
					if *h.Timeout <= 0 {
						diags = append(diags, Diagnostic{source, where + ": timeout must be a positive number of seconds; the default is used"})
					} else if *h.Timeout >= MaxHookTimeout.Seconds() {
						t = MaxHookTimeout // also keeps 1e12 from overflowing a Duration
					} else {
						t = time.Duration(*h.Timeout * float64(time.Second))
					}
				}
				out = append(out, Hook{Event: ev, Matcher: matcher, Command: h.Command, Timeout: t, Source: source, Scope: scope, match: match})
			}
		}
	}
	return out, diags
}

var exactMatcher = lazyre.New(`^[A-Za-z0-9_\-, |]*$`)

// compileMatcher follows Claude Code: none, "" or "*" match everything;
// only letters, digits, _ - , | and spaces are exact names split on | or
// ","; anything else is an unanchored regular expression. Tool names in
// it may be Claude's (Bash) or dsh's (bash).
func compileMatcher(ev, m string) (func(string) bool, error) {
	m = strings.TrimSpace(m)
	if m == "" || m == "*" {
		return nil, nil
	}
	tools := ev == PreToolUse || ev == PostToolUse
	if exactMatcher().MatchString(m) {
		names := map[string]bool{}
		for _, n := range strings.FieldsFunc(m, func(r rune) bool { return r == '|' || r == ',' }) {
			if n = strings.TrimSpace(n); n != "" {
				names[n] = true
				if tools {
					names[ToolName(n)] = true
				}
			}
		}
		return func(t string) bool { return names[t] }, nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return nil, fmt.Errorf("matcher %q is not a valid regular expression", m)
	}
	return func(t string) bool {
		if re.MatchString(t) {
			return true
		}
		for _, c := range claudeNames(t) {
			if re.MatchString(c) {
				return true
			}
		}
		return false
	}, nil
}

// claudeNames are Claude Code's names of a dsh tool.
func claudeNames(t string) []string {
	var out []string
	for c, d := range claudeTools {
		if d == t {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// settingsFiles are the project files whose "hooks" dsh reads, in each
// project folder.
var settingsFiles = []string{".dsh/settings.json", ".claude/settings.json", ".claude/settings.local.json"}

// LoadProjectHooks reads the hooks of the project settings files of
// r.Cwd (and its parents up to the repository root). Only the "hooks" key
// is read; a file that is not JSON is a diagnostic.
func LoadProjectHooks(r Roots) ([]Hook, []Diagnostic) {
	var out []Hook
	var diags []Diagnostic
	pol := r.policy(ScopeProject)
	for _, d := range projectDirs(r.Cwd) {
		for _, name := range settingsFiles {
			p := filepath.Join(d, name)
			data, err := readFile(pol, p, maxSettingsBytes)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such file") {
					diags = append(diags, Diagnostic{p, err.Error()})
				}
				continue
			}
			var s struct {
				Hooks json.RawMessage `json:"hooks"`
			}
			if err := json.Unmarshal(data, &s); err != nil {
				diags = append(diags, Diagnostic{p, "not valid JSON: " + err.Error()})
				continue
			}
			hs, ds := ParseHooks(s.Hooks, p, ScopeProject)
			out, diags = append(out, hs...), append(diags, ds...)
		}
	}
	return out, diags
}

// HookOutcome is what a hook's run means for its event.
type HookOutcome struct {
	// Block refuses what the event is about (the tool call, the prompt,
	// the compaction) or, for Stop, keeps the turn going; Reason says why.
	Block  bool
	Reason string
	// Context is text to add for the model (UserPromptSubmit,
	// SessionStart, PostToolUse additionalContext).
	Context string
	// Message is for the user only (systemMessage, or a failure).
	Message string
	// Failed: the hook could not run, timed out or exited with a code
	// other than 0 or 2 (reported, never fatal).
	Failed bool
	// Decision is a PreToolUse hook's permission answer besides a block:
	// DecisionAllow (skip the question the mode would ask) or DecisionAsk
	// (ask even where the mode would allow); DecisionReason is for the
	// person, not the model.
	Decision       string
	DecisionReason string
	// UpdatedInput is a PreToolUse hook's replacement of the call's
	// arguments (a JSON object, the whole input).
	UpdatedInput json.RawMessage
}

// PreToolUse permission answers (HookOutcome.Decision).
const (
	DecisionAllow = "allow"
	DecisionAsk   = "ask"
)

// hookJSON is the JSON a hook may print on stdout (Claude Code's shape).
type hookJSON struct {
	Continue      *bool  `json:"continue"`
	StopReason    string `json:"stopReason"`
	SystemMessage string `json:"systemMessage"`
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	HookSpecific  *struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		AdditionalContext        string          `json:"additionalContext"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// Interpret turns a hook's exit code and output into its outcome, as
// Claude Code does: exit 2 blocks with stderr as the reason; exit 0 reads
// stdout as JSON when it starts with "{", else as context for the events
// that take it; any other code is a failure that blocks nothing.
func Interpret(event string, exit int, stdout, stderr string) HookOutcome {
	stdout, stderr = strings.TrimSpace(stdout), strings.TrimSpace(stderr)
	switch exit {
	case 2:
		reason := stderr
		if reason == "" {
			reason = "refused by a hook (exit code 2, no message)"
		}
		if event == PostToolUse || event == SessionStart {
			// Cannot block: the model (PostToolUse) or the user is told.
			return HookOutcome{Context: reasonFor(event, reason), Message: reason}
		}
		return HookOutcome{Block: true, Reason: reason}
	case 0:
	default:
		msg := fmt.Sprintf("hook exited with code %d", exit)
		if stderr != "" {
			msg += ": " + firstLines(stderr, 5)
		}
		return HookOutcome{Failed: true, Message: msg}
	}
	if strings.HasPrefix(stdout, "{") {
		var j hookJSON
		if err := json.Unmarshal([]byte(stdout), &j); err == nil {
			return fromJSON(event, j)
		}
	}
	if event == UserPromptSubmit || event == SessionStart {
		return HookOutcome{Context: stdout}
	}
	return HookOutcome{}
}

func reasonFor(event, reason string) string {
	if event == PostToolUse {
		return "A hook reports: " + reason
	}
	return ""
}

func fromJSON(event string, j hookJSON) HookOutcome {
	o := HookOutcome{Message: j.SystemMessage, Reason: j.Reason}
	if j.Continue != nil && !*j.Continue {
		o.Block, o.Reason = true, firstNonEmpty(j.StopReason, j.Reason, "stopped by a hook")
	}
	switch j.Decision {
	case "block":
		o.Block = true
	case "approve": // the old PreToolUse spelling of allow
		if event == PreToolUse {
			o.Decision, o.DecisionReason = DecisionAllow, j.Reason
		}
	}
	if hs := j.HookSpecific; hs != nil {
		o.Context = hs.AdditionalContext
		if event == PreToolUse {
			preToolJSON(&o, j, hs.PermissionDecision, hs.PermissionDecisionReason, hs.UpdatedInput)
		}
	}
	if o.Block && o.Reason == "" {
		o.Reason = "refused by a hook"
	}
	if event == PostToolUse && o.Block {
		// PostToolUse cannot undo the call: its reason goes to the model.
		o.Block, o.Context = false, strings.TrimSpace(o.Context+"\n"+o.Reason)
	}
	return o
}

// preToolJSON reads a PreToolUse hook's hookSpecificOutput: deny blocks
// (its reason goes to the model), allow and ask are answers for the
// permission gate (their reason is the person's), defer is no answer;
// updatedInput, when an object, replaces the call's arguments.
func preToolJSON(o *HookOutcome, j hookJSON, decision, reason string, updated json.RawMessage) {
	switch decision {
	case "deny":
		o.Block, o.Reason = true, firstNonEmpty(reason, j.Reason)
	case DecisionAllow, DecisionAsk:
		o.Decision, o.DecisionReason = decision, reason
	case "", "defer":
	default:
		o.Message = joinLines(o.Message, fmt.Sprintf("permissionDecision %q is not allow, deny, ask or defer; ignored", decision))
	}
	updated = bytes.TrimSpace(updated)
	switch {
	case len(updated) == 0 || string(updated) == "null":
	case updated[0] != '{':
		o.Message = joinLines(o.Message, "updatedInput is not a JSON object; ignored")
	default:
		o.UpdatedInput = append(json.RawMessage(nil), updated...)
	}
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// Trusted reports whether dir is one of the trusted folders or under one.
// Both sides are compared cleaned and with symlinks resolved.
func Trusted(dir string, trusted []string) bool {
	d := realDir(dir)
	for _, t := range trusted {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		rt := realDir(t)
		if d == rt || strings.HasPrefix(d, strings.TrimSuffix(rt, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func realDir(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
