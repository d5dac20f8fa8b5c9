package core

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// TestBackgroundJobOutlivesTurnNotSession: a job started in one turn runs
// on after it, its output is read in the next turn, and closing the
// session kills it.
func TestBackgroundJobOutlivesTurnNotSession(t *testing.T) {
	h := newHarness(t,
		calls(model.ToolCall{ID: "b", Name: "bash", Arguments: `{"command":"echo PID=$$; exec sleep 1000","description":"serve","run_in_background":true}`}),
		text("started"),
		calls(model.ToolCall{ID: "o", Name: "job_list", Arguments: `{}`}),
		text("listed"))
	s := h.session()
	if res := run(t, s, "start it"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn 1: %+v", res.Reason)
	}
	var pid int
	var listed string
	for _, e := range s.Events() {
		if e.Type != event.TypeToolResult {
			continue
		}
		tr, _ := event.Decode[event.ToolResult](e)
		out := event.ResultText(tr.Message.Content[0])
		if m := regexp.MustCompile(`PID=(\d+)`).FindStringSubmatch(out); m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		listed = out
	}
	if pid == 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("job not running after its turn (pid %d)", pid)
	}
	run(t, s, "list")
	for _, e := range s.Events() {
		if e.Type == event.TypeToolResult {
			tr, _ := event.Decode[event.ToolResult](e)
			listed = event.ResultText(tr.Message.Content[0])
		}
	}
	if !regexp.MustCompile(`job-1\trunning\t`).MatchString(listed) {
		t.Fatalf("job_list in turn 2: %q", listed)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("background job survived the session's close")
	}
}

// TestForegroundServerYields: a dev server started in the foreground
// without a timeout does not hold the step to its timeout: after
// BashYield the call returns naming its job, the turn goes on, and the
// session's close kills the job the model never read.
func TestForegroundServerYields(t *testing.T) {
	h := newHarness(t,
		calls(model.ToolCall{ID: "b", Name: "bash", Arguments: `{"command":"echo PID=$$; exec sleep 1000","description":"serve"}`}),
		text("the server runs"))
	rt := h.runtimeWith(func(cfg *Config) { cfg.BashYield = 2 * time.Second })
	s, err := rt.Create(context.Background(), SessionOptions{Cwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "start the server"); res.Reason.Kind != event.ReasonCompleted || res.Text != "the server runs" {
		t.Fatalf("turn %+v", res)
	}
	var out string
	for _, e := range s.Events() {
		if e.Type == event.TypeToolResult {
			tr, _ := event.Decode[event.ToolResult](e)
			out = event.ResultText(tr.Message.Content[0])
		}
	}
	m := regexp.MustCompile(`PID=(\d+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "goes on as background job job-1") {
		t.Fatalf("result %q", out)
	}
	pid, _ := strconv.Atoi(m[1])
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the yielded server is not running")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("the yielded job survived the session's close")
	}
}
