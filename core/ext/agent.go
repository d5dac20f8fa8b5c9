package ext

import (
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/core/lazyre"
)

// Agent is a typed subagent read from a markdown file: the child it
// starts is limited to Tools and its system prompt gains Prompt.
type Agent struct {
	Name        string
	Description string
	// Tools are dsh tool names (Claude Code's mapped); nil means every
	// tool the parent has.
	Tools []string
	// Model is the frontmatter's model; "" or "inherit" is the parent's.
	// Claude's aliases (sonnet, opus, haiku) are not DeepSeek models and
	// are ignored.
	Model  string
	Prompt string
	Path   string
	Scope  Scope
}

var agentName = lazyre.New(`^[a-z0-9][a-z0-9_-]*$`)

// claudeTools maps Claude Code's tool names to dsh's.
var claudeTools = map[string]string{
	"Bash": "bash", "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "multi_edit",
	"Grep": "grep", "Glob": "glob", "LS": "glob", "WebFetch": "web_fetch", "WebSearch": "web_search",
	"TodoWrite": "todo_write", "Task": "subagent", "Agent": "subagent", "Skill": "skill",
	"NotebookEdit": "edit", "NotebookRead": "read", "TodoRead": "todo_write",
}

// ToolName maps a tool name as a Claude Code file writes it (Bash,
// Bash(git *), mcp__s__t) to dsh's (bash, mcp__s__t); dsh's own names
// pass through.
func ToolName(n string) string {
	n = strings.TrimSpace(n)
	if i := strings.IndexByte(n, '('); i > 0 {
		n = n[:i]
	}
	if m, ok := claudeTools[n]; ok {
		return m
	}
	return n
}

// LoadAgents reads the agent files of roots. known reports whether a
// tool exists: a file naming one that does not is loaded without it,
// with a diagnostic.
func LoadAgents(r Roots, known func(string) bool) ([]Agent, []Diagnostic) {
	var out []Agent
	var diags []Diagnostic
	seen := map[string]string{}
	for _, pl := range r.places("agents", false) {
		files, ds := walkMarkdown(pl.dir, pl.pol)
		diags = append(diags, ds...)
		for _, f := range files {
			a, ds, err := readAgent(f, pl, known)
			diags = append(diags, ds...)
			if err != nil {
				diags = append(diags, Diagnostic{f.path, err.Error()})
				continue
			}
			if p, dup := seen[a.Name]; dup {
				diags = append(diags, Diagnostic{f.path, fmt.Sprintf("agent %q is already defined by %s; this file is not used", a.Name, p)})
				continue
			}
			seen[a.Name] = f.path
			out = append(out, a)
		}
	}
	return out, diags
}

func readAgent(f mdFile, pl place, known func(string) bool) (Agent, []Diagnostic, error) {
	data, err := readFile(pl.pol, f.path, MaxFileBytes)
	if err != nil {
		return Agent{}, nil, err
	}
	m, body, err := splitFrontmatter(data)
	if err != nil {
		return Agent{}, nil, err
	}
	a := Agent{Name: m.str("name"), Description: oneLine(m.str("description")), Model: m.str("model"),
		Prompt: strings.TrimSpace(body), Path: f.path, Scope: pl.scope}
	if a.Name == "" {
		return a, nil, fmt.Errorf("no name in the frontmatter")
	}
	if !agentName().MatchString(a.Name) {
		return a, nil, fmt.Errorf("agent name %q: use lower-case letters, digits, - and _", a.Name)
	}
	if a.Description == "" {
		return a, nil, fmt.Errorf("no description in the frontmatter")
	}
	switch strings.ToLower(a.Model) {
	case "inherit", "sonnet", "opus", "haiku":
		a.Model = ""
	}
	var diags []Diagnostic
	if _, ok := m["tools"]; ok {
		a.Tools = []string{}
		for _, t := range m.list("tools") {
			if t == "*" {
				a.Tools = nil
				break
			}
			n := ToolName(t)
			if known != nil && !known(n) {
				diags = append(diags, Diagnostic{f.path, fmt.Sprintf("agent %q names tool %q, which this dsh does not have; left out", a.Name, t)})
				continue
			}
			if !contains(a.Tools, n) {
				a.Tools = append(a.Tools, n)
			}
		}
	}
	return a, diags, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// claudeCanonical is Claude Code's current name of each dsh tool it has.
var claudeCanonical = map[string]string{
	"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "multi_edit": "MultiEdit",
	"grep": "Grep", "glob": "Glob", "web_fetch": "WebFetch", "web_search": "WebSearch",
	"todo_write": "TodoWrite", "subagent": "Task", "skill": "Skill",
}

// ClaudeToolName is Claude Code's name of a dsh tool (what hook scripts
// written for Claude Code compare tool_name with), or the name itself.
func ClaudeToolName(n string) string {
	if c, ok := claudeCanonical[n]; ok {
		return c
	}
	return n
}
