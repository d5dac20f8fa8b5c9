package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// startJob runs a bash call with run_in_background: the job starts, and
// the call returns with its id and whatever it printed in its first
// second (or until it ended, if sooner).
func startJob(ctx context.Context, env *Env, req ExecRequest) Result {
	meta := &event.ToolMeta{Kind: "execute", Paths: []string{req.Workdir}}
	if env.Jobs == nil {
		return withMeta(ErrorResult("this session cannot run background jobs; run the command without run_in_background"), meta)
	}
	id, err := env.Jobs.Start(req)
	if err != nil {
		return withMeta(ErrorResult(fmt.Sprintf("the background job was not started: %v", err)), meta)
	}
	st, err := env.Jobs.First(ctx, id, OutputBudget-1024)
	if err != nil && ctx.Err() != nil {
		// The call was cancelled while it waited: the job it started
		// must not outlive a call nobody saw return.
		_, _ = env.Jobs.Kill(id, 0)
		return withMeta(ErrorResult(fmt.Sprintf("cancelled; background job %s was killed", id)), meta)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Started background job %s: %s\n", id, req.Command)
	writeJobOutput(&b, st)
	meta.Job = &event.JobRef{ID: id, CallID: req.CallID}
	return withMeta(TextResult(b.String()), meta)
}

// writeJobOutput writes a job's new output and a status line.
func writeJobOutput(b *strings.Builder, st JobStatus) {
	b.WriteString(st.Output)
	if st.Output != "" && !strings.HasSuffix(st.Output, "\n") {
		b.WriteByte('\n')
	}
	if st.More {
		fmt.Fprintf(b, "[more output is waiting; call job_output again]\n")
	}
	if st.Dropped > 0 {
		fmt.Fprintf(b, "[the job printed %d bytes; only the first %d MiB are kept (in %s), the rest was dropped]\n", st.Total, SpillMaxBytes>>20, st.LogPath)
	}
	switch {
	case st.Running:
		fmt.Fprintf(b, "[%s is running; job_output {\"job_id\":%q} shows new output, job_kill stops it]", st.ID, st.ID)
	case st.Killed:
		fmt.Fprintf(b, "[%s was killed; exit code: %d]", st.ID, st.ExitCode)
	default:
		fmt.Fprintf(b, "[%s exited; exit code: %d]", st.ID, st.ExitCode)
	}
}

const jobOutputSchema = `{"type":"object","properties":{"job_id":{"type":"string","description":"The id bash returned, e.g. \"job-1\"."},"wait_ms":{"type":"integer","minimum":0,"description":"When the job has no new output yet, wait up to this many milliseconds for some (or for the job to end). Default 0, at most 600000."}},"required":["job_id"],"additionalProperties":false}`

const jobOutputDescription = `Show what a background job (started with bash run_in_background) printed since the last look, and whether it is still running or its exit code. At most 47 KB per call; call again for the rest. The job's whole output is also kept in a file named in the result.`

const jobKillSchema = `{"type":"object","properties":{"job_id":{"type":"string","description":"The id of the job to stop."}},"required":["job_id"],"additionalProperties":false}`

const jobKillDescription = `Stop a background job and everything it started (SIGTERM, then SIGKILL after a second). Returns its last output and exit code.`

const jobListSchema = `{"type":"object","properties":{},"additionalProperties":false}`

const jobListDescription = `List this session's background jobs: id, running or exit code, how much they printed, and the command.`

type jobOutputTool struct{}
type jobKillTool struct{}
type jobListTool struct{}

func (jobOutputTool) Name() string            { return "job_output" }
func (jobOutputTool) Description() string     { return jobOutputDescription }
func (jobOutputTool) Schema() json.RawMessage { return json.RawMessage(jobOutputSchema) }
func (jobOutputTool) Kind() Kind              { return KindExempt }
func (jobOutputTool) ParallelSafe() bool      { return false }
func (jobKillTool) Name() string              { return "job_kill" }
func (jobKillTool) Description() string       { return jobKillDescription }
func (jobKillTool) Schema() json.RawMessage   { return json.RawMessage(jobKillSchema) }
func (jobKillTool) Kind() Kind                { return KindExempt }
func (jobKillTool) ParallelSafe() bool        { return false }
func (jobListTool) Name() string              { return "job_list" }
func (jobListTool) Description() string       { return jobListDescription }
func (jobListTool) Schema() json.RawMessage   { return json.RawMessage(jobListSchema) }
func (jobListTool) Kind() Kind                { return KindExempt }
func (jobListTool) ParallelSafe() bool        { return false }

type jobArgs struct {
	JobID  string `json:"job_id"`
	WaitMs *int64 `json:"wait_ms"`
}

func parseJobArgs(tool string, args json.RawMessage) (jobArgs, error) {
	var a jobArgs
	if err := decodeArgs(tool, args, &a); err != nil {
		return a, err
	}
	if err := required(tool, "job_id", a.JobID); err != nil {
		return a, err
	}
	if a.WaitMs != nil && *a.WaitMs < 0 {
		return a, fmt.Errorf("invalid arguments for %s: wait_ms must be 0 or more, got %d", tool, *a.WaitMs)
	}
	return a, nil
}

func (jobOutputTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	a, err := parseJobArgs("job_output", args)
	return Access{Title: "Output of " + a.JobID, SessionOwned: true}, err
}

func (jobOutputTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	a, err := parseJobArgs("job_output", args)
	if err != nil {
		return ErrorResult(err.Error())
	}
	if env.Jobs == nil {
		return ErrorResult("this session has no background jobs")
	}
	wait := time.Duration(0)
	if a.WaitMs != nil {
		wait = min(time.Duration(*a.WaitMs)*time.Millisecond, jobMaxWait)
	}
	st, err := env.Jobs.Output(ctx, a.JobID, wait, OutputBudget-1024)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return ErrorResult(err.Error())
	}
	return jobResult(st)
}

func jobResult(st JobStatus) Result {
	var b strings.Builder
	if st.Output == "" && !st.More {
		b.WriteString("(no new output)\n")
	}
	writeJobOutput(&b, st)
	meta := &event.ToolMeta{Kind: "execute", Job: &event.JobRef{ID: st.ID, CallID: st.CallID}}
	if !st.Running {
		code := st.ExitCode
		meta.ExitCode = &code
	}
	return withMeta(TextResult(b.String()), meta)
}

func (jobKillTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	a, err := parseJobArgs("job_kill", args)
	return Access{Title: "Stop " + a.JobID, SessionOwned: true}, err
}

func (jobKillTool) Run(_ context.Context, args json.RawMessage, env *Env) Result {
	a, err := parseJobArgs("job_kill", args)
	if err != nil {
		return ErrorResult(err.Error())
	}
	if env.Jobs == nil {
		return ErrorResult("this session has no background jobs")
	}
	st, err := env.Jobs.Kill(a.JobID, OutputBudget-1024)
	if err != nil {
		return ErrorResult(err.Error())
	}
	return jobResult(st)
}

func (jobListTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	var a struct{}
	return Access{Title: "List background jobs", SessionOwned: true}, decodeArgs("job_list", args, &a)
}

func (jobListTool) Run(_ context.Context, args json.RawMessage, env *Env) Result {
	var list []JobStatus
	if env.Jobs != nil {
		list = env.Jobs.List()
	}
	if len(list) == 0 {
		return TextResult("No background jobs in this session.")
	}
	var b strings.Builder
	for _, st := range list {
		state := "running"
		switch {
		case st.Running:
		case st.Killed:
			state = fmt.Sprintf("killed (exit code %d)", st.ExitCode)
		default:
			state = fmt.Sprintf("exited (exit code %d)", st.ExitCode)
		}
		cmd, _ := cutLine(st.Command, 200)
		fmt.Fprintf(&b, "%s\t%s\t%d bytes of output\t%s\n", st.ID, state, st.Total, cmd)
	}
	return TextResult(b.String())
}
