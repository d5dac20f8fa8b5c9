package headless

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
)

// Progress is the live view of a plain `dsh run` on stderr: a line when a
// tool call starts and one when it ends, each permission refusal, each model
// retry with its wait, a summary at the end, and on a terminal a spinner with
// the elapsed time while the model thinks or a tool runs. It is a projection
// of committed events (plus the live reasoning text), so what it says is
// what the session log records. Stdout is never touched: it carries the
// answer only.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool // spinner and in-place redraws
	color bool
	quiet bool // reasoning only, as before the progress view existed
	now   func() time.Time

	start     time.Time
	step      int
	calls     map[string]callLine
	delegated map[string]string // subagent call id → what it delegated
	denied    map[string]bool
	usage     usageSum
	reasoning bool // inside a streamed reasoning block
	headed    bool // quiet mode: the reasoning header was printed
	spin      spinState
}

type callLine struct {
	name    string
	started time.Time // when the call was allowed to run (else committed)
	running bool
}

type usageSum struct {
	prompt, cached, output int64
	known                  bool
}

type spinState struct {
	label string
	since time.Time
	frame int
	shown bool
}

// ProgressOptions configure a Progress.
type ProgressOptions struct {
	TTY   bool // stderr is a terminal: draw a spinner
	Color bool // colour the marks (a terminal without NO_COLOR)
	Quiet bool // only streamed reasoning, no progress lines
	Now   func() time.Time
}

// NewProgress returns a progress view writing to w.
func NewProgress(w io.Writer, o ProgressOptions) *Progress {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Progress{w: w, tty: o.TTY && !o.Quiet, color: o.Color && !o.Quiet, quiet: o.Quiet, now: o.Now,
		calls: map[string]callLine{}, denied: map[string]bool{}, delegated: map[string]string{}}
	p.start = p.now()
	return p
}

// SpinnerInterval is how often a terminal's spinner is redrawn.
const SpinnerInterval = 100 * time.Millisecond

// Tick redraws the spinner (on a terminal); call it every SpinnerInterval.
func (p *Progress) Tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.spin.label != "" && !p.reasoning {
		p.spin.frame++
		p.drawSpinner()
	}
}

var spinFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

func (p *Progress) drawSpinner() {
	now := p.now()
	fmt.Fprintf(p.w, "\rdsh: %c %s · step %d · %s\x1b[K", spinFrames[p.spin.frame%len(spinFrames)],
		p.spin.label, p.step, seconds(now.Sub(p.spin.since)))
	p.spin.shown = true
}

// waitFor starts the spinner with a label.
func (p *Progress) waitFor(label string) {
	p.spin.label, p.spin.since = label, p.now()
	if p.tty && !p.reasoning {
		p.drawSpinner()
	}
}

// clear removes the spinner line before other output.
func (p *Progress) clear() {
	if p.spin.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.spin.shown = false
	}
}

// line prints one progress line (never in quiet mode).
func (p *Progress) line(format string, args ...any) {
	if p.quiet {
		return
	}
	p.endReasoning()
	p.clear()
	fmt.Fprintf(p.w, "dsh: "+format+"\n", args...)
}

func (p *Progress) endReasoning() {
	if p.reasoning {
		fmt.Fprint(p.w, "\n")
		p.reasoning = false
	}
}

func (p *Progress) mark(s, code string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Reasoning shows streamed reasoning text under a "dsh: reasoning:" header.
func (p *Progress) Reasoning(text string) {
	if text == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reasoning {
		p.clear()
		if !p.quiet || !p.headed {
			fmt.Fprint(p.w, "dsh: reasoning:\n")
			p.headed = true
		}
		p.reasoning = true
	}
	fmt.Fprint(p.w, text)
}

// Pause ends a reasoning block when other model output starts.
func (p *Progress) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endReasoning()
}

// Event projects one committed event.
func (p *Progress) Event(ev event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case event.TypeStepStart:
		if d, err := event.Decode[event.Step](ev); err == nil {
			p.step = d.Step
		}
		p.waitFor("thinking")
	case event.TypeAssistantMessage:
		p.assistant(ev)
	case event.TypeAssistantAttempt:
		p.attempt(ev)
	case event.TypeToolCall:
		if d, err := event.Decode[event.ToolCall](ev); err == nil {
			name := d.Tool() // the tool that ran, when the model misspelled it
			p.calls[d.CallID] = callLine{name: name, started: p.now()}
			if name == subagentTool {
				p.delegated[d.CallID] = strings.TrimPrefix(argSummary(name, d.Arguments), ": ")
			}
			p.line("%s %s%s", p.mark("→", "36"), printableName(name), argSummary(name, d.Arguments))
		}
	case event.TypePermissionDecision:
		p.permission(ev)
		p.waitFor(p.runningLabel())
	case event.TypeToolResult:
		p.result(ev)
	case event.TypeSubagentProgress:
		if d, err := event.Decode[event.SubagentProgress](ev); err == nil && d.Kind == event.ProgressToolCall && d.Title != "" {
			p.childLine(d.CallID, clip(d.Title, 120))
		}
	}
}

// subagentTool is the delegation tool's name (subagent.ToolName; headless
// does not import the gateway).
const subagentTool = "subagent"

// ChildEvent shows one committed event of an in-process subagent's
// session, the child of this run's subagent call callID: its tool calls,
// indented under the call, as a remote child's subagent/progress shows.
func (p *Progress) ChildEvent(callID string, ev event.Event) {
	if ev.Type != event.TypeToolCall {
		return
	}
	d, err := event.Decode[event.ToolCall](ev)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.childLine(callID, printableName(d.Tool())+argSummary(d.Tool(), d.Arguments))
}

// childLine prints a subagent's step, naming what the call delegated
// (parallel subagents interleave).
func (p *Progress) childLine(callID, what string) {
	if label := p.delegated[callID]; label != "" {
		what += " · " + label
	}
	p.line("  %s %s", p.mark("↳", "2"), what)
	if p.tty && p.spin.label != "" && !p.reasoning {
		p.drawSpinner() // the same wait goes on
	}
}

func (p *Progress) assistant(ev event.Event) {
	d, err := event.Decode[event.AssistantMessage](ev)
	if err != nil || d.Usage == nil {
		return
	}
	u := d.Usage
	p.usage.known = true
	p.usage.prompt += u.InputTokens
	if u.CacheReadTokens != nil {
		p.usage.cached += *u.CacheReadTokens
		p.usage.prompt += *u.CacheReadTokens
	}
	p.usage.output += u.OutputTokens
}

func (p *Progress) attempt(ev event.Event) {
	d, err := event.Decode[event.AssistantAttempt](ev)
	if err != nil || d.Error == nil {
		return
	}
	what := fmt.Sprintf("%s model call failed: %s: %s", p.mark("!", "33"), d.Error.Code, clip(d.Error.Message, 120))
	if d.RetryInMs != nil {
		what += fmt.Sprintf(" · retrying in %s (attempt %d)", seconds(time.Duration(*d.RetryInMs)*time.Millisecond), d.Attempt+2)
		p.line("%s", what)
		p.waitFor("waiting to retry")
		return
	}
	p.line("%s", what)
}

// runningLabel names the calls running now: a call runs from the
// decision that allowed it to its result (the calls of a step are
// committed together, then run batch by batch).
func (p *Progress) runningLabel() string {
	var names []string
	for _, c := range p.calls {
		if c.running && !slices.Contains(names, printableName(c.name)) {
			names = append(names, printableName(c.name))
		}
	}
	if len(names) == 0 {
		return "thinking"
	}
	slices.Sort(names)
	return "running " + strings.Join(names, ", ")
}

func (p *Progress) permission(ev event.Event) {
	d, err := event.Decode[event.PermissionDecision](ev)
	if err != nil {
		return
	}
	if d.Decision == "allow" {
		if c, ok := p.calls[d.CallID]; ok {
			c.started, c.running = p.now(), true
			p.calls[d.CallID] = c
		}
		return
	}
	p.denied[d.CallID] = true
	why := d.By
	if d.Detail != "" {
		why = clip(d.Detail, 120)
	}
	p.line("  %s %s refused: %s", p.mark("✗", "31"), printableName(d.Tool), why)
}

func (p *Progress) result(ev event.Event) {
	d, err := event.Decode[event.ToolResult](ev)
	if err != nil {
		return
	}
	b := d.Result()
	c, ok := p.calls[b.ToolCallID]
	delete(p.calls, b.ToolCallID)
	p.waitFor(p.runningLabel())
	if p.denied[b.ToolCallID] || !ok {
		return
	}
	// The call's own run time, as recorded; the calls of a batch are
	// committed together, so the view's clock would time them all alike.
	took := seconds(p.now().Sub(c.started))
	if d.DurationMs > 0 {
		took = seconds(time.Duration(d.DurationMs) * time.Millisecond)
	}
	if !b.IsError {
		p.line("  %s %s · %s", p.mark("✓", "32"), printableName(c.name), took)
		return
	}
	msg := firstLine(event.JoinText(b.Content))
	p.line("  %s %s: %s · %s", p.mark("✗", "31"), printableName(c.name), clip(msg, 120), took)
}

// Finish ends the view with a one-line summary of the turn.
func (p *Progress) Finish(reason event.TurnEndReason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spin.label = ""
	p.endReasoning()
	p.clear()
	if p.quiet {
		return
	}
	steps := "steps"
	if p.step == 1 {
		steps = "step"
	}
	s := fmt.Sprintf("%s · %d %s · %s", reason.Kind, p.step, steps, seconds(p.now().Sub(p.start)))
	if p.usage.known {
		s += fmt.Sprintf(" · tokens %s prompt (%s cached), %s output",
			count(p.usage.prompt), count(p.usage.cached), count(p.usage.output))
	}
	fmt.Fprintf(p.w, "dsh: %s\n", s)
}

// seconds renders a duration for people: 0.3s, 12.0s, 2m05s.
func seconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func count(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// argSummary is the one argument that says what a call does, else the
// compact arguments, on one short line.
func argSummary(tool, args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ": " + clip(args, 80)
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "job_id", "description"} {
		if v, ok := m[k].(string); ok && v != "" {
			return ": " + clip(v, 80)
		}
	}
	if qs, ok := m["queries"].([]any); ok && len(qs) > 0 { // a web search DeepSeek's server ran
		var parts []string
		for _, q := range qs {
			if s, ok := q.(string); ok {
				parts = append(parts, s)
			}
		}
		return ": " + clip(strings.Join(parts, "; "), 80)
	}
	if len(m) == 0 {
		return ""
	}
	return ": " + clip(args, 80)
}

// clip flattens s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// printableName keeps a model-written tool name from garbling the terminal.
func printableName(s string) string { return clip(s, 64) }
