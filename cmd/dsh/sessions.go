package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/cmd/internal/argv"
	"github.com/dsh-dev/dsh/cmd/internal/headless"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

const sessionsUsage = `Usage: dsh sessions <command> [flags] [arguments]

Look after the sessions stored under the session root
(--session-root, DSH_SESSION_ROOT, $DSH_HOME/sessions, else $XDG_STATE_HOME/dsh/sessions).
Flags may come before or after the command word.

Commands:
  list [--cwd DIR] [--json]   list sessions, most recently updated first;
                              --cwd keeps those recorded for DIR, --json prints one JSON array
  show ID [--json]            print a readable transcript of session ID (a unique prefix is enough);
                              --json prints {header, events} as stored
  rm ID                       delete session ID (a unique prefix is enough; refused while a process is writing it)
  compact ID [FOCUS...]       summarise session ID's conversation now, with its model (see docs/context.md)
  rewind ID [TURN]            take session ID back to before TURN: files and conversation (see docs/rewind.md);
                              without TURN list its turns; --files-only, --conversation-only, --force, --undo

An ID may be given whole or as a unique prefix, with or without "session-" (4dff or session-4dff).

Exit status: 0 on success, 1 if the session is missing or cannot be read or removed, 2 on usage errors.
`

// sessionsHelp is the help of each sessions command.
var sessionsHelp = map[string]string{
	"list":    "Usage: dsh sessions list [--cwd DIR] [--json]\n\nList the stored sessions, most recently updated first.",
	"show":    "Usage: dsh sessions show ID [--json]\n\nPrint a readable transcript of a session: turns, each tool call on one line, usage.\nID may be a unique prefix of the session id.",
	"rm":      "Usage: dsh sessions rm ID\n\nDelete a session (its log and attachments); refused while a process is writing it.\nID may be a unique prefix of the session id.",
	"compact": compactHelp,
	"rewind":  rewindHelp,
}

// sessionsFlags are the flags of the sessions commands, parsed together
// with the settings flags in one pass so they go anywhere on the line.
type sessionsFlags struct {
	cwd    string
	asJSON bool
	rewind rewindFlags
}

func sessionsCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dsh sessions", flag.ContinueOnError)
	sf := registerSettingFlags(fs)
	var f sessionsFlags
	fs.StringVar(&f.cwd, "cwd", "", "list: only sessions recorded for this working directory")
	fs.BoolVar(&f.asJSON, "json", false, "list, show, rewind: print JSON")
	f.rewind.register(fs)
	pos, err := argv.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		if len(pos) == 0 {
			_, pos, _ = argv.Split(args, argv.KindOf(fs), true)
		}
		return sessionsHelpFor(firstWord(pos), fs, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions: %v\n", err)
		return 2
	}
	if len(pos) == 0 {
		fmt.Fprint(stderr, "dsh sessions: a command is required\n\n"+sessionsUsage)
		return 2
	}
	if pos[0] == "help" {
		return sessionsHelpFor(firstWord(pos[1:]), fs, stdout)
	}
	if _, ok := sessionsHelp[pos[0]]; !ok {
		fmt.Fprintf(stderr, "dsh sessions: unknown command %q (want list, show, rm, compact or rewind)\n", pos[0])
		return 2
	}
	if f.cwd != "" && pos[0] != "list" {
		fmt.Fprintf(stderr, "dsh sessions %s: --cwd applies to list only\n", pos[0])
		return 2
	}
	if f.rewind.any() && pos[0] != "rewind" {
		fmt.Fprintf(stderr, "dsh sessions %s: --files-only, --conversation-only, --force and --undo apply to rewind only\n", pos[0])
		return 2
	}
	s, err := sf.resolve("auto")
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions: %v\n", err)
		return 2
	}
	if pos[0] == "compact" {
		return sessionsCompact(s, f, pos[1:], stdout, stderr)
	}
	if pos[0] == "rewind" {
		return sessionsRewind(s, f, pos[1:], stdout, stderr)
	}
	return runSessions(pos, f, store.New(s.SessionRoot), stdout, stderr)
}

// firstWord returns the first of ws that is a sessions command, else "".
func firstWord(ws []string) string {
	for _, w := range ws {
		if _, ok := sessionsHelp[w]; ok {
			return w
		}
	}
	return ""
}

func sessionsHelpFor(cmd string, fs *flag.FlagSet, stdout io.Writer) int {
	if h, ok := sessionsHelp[cmd]; ok {
		fmt.Fprintln(stdout, h)
		return 0
	}
	fmt.Fprint(stdout, sessionsUsage+"\nFlags:\n")
	fs.SetOutput(stdout)
	fs.PrintDefaults()
	fmt.Fprint(stdout, "\n"+envDoc)
	return 0
}

// runSessions runs one sessions command: pos[0] is the command word. It
// returns the process exit status: 0 ok, 1 failure (a missing, unreadable
// or busy session), 2 usage error.
func runSessions(pos []string, f sessionsFlags, s *store.Store, stdout, stderr io.Writer) int {
	switch cmd, rest := pos[0], pos[1:]; cmd {
	case "list":
		return sessionsList(s, f, rest, stdout, stderr)
	case "show":
		return sessionsShow(s, f, rest, stdout, stderr)
	default:
		return sessionsRm(s, f, rest, stdout, stderr)
	}
}

func sessionsList(s *store.Store, f sessionsFlags, rest []string, stdout, stderr io.Writer) int {
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "dsh sessions list: unexpected argument %q\n%s\n", rest[0], sessionsHelp["list"])
		return 2
	}
	dir := f.cwd
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			fmt.Fprintf(stderr, "dsh sessions list: --cwd %q: %v\n", dir, err)
			return 2
		}
		dir = abs
	}
	infos, err := s.List(dir)
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions list: %v\n", err)
		return 1
	}
	if f.asJSON {
		return listJSON(infos, stdout, stderr)
	}
	if len(infos) == 0 {
		where := s.Root()
		if dir != "" {
			where += " for " + dir
		}
		fmt.Fprintf(stderr, "dsh sessions list: no sessions stored in %s\n", where)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tEVENTS\tCWD\tTITLE")
	for _, in := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", printable(in.Header.ID),
			time.UnixMilli(in.UpdatedAt).Local().Format("2006-01-02 15:04:05"), in.Events,
			printable(in.Header.Cwd), abbreviate(oneLine(in.Title), 60))
	}
	if err := tw.Flush(); err != nil {
		return writeFailed("dsh sessions list", err, stderr)
	}
	return 0
}

// sessionJSON is one entry of `dsh sessions list --json`.
type sessionJSON struct {
	ID            string `json:"id"`
	Cwd           string `json:"cwd"`
	Title         string `json:"title"`
	CreatedAt     string `json:"createdAt"`
	UpdatedAt     string `json:"updatedAt"` // RFC 3339 in UTC, like createdAt
	Events        int    `json:"events"`
	Origin        string `json:"origin,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	Dir           string `json:"dir"`
}

func listJSON(infos []store.Info, stdout, stderr io.Writer) int {
	out := make([]sessionJSON, 0, len(infos))
	for _, in := range infos {
		out = append(out, sessionJSON{
			ID: in.Header.ID, Cwd: in.Header.Cwd, Title: in.Title, CreatedAt: in.Header.CreatedAt,
			UpdatedAt: time.UnixMilli(in.UpdatedAt).UTC().Format(time.RFC3339Nano), Events: in.Events, Origin: in.Header.Origin,
			ParentSession: in.Header.ParentSession, Dir: in.Dir,
		})
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return writeFailed("dsh sessions list", err, stderr)
	}
	return 0
}

// oneID checks the single ID argument of show and rm.
func oneID(name string, rest []string, stderr io.Writer) (string, bool) {
	usage := sessionsHelp[name]
	switch {
	case len(rest) == 0:
		fmt.Fprintf(stderr, "dsh sessions %s: a session ID is required\n%s\n", name, usage)
		return "", false
	case len(rest) > 1:
		fmt.Fprintf(stderr, "dsh sessions %s: takes one session ID, got %d arguments\n%s\n", name, len(rest), usage)
		return "", false
	case rest[0] == "":
		fmt.Fprintf(stderr, "dsh sessions %s: the session ID is empty\n%s\n", name, usage)
		return "", false
	}
	return rest[0], true
}

func sessionsRm(s *store.Store, f sessionsFlags, rest []string, stdout, stderr io.Writer) int {
	id, ok := oneID("rm", rest, stderr)
	if !ok {
		return 2
	}
	if f.asJSON {
		fmt.Fprintln(stderr, "dsh sessions rm: --json applies to list and show")
		return 2
	}
	id, err := s.Resolve(id)
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions rm: %v\n", err)
		return 1
	}
	if err := s.Remove(id); err != nil {
		fmt.Fprintf(stderr, "dsh sessions rm: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed session %s\n", printable(id))
	return 0
}

func sessionsShow(s *store.Store, f sessionsFlags, rest []string, stdout, stderr io.Writer) int {
	prefix, ok := oneID("show", rest, stderr)
	if !ok {
		return 2
	}
	id, err := s.Resolve(prefix)
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions show: %v\n", err)
		return 1
	}
	// Read takes no lease, so a session another process is writing can be
	// shown; an unfinished turn appears closed as "interrupted".
	h, events, err := s.Read(id)
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions show: %v\n", err)
		return 1
	}
	w := &errWriter{w: stdout}
	if f.asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(struct {
			Header store.Header  `json:"header"`
			Events []event.Event `json:"events"`
		}{h, events})
	} else {
		writeTranscript(w, h, events)
	}
	if w.err != nil {
		return writeFailed("dsh sessions show", w.err, stderr)
	}
	return 0
}

// writeFailed is the exit status of a command whose stdout write failed:
// a reader that went away (`dsh sessions list | head -1`) ends it quietly
// as SIGPIPE ends a filter (128+13); any other failure is said.
func writeFailed(cmd string, err error, stderr io.Writer) int {
	if errors.Is(err, syscall.EPIPE) {
		return headless.ExitStdoutClosed
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	return 1
}

// errWriter remembers the first write error so the transcript code can
// print freely and the caller checks once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Limits of the transcript: tool traffic and reasoning are abbreviated,
// user and assistant text is shown whole.
const (
	maxArgs      = 120
	maxLineRunes = 160
	maxReasoning = 1200
)

func writeTranscript(w io.Writer, h store.Header, events []event.Event) {
	fmt.Fprintf(w, "session %s\n", printable(h.ID))
	field := func(name, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-9s %s\n", name+":", v)
		}
	}
	field("cwd", printable(h.Cwd))
	field("created", h.CreatedAt)
	field("origin", h.Origin)
	field("parent", printable(h.ParentSession))
	if h.Config != nil {
		field("model", h.Config.Provider+"/"+h.Config.Model)
	}
	field("events", strconv.Itoa(len(events)))

	calls := map[string]event.ToolCall{}
	var usage turnUsage
	for _, ev := range events {
		switch ev.Type {
		case event.TypeToolCall:
			if d, err := event.Decode[event.ToolCall](ev); err == nil {
				calls[d.CallID] = d
			}
		case event.TypeTurnStart:
			if d, err := event.Decode[event.TurnStart](ev); err == nil {
				fmt.Fprintf(w, "\n── turn %d ──\n", d.Turn)
			}
		case event.TypeUserMessage:
			if m, err := event.Decode[event.Message](ev); err == nil {
				writeContent(w, "user", m.Content)
			}
		case event.TypeAssistantMessage:
			if d, err := event.Decode[event.AssistantMessage](ev); err == nil {
				writeContent(w, "assistant", d.Message.Content)
				usage.add(d.Usage)
				if d.Interrupted {
					fmt.Fprintln(w, "  (answer interrupted)")
				}
			}
		case event.TypeAssistantAttempt:
			if d, err := event.Decode[event.AssistantAttempt](ev); err == nil && d.Error != nil {
				fmt.Fprintf(w, "model attempt %d failed: %s (%s)\n", d.Attempt, oneLine(d.Error.Message), d.Error.Code)
			}
		case event.TypeToolResult:
			if d, err := event.Decode[event.ToolResult](ev); err == nil {
				writeResult(w, calls[d.Result().ToolCallID], d)
			}
		case event.TypeSessionTitle:
			if d, err := event.Decode[event.SessionTitle](ev); err == nil {
				fmt.Fprintf(w, "title: %s\n", oneLine(d.Title))
			}
		case event.TypeTodoWrite:
			if d, err := event.Decode[event.TodoWrite](ev); err == nil {
				fmt.Fprintln(w, "todos:")
				for _, td := range d.Todos {
					mark := map[string]string{"completed": "x", "in_progress": "~"}[td.Status]
					if mark == "" {
						mark = " "
					}
					fmt.Fprintf(w, "  [%s] %s\n", mark, abbreviate(oneLine(td.Content), maxLineRunes))
				}
			}
		case event.TypeSubagentStart:
			if d, err := event.Decode[event.SubagentStart](ev); err == nil {
				fmt.Fprintf(w, "subagent %s started (%s, call %s): %s\n", printable(d.ChildSessionID), d.Provider,
					printable(d.CallID), abbreviate(oneLine(d.Description), maxLineRunes))
			}
		case event.TypeSubagentEnd:
			if d, err := event.Decode[event.SubagentEnd](ev); err == nil {
				fmt.Fprintf(w, "subagent %s ended: %s\n", printable(d.ChildSessionID), d.StopReason)
			}
		case event.TypePermissionDecision:
			if d, err := event.Decode[event.PermissionDecision](ev); err == nil {
				fmt.Fprintf(w, "permission: %s %s by %s", d.Tool, d.Decision, d.By)
				if d.Rule != "" {
					fmt.Fprintf(w, " (rule %s)", oneLine(d.Rule))
				}
				fmt.Fprintln(w)
			}
		case event.TypeConfigChange:
			if d, err := event.Decode[event.ConfigChange](ev); err == nil {
				fmt.Fprintf(w, "config: %s/%s", d.Config.Provider, d.Config.Model)
				if d.PermissionMode != "" {
					fmt.Fprintf(w, ", permissions %s", d.PermissionMode)
				}
				fmt.Fprintln(w)
			}
		case event.TypeSessionDirs:
			if d, err := event.Decode[event.SessionDirs](ev); err == nil {
				fmt.Fprintf(w, "workspace roots besides the cwd: %s\n", rootsText(d.AdditionalDirectories))
			}
		case event.TypeCompactionCheckpoint:
			if d, err := event.Decode[event.CompactionCheckpoint](ev); err == nil {
				fmt.Fprintf(w, "context compacted (%s): %d messages summarised, about %d tokens before, %d after\n",
					d.Trigger, d.ReplacedMessages, d.TokensBefore, d.TokensAfter)
			}
		case event.TypeCompactionTrim:
			if d, err := event.Decode[event.CompactionTrim](ev); err == nil {
				fmt.Fprintf(w, "context trimmed: %d older messages dropped (%s)\n", d.Dropped, d.Reason)
			}
		case event.TypeTurnEnd:
			if d, err := event.Decode[event.TurnEnd](ev); err == nil {
				fmt.Fprintf(w, "turn %d ended: %s%s\n", d.Turn, reasonText(d.Reason), usage.String())
				usage = turnUsage{}
			}
		}
		// Step boundaries, tool/call (shown from the assistant message),
		// request records and inbox splices carry nothing a reader needs.
	}
}

// rootsText lists additional workspace roots on one line.
func rootsText(dirs []string) string {
	if len(dirs) == 0 {
		return "none"
	}
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = printable(d)
	}
	return strings.Join(out, ", ")
}

func reasonText(r event.TurnEndReason) string {
	s := r.Kind
	switch {
	case r.Error != nil:
		s += ": " + oneLine(r.Error.Message)
		if r.Error.Code != "" {
			s += " (" + r.Error.Code + ")"
		}
	case r.Reason != nil:
		s += " (" + r.Reason.Kind + ")"
	case r.Detail != "":
		s += ": " + oneLine(r.Detail)
	}
	return s
}

func writeContent(w io.Writer, who string, content []event.ContentBlock) {
	for _, b := range content {
		switch b.Type {
		case event.BlockText:
			fmt.Fprintf(w, "%s: %s\n", who, indent(b.Text))
		case event.BlockReasoning:
			fmt.Fprintf(w, "%s [reasoning]: %s\n", who, indent(abbreviate(b.Text, maxReasoning)))
		case event.BlockImage:
			if a := b.Attachment; a != nil {
				fmt.Fprintf(w, "%s: [image %s %s %dx%d]\n", who, printable(a.Name), a.MediaType, a.Width, a.Height)
			} else {
				fmt.Fprintf(w, "%s: [image]\n", who)
			}
		}
		// Tool calls are shown with their results, one line each.
	}
}

// writeResult shows a tool call and how it ended on one line.
func writeResult(w io.Writer, call event.ToolCall, d event.ToolResult) {
	b := d.Result()
	status := "ok"
	if b.IsError {
		status = "error"
		if d.Error != nil && d.Error.Code != "" {
			status += " " + d.Error.Code
		}
	}
	name := call.Name
	if name == "" {
		name = "tool"
	}
	text := strings.TrimRight(event.JoinText(b.Content), "\n")
	first, _, _ := strings.Cut(text, "\n")
	lines := 0
	if text != "" {
		lines = strings.Count(text, "\n") + 1
	}
	fmt.Fprintf(w, "→ %s %s → %s", printable(name), abbreviate(oneLine(call.Arguments), maxArgs), status)
	switch {
	case b.IsError && first != "":
		fmt.Fprintf(w, ": %s\n", abbreviate(oneLine(first), maxLineRunes))
	case lines > 0:
		fmt.Fprintf(w, " (%d lines)\n", lines)
	default:
		fmt.Fprintln(w)
	}
}

// turnUsage sums the token usage of a turn's model calls.
type turnUsage struct {
	prompt, cached, output int64
	known                  bool
}

func (u *turnUsage) add(x *event.Usage) {
	if x == nil {
		return
	}
	u.known = true
	u.prompt += x.InputTokens
	u.output += x.OutputTokens
	if x.CacheReadTokens != nil {
		u.cached += *x.CacheReadTokens
		u.prompt += *x.CacheReadTokens
	}
}

func (u turnUsage) String() string {
	if !u.known {
		return ""
	}
	return fmt.Sprintf(" · tokens %d prompt (%d cached), %d output", u.prompt, u.cached, u.output)
}

// indent continues a multi-line text under its label.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// oneLine flattens s for a single table or transcript line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// abbreviate cuts s to n runes, saying so.
func abbreviate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("… (%d more characters)", len(r)-n)
}

// printable shows an id or path as is when that is unambiguous, else
// Go-quoted, so hostile names cannot garble a terminal or a table.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
