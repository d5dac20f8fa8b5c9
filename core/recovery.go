package core

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/tool"
)

// What the loop does when a model misbehaves in the ways real models do:
// an empty reply, a tool call cut off by the output cap, a misspelt tool
// name, broken JSON arguments, the same call over and over, the same
// failure over and over. Each is told to the model in words it can act
// on; a turn is stopped only after the model was warned.

// Thresholds of the loop checks (docs/prompt.md, "Recovery").
const (
	// DefaultLoopWarnAt and DefaultLoopStopAt are the repeat check's
	// thresholds (the loopWarnAt and loopStopAt settings): the same call
	// (same tool, same arguments) returning the same result in that many
	// steps back to back warns the model, then stops the turn. Only an
	// unbroken run counts: any other call, or a changed result, starts
	// over, so "edit, then the same build" again and again is work, not a
	// loop. Identical calls inside one step count once: a parallel batch
	// of duplicates is wasteful, not a loop.
	DefaultLoopWarnAt = 4
	DefaultLoopStopAt = 6
	// failStreak stops a turn when one tool failed the same way (the same
	// first line of its error, digits folded, whatever the arguments) in
	// this many consecutive steps that used it; warned one failure
	// earlier. A success of that tool, or a different error, resets the
	// streak. Failures are error results (an edit that does not match, a
	// missing file, invalid arguments, an unknown tool); a command's
	// non-zero exit is an answer, not a tool failure.
	failStreak = 5
)

// emptyReply is the retryable failure of a reply with neither text nor
// tool calls (a reasoning-only "stop"): the original retries it too.
func emptyReply(resp *model.Response) error {
	if resp.Text != "" || len(resp.ToolCalls) > 0 || (resp.FinishReason != "stop" && resp.FinishReason != "") {
		return nil
	}
	return &model.Error{Class: model.ClassEmpty, Usage: resp.Usage, RequestID: resp.RequestID,
		Message: "the model's reply had neither text nor tool calls"}
}

// cutOffResult is told for the call a reply was cut off in.
func cutOffResult(maxTokens int) tool.Result {
	limit := "the output limit"
	if maxTokens > 0 {
		limit = fmt.Sprintf("the output limit (max_tokens %d, thinking included)", maxTokens)
	}
	return tool.ErrorResult("not run: your reply reached " + limit + " while this call's arguments were still " +
		"being written, so they are incomplete. Split the work into smaller calls: for a large file, write a " +
		"first part, then add the rest with further edits.")
}

// resolveTool finds the tool a call names. A name that differs from a
// real one only by case or by '-' for '_' (Read, todo-write) is repaired:
// repaired reports it, and the result tells the model the right name.
func (s *Session) resolveTool(name string) (t tool.Tool, repaired bool) {
	if t := s.findTool(name); t != nil {
		return t, false
	}
	want := normToolName(name)
	var found tool.Tool
	for _, c := range s.tools().tools {
		if normToolName(c.Name()) == want {
			if found != nil {
				return nil, false // ambiguous: do not guess
			}
			found = c
		}
	}
	return found, found != nil
}

func normToolName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "_")
}

// unknownTool is told for a call naming no tool offered, with its code: a
// tool the deny list withholds is refused as the gate would refuse it.
func (s *Session) unknownTool(name string) (tool.Result, string) {
	ts := s.tools()
	if i := slices.IndexFunc(ts.withheld, func(w string) bool { return normToolName(w) == normToolName(name) }); i >= 0 {
		return tool.ErrorResult(fmt.Sprintf("permission denied: %s is refused by the disallowed-tools list (deny %s(*)) and is not one of your tools; the call was not run.",
			ts.withheld[i], ts.withheld[i])), event.ToolPermissionDenied
	}
	var names []string
	for _, t := range ts.tools {
		names = append(names, t.Name())
	}
	return tool.ErrorResult(fmt.Sprintf("unknown tool %q; the call was not run. The tools are: %s.",
		name, strings.Join(names, ", "))), event.ToolUnknown
}

// repairNote is put before the result of a call whose name was repaired.
func repairNote(asked, ran string) event.ContentBlock {
	return event.Text(fmt.Sprintf("[dsh: there is no tool %q; this call ran %q. Use the exact tool names.]\n", asked, ran))
}

// invalidArgs explains arguments that are not a JSON object (err is
// json.Unmarshal's, nil when they parsed as something else), quoting
// where they broke.
func invalidArgs(args string, err error) string {
	const msg = "invalid arguments: "
	const tail = " The call was not run. If the arguments were long, split the work into smaller calls."
	var syn *json.SyntaxError
	switch {
	case err == nil:
		return msg + "expected a JSON object, got " + jsonKind(args) + "." + tail
	case strings.Contains(err.Error(), "unexpected end of JSON input"):
		return fmt.Sprintf("%snot valid JSON: the arguments end after %d bytes in the middle of a value: …%s⟨end⟩.%s",
			msg, len(args), quoteAround(args, len(args)), tail)
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included.
		return fmt.Sprintf("%snot valid JSON: %v at byte %d: …%s.%s", msg, syn, syn.Offset,
			quoteAround(args, int(syn.Offset)-1), tail)
	}
	return msg + "expected a JSON object, got " + jsonKind(args) + "." + tail
}

func jsonKind(s string) string {
	switch {
	case s == "null":
		return "null"
	case strings.HasPrefix(s, "["):
		return "an array"
	case strings.HasPrefix(s, `"`):
		return "a string"
	case s == "true" || s == "false":
		return "a boolean"
	}
	return "a number"
}

// quoteAround quotes up to 40 bytes either side of offset, marking it.
func quoteAround(s string, off int) string {
	off = min(max(off, 0), len(s))
	lo, hi := max(off-40, 0), min(off+40, len(s))
	before := strings.ToValidUTF8(s[lo:off], "")
	after := strings.ToValidUTF8(s[off:hi], "")
	if after == "" {
		return fmt.Sprintf("%q", before)
	}
	return fmt.Sprintf("%q⟨here⟩%q", before, after)
}

// pollingTools rightly return the same answer again and again while a
// background job runs silently (a long build polled with job_output): the
// repeat check does not count them; their failures still make streaks,
// and the step cap bounds them.
var pollingTools = map[string]bool{"job_output": true, "job_list": true}

// loopDetector is the turn's memory for the loop checks and the one-time
// recoveries.
type loopDetector struct {
	warnAt, stopAt int // repeat thresholds (Config.LoopWarnAt, LoopStopAt)
	step           int
	// The current run of one signature: its steps back to back, and the
	// step that last counted (a parallel duplicate counts once).
	runSig  string
	runN    int
	runStep int
	// warned holds the failure keys already warned about.
	warned  map[string]bool
	streaks map[string]*streak // by tool name
	stop    string             // why the turn must stop, once decided
	// cutRecovered is set once a cut-off reply was recovered from: a
	// second cut in the same turn ends it (max-tokens).
	cutRecovered bool
}

type streak struct {
	key  string // tool + first line of the error
	n    int    // consecutive steps that failed with key
	step int    // the last step counted
}

// observe accounts one call's outcome before it is recorded, appending a
// warning to the result at the warnAt-th repeat.
func (l *loopDetector) observe(name string, c model.ToolCall, o *outcome) {
	if l.warned == nil {
		l.warned = map[string]bool{}
		l.streaks = map[string]*streak{}
	}
	l.repeat(name, signature(c, *o), o)
	l.streak(name, o)
}

// repeat counts the back-to-back run of one call and result.
func (l *loopDetector) repeat(name, sig string, o *outcome) {
	switch {
	case pollingTools[name]:
		l.runSig, l.runN = "", 0 // another call: the run is broken
		return
	case sig != l.runSig:
		l.runSig, l.runN, l.runStep = sig, 1, l.step
		return
	case l.runStep == l.step:
		return // a duplicate in the same parallel batch
	}
	l.runN++
	l.runStep = l.step
	switch {
	case l.runN >= l.stopAt && l.stop == "":
		l.stop = fmt.Sprintf("loop: the same %s call returned the same result %d times in a row", name, l.runN)
	case l.runN == l.warnAt:
		o.res.Content = append(o.res.Content, event.Text(fmt.Sprintf("\n\n[dsh loop check: this exact call has now "+
			"returned this exact result %d times in a row; repeating it will not change it. Change your approach. "+
			"If it is repeated unchanged %d more times, the turn will be stopped.]", l.runN, l.stopAt-l.runN)))
	}
}

// streak counts one tool's consecutive identical failures.
func (l *loopDetector) streak(name string, o *outcome) {
	switch {
	case !o.res.IsError:
		delete(l.streaks, name) // a success ends the streak
		return
	case o.code != event.ToolFailed && o.code != event.ToolInvalidArguments && o.code != event.ToolUnknown:
		return // a refusal or a cancel is not the tool failing
	}
	key := name + "\x00" + failureLine(o.res)
	st := l.streaks[name]
	switch {
	case st == nil || st.key != key:
		st = &streak{key: key, n: 1, step: l.step}
		l.streaks[name] = st
	case st.step != l.step:
		st.n++
		st.step = l.step
	default:
		return // this step already counted
	}
	if st.n >= failStreak-1 {
		if l.warned[key] && st.n >= failStreak && l.stop == "" {
			l.stop = fmt.Sprintf("failure streak: %s failed the same way %d times in a row: %s", name, st.n, failureLine(o.res))
		} else if !l.warned[key] {
			l.warned[key] = true
			o.res.Content = append(o.res.Content, event.Text(fmt.Sprintf("\n\n[dsh loop check: %s has now failed "+
				"the same way %d times in a row. Read the error and change your approach. If it fails this way "+
				"once more, the turn will be stopped.]", name, st.n)))
		}
	}
}

// failureLine is the first line of an error result, digits folded, so
// that failures differing only in a count or offset compare equal.
func failureLine(r tool.Result) string {
	var text string
	for _, b := range r.Content {
		if b.Type == event.BlockText {
			text += b.Text
		}
	}
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	if len(text) > 200 {
		text = strings.ToValidUTF8(text[:200], "")
	}
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, text)
}

// endStep closes the step's accounting and says why the turn must stop,
// or "".
func (l *loopDetector) endStep() string {
	l.step++
	return l.stop
}

func signature(c model.ToolCall, o outcome) string {
	h := sha256.New()
	h.Write([]byte(c.Name))
	h.Write([]byte{0})
	h.Write([]byte(c.Arguments))
	h.Write([]byte{0})
	for _, b := range o.res.Content {
		h.Write([]byte(b.Text))
	}
	return string(h.Sum(nil))
}
