package tool

import "strings"

// nonInteractive are the variables every command the model runs gets, so
// nothing in it waits on a person who is not there: an editor that fails
// at once (git commit without -m says to use -m instead of opening vim for
// the whole timeout; a user's own EDITOR="code --wait" must not open
// either), git merge taking its default message, pagers that just print,
// and git never prompting for credentials. stdin is already at EOF
// (/dev/null) for bash calls and jobs.
var nonInteractive = []string{
	"GIT_EDITOR=false",
	"EDITOR=false",
	"VISUAL=false",
	"GIT_SEQUENCE_EDITOR=false",
	"GIT_MERGE_AUTOEDIT=no",
	"PAGER=cat",
	"GIT_PAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
}

// NonInteractive returns env with the non-interactive variables set, each
// replacing any value env had. Every command line the model runs (bash
// calls, background jobs, an editor's terminal) is started with it.
func NonInteractive(env []string) []string {
	out := make([]string, 0, len(env)+len(nonInteractive))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isNonInteractiveName(name) {
			out = append(out, kv)
		}
	}
	return append(out, nonInteractive...)
}

func isNonInteractiveName(name string) bool {
	for _, kv := range nonInteractive {
		if n, _, _ := strings.Cut(kv, "="); n == name {
			return true
		}
	}
	return false
}
