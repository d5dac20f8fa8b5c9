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
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

const sessionsUsage = `usage: dsh sessions <command> [arguments]

Look after the sessions stored under the session root
(--session-root, DSH_SESSION_ROOT, $DSH_HOME/sessions, else $XDG_STATE_HOME/dsh/sessions).

commands:
  list [--cwd DIR] [--json]   list sessions, most recently updated first;
                              --cwd keeps those recorded for DIR, --json prints one JSON array
  show ID                     print a readable transcript of session ID
  rm ID                       delete session ID (refused while a process is writing it)

Exit status: 0 on success, 1 if the session is missing or cannot be read or removed, 2 on usage errors.
`

// runSessions implements `dsh sessions list|show|rm`. root is the resolved
// session root. It returns the process exit status: 0 ok, 1 failure (a
// missing, unreadable or busy session), 2 usage error.
func runSessions(args []string, root string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "dsh sessions: a command is required\n\n"+sessionsUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, sessionsUsage)
		return 0
	}
	if root == "" {
		fmt.Fprintln(stderr, "dsh sessions: no session root is configured")
		return 1
	}
	s := store.New(root)
	switch cmd, rest := args[0], args[1:]; cmd {
	case "list":
		return sessionsList(s, rest, stdout, stderr)
	case "show":
		return sessionsShow(s, rest, stdout, stderr)
	case "rm":
		return sessionsRm(s, rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "dsh sessions: unknown command %q\n\n%s", cmd, sessionsUsage)
		return 2
	}
}

// subFlags parses the flags of one subcommand. It returns the positional
// arguments, and an exit status when the caller must stop (help: 0, bad
// flags: 2). Help goes to stdout, errors to stderr.
func subFlags(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) ([]string, int, bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {} // we print usage ourselves, to the right stream
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil, 0, true
		}
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
		return nil, 2, true
	}
	return fs.Args(), 0, false
}

func sessionsList(s *store.Store, args []string, stdout, stderr io.Writer) int {
	const usage = "usage: dsh sessions list [--cwd DIR] [--json]"
	fs := flag.NewFlagSet("dsh sessions list", flag.ContinueOnError)
	cwd := fs.String("cwd", "", "list only sessions recorded for this working directory")
	asJSON := fs.Bool("json", false, "print one JSON array instead of a table")
	rest, code, stop := subFlags(fs, usage, args, stdout, stderr)
	if stop {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "dsh sessions list: unexpected argument %q\n%s\n", rest[0], usage)
		return 2
	}
	dir := *cwd
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
	if *asJSON {
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
		fmt.Fprintf(stderr, "dsh sessions list: %v\n", err)
		return 1
	}
	return 0
}

// sessionJSON is one entry of `dsh sessions list --json`.
type sessionJSON struct {
	ID            string `json:"id"`
	Cwd           string `json:"cwd"`
	Title         string `json:"title"`
	CreatedAt     string `json:"createdAt"`
	UpdatedAt     int64  `json:"updatedAt"` // epoch ms, like event times
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
			UpdatedAt: in.UpdatedAt, Events: in.Events, Origin: in.Header.Origin,
			ParentSession: in.Header.ParentSession, Dir: in.Dir,
		})
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "dsh sessions list: %v\n", err)
		return 1
	}
	return 0
}

// oneID parses the single ID argument of show and rm.
func oneID(name string, args []string, stdout, stderr io.Writer) (string, int, bool) {
	usage := "usage: dsh sessions " + name + " ID"
	fs := flag.NewFlagSet("dsh sessions "+name, flag.ContinueOnError)
	rest, code, stop := subFlags(fs, usage, args, stdout, stderr)
	if stop {
		return "", code, true
	}
	switch {
	case len(rest) == 0:
		fmt.Fprintf(stderr, "dsh sessions %s: a session ID is required\n%s\n", name, usage)
		return "", 2, true
	case len(rest) > 1:
		fmt.Fprintf(stderr, "dsh sessions %s: takes one session ID, got %d arguments\n%s\n", name, len(rest), usage)
		return "", 2, true
	case rest[0] == "":
		fmt.Fprintf(stderr, "dsh sessions %s: the session ID is empty\n%s\n", name, usage)
		return "", 2, true
	}
	return rest[0], 0, false
}

func sessionsRm(s *store.Store, args []string, stdout, stderr io.Writer) int {
	id, code, stop := oneID("rm", args, stdout, stderr)
	if stop {
		return code
	}
	if err := s.Remove(id); err != nil {
		fmt.Fprintf(stderr, "dsh sessions rm: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed session %s\n", printable(id))
	return 0
}

func sessionsShow(s *store.Store, args []string, stdout, stderr io.Writer) int {
	id, code, stop := oneID("show", args, stdout, stderr)
	if stop {
		return code
	}
	// Read takes no lease, so a session another process is writing can be
	// shown; an unfinished turn appears closed as "interrupted".
	h, events, err := s.Read(id)
	if err != nil {
		fmt.Fprintf(stderr, "dsh sessions show: %v\n", err)
		return 1
	}
	w := &errWriter{w: stdout}
	writeTranscript(w, h, events)
	if w.err != nil {
		fmt.Fprintf(stderr, "dsh sessions show: %v\n", w.err)
		return 1
	}
	return 0
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
	maxArgs        = 200
	maxResultLines = 8
	maxLineRunes   = 160
	maxReasoning   = 1200
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

	for _, ev := range events {
		switch ev.Type {
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
				writeResult(w, d)
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
		case event.TypeTurnEnd:
			if d, err := event.Decode[event.TurnEnd](ev); err == nil {
				fmt.Fprintf(w, "turn %d ended: %s\n", d.Turn, reasonText(d.Reason))
			}
		}
		// Step boundaries, tool/call (shown from the assistant message),
		// request records and inbox splices carry nothing a reader needs.
	}
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
		case event.BlockToolCall:
			fmt.Fprintf(w, "→ tool %s (%s): %s\n", printable(b.Name), printable(b.ID),
				abbreviate(oneLine(b.Arguments), maxArgs))
		}
	}
}

func writeResult(w io.Writer, d event.ToolResult) {
	b := d.Result()
	status := "ok"
	if b.IsError {
		status = "error"
		if d.Error != nil && d.Error.Code != "" {
			status += " " + d.Error.Code
		}
	}
	text := strings.TrimRight(event.JoinText(b.Content), "\n")
	lines := strings.Split(text, "\n")
	fmt.Fprintf(w, "← result (%s) [%s]", printable(b.ToolCallID), status)
	if text == "" {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintln(w, ":")
	for i, line := range lines {
		if i == maxResultLines {
			fmt.Fprintf(w, "  … %d more lines\n", len(lines)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", abbreviate(line, maxLineRunes))
	}
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
