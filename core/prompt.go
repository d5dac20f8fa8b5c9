package core

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

const defaultPersona = "You are a coding agent powered by the {{model}} model. Your working directory is {{cwd}}."

const toolGuidance = `You work in the user's workspace through tools. Read files before you edit them; prefer ` +
	"`edit`" + ` for small changes and ` + "`write`" + ` for new files. Use ` + "`glob`" + ` and ` + "`grep`" +
	` to find things instead of guessing paths. Run commands with ` + "`bash`" + `; they run non-interactively ` +
	`with no terminal. Keep a todo list with ` + "`todo_write`" + ` for work of several steps. When a tool call ` +
	`is refused, do not retry it unchanged: explain what you need or choose another way. Answer concisely; ` +
	`when the task is done, say what you did.`

// maxInstructions caps the workspace instruction file read into the prompt.
const maxInstructions = 64 << 10

// systemPrompt builds the system prompt of a session. It depends only on the
// model, the cwd and the workspace instructions read at that moment; the
// session records it in request/header and reuses the recorded text while
// the configuration is unchanged, so it stays byte-identical for the life of
// the session even if AGENTS.md changes on disk.
func (r *Runtime) systemPrompt(cfg event.Config, cwd string) string {
	persona := r.cfg.Persona
	if persona == "" {
		persona = defaultPersona
	}
	persona = strings.ReplaceAll(persona, "{{model}}", cfg.Model)
	persona = strings.ReplaceAll(persona, "{{cwd}}", cwd)
	var b strings.Builder
	b.WriteString("You are an AI agent powered by dsh.\n\n")
	b.WriteString(persona)
	b.WriteString("\n\n")
	b.WriteString(toolGuidance)
	for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
		data, err := os.ReadFile(filepath.Join(cwd, name))
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		if len(data) > maxInstructions {
			data = data[:maxInstructions]
		}
		b.WriteString("\n\nInstructions from the workspace's ")
		b.WriteString(name)
		b.WriteString(":\n\n")
		b.WriteString(strings.ToValidUTF8(string(data), "\uFFFD"))
		break
	}
	return b.String()
}

// titleOf derives a session title from the first prompt.
func titleOf(content []event.ContentBlock) string {
	t := strings.TrimSpace(event.JoinText(content))
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	const max = 80
	if len([]rune(t)) > max {
		t = string([]rune(t)[:max-1]) + "…"
	}
	if t == "" {
		t = "Untitled"
	}
	return t
}
