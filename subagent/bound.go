package subagent

import (
	"fmt"
	"os"
	"strings"

	"github.com/dsh-dev/dsh/core/tool"
)

// MaxResultBytes bounds the child's answer a parent model reads: a
// subagent is asked for a brief answer, and a parent that delegates to
// several children must not drown in their output. The whole answer stays
// in the child's session (its last assistant message) and, when cut, is
// saved in the parent's spill folder, which the parent reads with read or
// grep without asking.
const MaxResultBytes = 20 << 10

// boundOutput keeps out within MaxResultBytes: its head, cut at a line
// end where one is near, then a note saying how much was cut and where the
// whole answer is.
func boundOutput(out, child, agent string, env *tool.Env) string {
	if len(out) <= MaxResultBytes {
		return out
	}
	head := out[:MaxResultBytes]
	if i := strings.LastIndexByte(head, '\n'); i > MaxResultBytes/2 {
		head = head[:i+1]
	}
	head = strings.ToValidUTF8(head, "")
	where := ""
	if path, err := saveWhole(env, out); err == nil {
		where = fmt.Sprintf(" The whole answer is saved in %s: read it with file_path %q and offset/limit, or search it with grep.", path, path)
	} else if err != errNoSpill {
		where = fmt.Sprintf(" (It could not be saved for you: %v.)", err)
	}
	session := ""
	if child != "" {
		session = fmt.Sprintf(" It is kept whole as the last message of %s's session %s.", agent, child)
	}
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return fmt.Sprintf("%s[... the subagent's answer is %d bytes; the first %d are shown.%s%s]", head, len(out), len(head), where, session)
}

var errNoSpill = fmt.Errorf("the parent session keeps no spill files")

// saveWhole writes out to a new file in the parent session's spill folder.
func saveWhole(env *tool.Env, out string) (string, error) {
	if env == nil || env.Spill == nil || env.Spill.Dir() == "" {
		return "", errNoSpill
	}
	dir := env.Spill.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("spill folder: %w", err)
	}
	f, err := os.CreateTemp(dir, "subagent-answer-*.txt")
	if err != nil {
		return "", fmt.Errorf("spill file: %w", err)
	}
	_, werr := f.WriteString(out)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("spill file: %w", werr)
	}
	return f.Name(), nil
}
