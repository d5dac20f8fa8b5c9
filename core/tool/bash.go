package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/sandbox"
)

// Limits of bash.
const (
	bashDefaultTimeout = 2 * time.Minute
	bashMaxTimeout     = 10 * time.Minute
	bashOutputLimit    = OutputBudget - 1024 // bytes shown, head and tail; the rest is spilled
)

const bashSchema = `{"type":"object","properties":{"command":{"type":"string","description":"The command line, run with /bin/bash -c in a fresh shell (no state is kept between calls). stdin is empty; do not start interactive programs."},"description":{"type":"string","description":"What the command does, in 5-10 words, shown to the user."},"run_in_background":{"type":"boolean","description":"Start the command as a background job and return at once with its job id and first output; it keeps running after the call (a dev server, a watcher, a long build). Read its new output with job_output, stop it with job_kill, see all jobs with job_list. Background jobs have no timeout and are killed when the session ends. Default false."},"timeout_ms":{"type":"integer","minimum":1,"description":"Timeout in milliseconds, at most 600000 (10 minutes): the command is waited for and killed when it runs longer. Without it, a command still running after 30 seconds (the default) goes on as a background job: the call returns its output so far and the job id, and job_output follows it; one that runs on past 2 minutes without yielding is killed."},"workdir":{"type":"string","description":"Folder to run in, inside the workspace, absolute or relative to the working directory. Default: the working directory."}},"required":["command","description"],"additionalProperties":false}`

const bashDescription = `Run a shell command with bash and return its combined stdout and stderr, then "[exit code: N]". Output over 47 KB keeps its beginning and end with the cut marked, and the whole output is saved in a file that read and grep can page. The command and everything it starts are killed on timeout or cancel; nothing keeps running after the call, unless run_in_background starts it as a job. Its environment holds only the usual variables (PATH, HOME, locale, toolchain homes) and those the user passes: no credentials. Prefer read, glob, grep, edit and write over cat, find, grep, sed and echo for files.`

type bashTool struct {
	// sandbox is what the tool's description tells of (nil: nothing).
	sandbox *sandbox.Sandbox
	// envPass are the variables commands inherit besides the base set
	// (the commandEnv setting; see CommandEnv).
	envPass []string
}

// WithSandbox returns tools with the bash tool's description telling the
// model what the sandbox allows (sb.Describe), so it does not flail on a
// denied write. Call it once, before the runtime is built: descriptions
// are part of every session's byte-stable request prefix.
func WithSandbox(tools []Tool, sb *sandbox.Sandbox) []Tool {
	out := make([]Tool, len(tools))
	for i, t := range tools {
		if b, ok := t.(bashTool); ok {
			b.sandbox = sb
			t = b
		}
		out[i] = t
	}
	return out
}

// commandScope is the sandbox scope of a command run for env: the
// workspace, the additional directories and the spill folder writable.
func commandScope(env *Env) sandbox.Scope {
	sc := sandbox.Scope{Workspace: env.Cwd, Writable: append([]string(nil), env.AdditionalDirs...),
		ReadOnly: env.PermissionMode == "read-only", Unconfined: env.PermissionMode == "full", Tmp: env.TmpDir}
	if env.Spill != nil && env.Spill.Dir() != "" {
		sc.Writable = append(sc.Writable, env.Spill.Dir())
	}
	return sc
}

type bashArgs struct {
	Command     string `json:"command"`
	Description string `json:"description"`
	TimeoutMs   *int64 `json:"timeout_ms"`
	Workdir     string `json:"workdir"`
	Background  bool   `json:"run_in_background"`
}

func (bashTool) Name() string { return "bash" }

// Description waits for the sandbox's probe (Describe), on first use.
func (t bashTool) Description() string   { return bashDescription + t.sandbox.Describe() }
func (bashTool) Schema() json.RawMessage { return json.RawMessage(bashSchema) }
func (bashTool) Kind() Kind              { return KindExecute }
func (bashTool) ParallelSafe() bool      { return false }

// bashPlan is a validated bash call.
type bashPlan struct {
	args    bashArgs
	workdir string
	timeout time.Duration
	clamped bool
}

func (bashTool) parse(args json.RawMessage, env *Env) (bashPlan, error) {
	var pl bashPlan
	if err := decodeArgs("bash", args, &pl.args); err != nil {
		return pl, err
	}
	a := pl.args
	if strings.TrimSpace(a.Command) == "" {
		return pl, errors.New("invalid arguments for bash: command is required")
	}
	pl.timeout = bashDefaultTimeout
	if a.TimeoutMs != nil {
		if *a.TimeoutMs < 1 {
			return pl, fmt.Errorf("invalid arguments for bash: timeout_ms must be a positive number of milliseconds, got %d", *a.TimeoutMs)
		}
		pl.timeout = time.Duration(*a.TimeoutMs) * time.Millisecond
		if *a.TimeoutMs > int64(bashMaxTimeout/time.Millisecond) {
			pl.timeout, pl.clamped = bashMaxTimeout, true
		}
	}
	ws, err := workspaceOf(env)
	if err != nil {
		return pl, fmt.Errorf("bash: %w", err)
	}
	pl.workdir = ws
	if a.Workdir != "" {
		wd, err := Resolve(ws, a.Workdir)
		if err != nil {
			return pl, fmt.Errorf("bash: workdir: %w", err)
		}
		if !within(ws, wd) {
			return pl, fmt.Errorf("bash: workdir %s is outside the workspace %s; commands run inside the workspace only", wd, ws)
		}
		fi, err := os.Stat(wd)
		if err != nil {
			return pl, fmt.Errorf("bash: workdir %s does not exist", display(ws, wd))
		}
		if !fi.IsDir() {
			return pl, fmt.Errorf("bash: workdir %s is not a folder", display(ws, wd))
		}
		pl.workdir = wd
	}
	return pl, nil
}

func (t bashTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	pl, err := t.parse(args, env)
	if err != nil {
		return Access{}, err
	}
	title := strings.TrimSpace(pl.args.Description)
	if title == "" {
		title, _ = cutLine(strings.TrimSpace(pl.args.Command), 80)
	}
	return Access{Paths: []string{pl.workdir}, Command: pl.args.Command, Title: title}, nil
}

func (t bashTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	pl, err := t.parse(args, env)
	if err != nil {
		return ErrorResult(err.Error())
	}
	req := ExecRequest{
		CallID:      env.CallID,
		Command:     pl.args.Command,
		Workdir:     pl.workdir,
		Env:         NonInteractive(CommandEnv(os.Environ(), t.envPass)),
		Timeout:     pl.timeout,
		OutputLimit: bashOutputLimit,
		Scope:       commandScope(env),
	}
	if pl.args.Background {
		return startJob(ctx, env, req)
	}
	if pl.args.TimeoutMs == nil && env.BashYield > 0 {
		// No timeout of its own: still running after BashYield, it goes
		// on as a background job (a dev server started in the foreground).
		req.YieldAfter, req.Jobs = env.BashYield, env.Jobs
	}
	ex := env.Exec
	if ex == nil {
		ex = LocalExec()
	}
	var spill *SpillWriter
	if env.Spill != nil {
		spill = env.Spill.Writer(env.CallID)
		req.Spill = spill
	}
	res, err := ex.Exec(ctx, req)
	saved := Spilled{}
	if spill != nil {
		saved = spill.Close()
	}
	if err == nil && res.JobID != "" {
		return yielded(pl, req, res, saved)
	}
	code := res.ExitCode
	meta := &event.ToolMeta{Kind: "execute", Paths: []string{pl.workdir}, ExitCode: &code, Truncated: res.Truncated, Terminal: res.TerminalID}

	var b strings.Builder
	if pl.clamped {
		fmt.Fprintf(&b, "[timeout_ms %d is over the 10 minute maximum; using 600000]\n", *pl.args.TimeoutMs)
	}
	b.WriteString(res.Output)
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		b.WriteByte('\n')
	}
	isErr := false
	switch {
	case err != nil && ctx.Err() != nil:
		b.WriteString("[command cancelled; it and everything it started were killed]\n")
		isErr = true
	case err != nil:
		b.WriteString(fmt.Sprintf("[command could not run: %v]\n", err))
		isErr = true
	case res.TimedOut:
		fmt.Fprintf(&b, "[command timed out after %s; it and everything it started were killed]\n", pl.timeout)
		isErr = true
	}
	if res.Truncated {
		if note := saved.Note(); note != "" {
			b.WriteString(note + "\n")
		}
	}
	fmt.Fprintf(&b, "[exit code: %d]", code)
	return Result{Content: []event.ContentBlock{event.Text(b.String())}, IsError: isErr, Meta: meta}
}

// CommandScope is the sandbox scope of a command run for env's session
// (what the bash tool's commands get), for commands the runtime itself
// runs on the session's behalf: a custom command's !-lines, hooks.
func CommandScope(env *Env) sandbox.Scope { return commandScope(env) }

// yielded is the result of a call whose command went on as a background
// job: what it printed so far, and how to follow it.
func yielded(pl bashPlan, req ExecRequest, res ExecResult, saved Spilled) Result {
	var b strings.Builder
	b.WriteString(res.Output)
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		b.WriteByte('\n')
	}
	if res.Truncated {
		if note := saved.Note(); note != "" {
			b.WriteString(note + "\n")
		}
	}
	fmt.Fprintf(&b, "[still running after %s, so it goes on as background job %s: job_output {\"job_id\":%q} shows "+
		"its new output, job_kill stops it. Give bash a timeout_ms to wait for a command instead.]", req.YieldAfter, res.JobID, res.JobID)
	meta := &event.ToolMeta{Kind: "execute", Paths: []string{pl.workdir}, Truncated: res.Truncated,
		Job: &event.JobRef{ID: res.JobID, CallID: req.CallID}}
	return Result{Content: []event.ContentBlock{event.Text(b.String())}, Meta: meta}
}
