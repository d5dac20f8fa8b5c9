package core

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/tool"
)

// Limits of what the runtime runs on a session's behalf outside tools.
const (
	commandShellTimeout = 2 * time.Minute
	commandShellOutput  = 30_000
)

var noCaps = model.Caps{}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// skillToolName is the tool that loads a skill's instructions.
const skillToolName = "skill"

// skillsSection is the system prompt's part about skills: how to use
// them and the catalog. It is built from the session's skills when its
// prompt is first recorded, and the session reuses the recorded text, so
// it stays byte-stable in the cached prefix.
func skillsSection(skills []ext.Skill) string {
	cat := ext.Catalog(skills)
	if cat == "" {
		return ""
	}
	return "# Skills\nSkills are instructions for particular tasks, kept in folders by the user or the project. " +
		"When a task matches a skill's description, call the `skill` tool with its name before you start and " +
		"follow what it says; read the other files it lists only when you need them.\n" + strings.TrimRight(cat, "\n")
}

// skillTool returns a skill's instructions and lists its folder's files.
type skillTool struct{ skills []ext.Skill }

func (t skillTool) Name() string { return skillToolName }
func (t skillTool) Description() string {
	return "Load a skill: returns its instructions (SKILL.md) and the paths of the other files in its folder, which " +
		"you can open with read. The skills available are listed in the system prompt."
}
func (t skillTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The skill's name, as listed"}},"required":["name"],"additionalProperties":false}`)
}
func (t skillTool) Kind() tool.Kind    { return tool.KindRead }
func (t skillTool) ParallelSafe() bool { return true }

func (t skillTool) find(raw json.RawMessage) (ext.Skill, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return ext.Skill{}, fmt.Errorf("want {\"name\": \"...\"}: %v", err)
	}
	i := slices.IndexFunc(t.skills, func(s ext.Skill) bool { return s.Name == strings.TrimSpace(a.Name) })
	if i < 0 {
		names := make([]string, len(t.skills))
		for k, s := range t.skills {
			names[k] = s.Name
		}
		return ext.Skill{}, fmt.Errorf("no skill %q; available: %s", a.Name, strings.Join(names, ", "))
	}
	return t.skills[i], nil
}

func (t skillTool) Inspect(raw json.RawMessage, _ *tool.Env) (tool.Access, error) {
	sk, err := t.find(raw)
	if err != nil {
		return tool.Access{}, err
	}
	// The skill's own files are the user's or the project's instructions:
	// loading them needs nobody's leave, as AGENTS.md does not.
	return tool.Access{Title: "Skill: " + sk.Name, SessionOwned: true}, nil
}

func (t skillTool) Run(_ context.Context, raw json.RawMessage, _ *tool.Env) tool.Result {
	sk, err := t.find(raw)
	if err != nil {
		return tool.ErrorResult(err.Error())
	}
	body, files, err := sk.Body()
	if err != nil {
		return tool.ErrorResult(fmt.Sprintf("skill %s: %s: %v", sk.Name, sk.Path, err))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<skill name=%q dir=%q>\n%s\n</skill>", sk.Name, sk.Dir, strings.TrimSpace(body))
	if len(files) > 0 {
		b.WriteString("\n\nOther files of this skill (open them with read when needed):")
		for _, f := range files {
			b.WriteString("\n- " + sk.Dir + "/" + f)
		}
	}
	return tool.TextResult(b.String())
}
