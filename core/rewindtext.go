package core

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

// TurnList renders turns for a person choosing where to rewind to: one
// line each, with its prompt, marked when rewound or without a snapshot
// of the files. Every door shows the same list.
func TurnList(turns []TurnInfo) string {
	var b strings.Builder
	for _, t := range turns {
		var notes []string
		if t.Rewound {
			notes = append(notes, "rewound")
		}
		if !t.Files {
			notes = append(notes, "no file snapshot")
		}
		note := ""
		if len(notes) > 0 {
			note = " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(&b, "%4d  %s%s\n", t.Turn, t.Prompt, note)
	}
	return b.String()
}

// maxSummaryFiles bounds the files a summary names one by one.
const maxSummaryFiles = 20

// RewindSummary says in a few lines what a rewind did.
func RewindSummary(r *RewindResult) string {
	var b strings.Builder
	switch {
	case r.Undo:
		fmt.Fprintf(&b, "Undid the rewind to before turn %d (%s).", r.Turn, r.Scope)
	default:
		fmt.Fprintf(&b, "Rewound to before turn %d (%s).", r.Turn, r.Scope)
	}
	if r.Scope != event.ScopeFiles && len(r.RewoundTurns) > 0 {
		fmt.Fprintf(&b, " Turns %s are out of the conversation (kept in the log).", joinInts(r.RewoundTurns))
	}
	if r.Scope != event.ScopeConversation {
		fmt.Fprintf(&b, "\n%d file(s) restored", r.ChangeCount)
		if r.ChangeCount == 0 {
			b.WriteString(".")
		} else {
			b.WriteString(":")
		}
		for i, c := range r.Changes {
			if i == maxSummaryFiles {
				fmt.Fprintf(&b, "\n  … and %d more", r.ChangeCount-maxSummaryFiles)
				break
			}
			fmt.Fprintf(&b, "\n  %s %s", opVerb(c.Op), filepath.Join(c.Root, filepath.FromSlash(c.Path)))
		}
		if len(r.Conflicts) > 0 {
			fmt.Fprintf(&b, "\nForced over %d file(s) changed outside the agent; their content before is kept for undo.", len(r.Conflicts))
		}
		if len(r.NotRestored) > 0 {
			fmt.Fprintf(&b, "\nNot restored (not in the snapshot: too large or the store was full): %s", strings.Join(r.NotRestored, ", "))
		}
	}
	if !r.Undo {
		b.WriteString("\nIt can be undone (dsh sessions rewind ID --undo, /rewind undo).")
	}
	return b.String()
}

func opVerb(op string) string {
	switch op {
	case "create":
		return "recreated"
	case "delete":
		return "deleted  "
	}
	return "restored "
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
