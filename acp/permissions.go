package acp

import (
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/permission"
)

// /permissions makes the "always" answers reviewable and revocable: it
// lists the rules in force for the session's project (allow and deny, with
// where they are kept and how they got there) and, as
// "/permissions remove N", forgets the N-th. dsh answers it, not the model.

// permissionsCommand parses a prompt that is the /permissions command
// alone: remove is the 1-based number to forget, 0 to list.
func permissionsCommand(blocks []sdk.ContentBlock) (remove int, ok bool, err error) {
	if len(blocks) != 1 || blocks[0].Text == nil {
		return 0, false, nil
	}
	fields := strings.Fields(blocks[0].Text.Text)
	if len(fields) == 0 || fields[0] != "/permissions" {
		return 0, false, nil
	}
	switch {
	case len(fields) == 1:
		return 0, true, nil
	case len(fields) == 3 && (fields[1] == "remove" || fields[1] == "rm"):
		n, convErr := strconv.Atoi(fields[2])
		if convErr != nil || n < 1 {
			return 0, true, fmt.Errorf("%q is not a rule number; /permissions lists them, numbered from 1", fields[2])
		}
		return n, true, nil
	}
	return 0, true, fmt.Errorf("usage: /permissions (list the remembered rules) or /permissions remove N")
}

// permissionsReply runs the command and says what happened.
func permissionsReply(s *core.Session, remove int) string {
	rs := s.Rules()
	rules := rs.List()
	if remove > 0 {
		if remove > len(rules) {
			return fmt.Sprintf("There is no rule %d: this project has %d remembered rules (/permissions lists them).", remove, len(rules))
		}
		r := rules[remove-1]
		removed, err := rs.Remove(r)
		switch {
		case err != nil:
			return fmt.Sprintf("Could not remove rule %d (%s): %v", remove, r, err)
		case !removed:
			return fmt.Sprintf("Rule %d (%s) was already gone (another session removed it).", remove, r)
		}
		return fmt.Sprintf("Removed rule %d: %s. The next such call is decided by the session's mode again.\n\n%s", remove, r, listRules(rs.List(), rs.Path()))
	}
	return listRules(rules, rs.Path())
}

func listRules(rules []permission.Rule, path string) string {
	if len(rules) == 0 {
		return "No remembered permission rules for this project: every call is decided by the session's mode. " +
			"Answering a permission request with \"Always allow\" or \"Always reject\" adds one."
	}
	var b strings.Builder
	b.WriteString("Remembered permission rules for this project (a deny wins over any allow):\n")
	for i, r := range rules {
		verb, from := "deny ", "an \"Always reject\" answer"
		if r.Allow {
			verb, from = "allow", "an \"Always allow\" answer"
		}
		fmt.Fprintf(&b, "%d. %s %s(%s) — from %s\n", i+1, verb, r.Tool, r.Pattern, from)
	}
	fmt.Fprintf(&b, "\nKept in %s, shared by every session of this project. Remove one with /permissions remove N.", path)
	return b.String()
}
