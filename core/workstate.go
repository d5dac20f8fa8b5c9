package core

import (
	"fmt"
	"strings"
)

// workingState is what a compaction's summary must not lose and the model
// cannot be trusted to copy exactly: the todo list as last written and the
// background jobs still running (id, command, state). dsh appends it to
// every summary, whatever triggered the compaction (automatic, /compact,
// session/compact, dsh sessions compact); "" when there is neither.
func (s *Session) workingState() string {
	s.commitMu.Lock()
	todos := append(s.todos[:0:0], s.todos...)
	s.commitMu.Unlock()
	var b strings.Builder
	if len(todos) > 0 {
		b.WriteString("\n\n## Todo list (as last written with todo_write)\n")
		for _, t := range todos {
			fmt.Fprintf(&b, "- [%s] %s\n", t.Status, t.Content)
		}
	}
	running := 0
	if s.jobs == nil {
		return strings.TrimRight(b.String(), "\n")
	}
	for _, j := range s.jobs.List() {
		if !j.Running {
			continue
		}
		if running == 0 {
			b.WriteString("\n\n## Background jobs still running (job_output reads them, job_kill stops them)\n")
		}
		running++
		fmt.Fprintf(&b, "- %s (running since %s): %s\n", j.ID, j.Started.UTC().Format("15:04:05 UTC"), jobCommandLine(j.Command))
	}
	return strings.TrimRight(b.String(), "\n")
}

// jobCommandLine is a command on one line, bounded.
func jobCommandLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		return string(r[:199]) + "…"
	}
	return s
}
