package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/store"
)

// Options configure one headless run.
type Options struct {
	JSON bool
	// SessionID, when AdoptSet, names the stored session to continue.
	SessionID string
	Adopt     bool
	Task      string
	// Cwd is the workspace; "" means the process cwd.
	Cwd    string
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	// OfflineHint is printed after a missing-credential error.
	OfflineHint string
}

// Run performs one task in a new or adopted session and returns the exit
// code: 0 exactly when the turn ended completed, else 1.
func Run(ctx context.Context, rt *core.Runtime, o Options) int {
	var proj *Projector
	if o.JSON {
		proj = NewProjector(o.Stdout)
	}
	fail := func(msg string) int {
		if proj != nil {
			_ = proj.Error(msg)
		} else {
			for _, line := range strings.Split(msg, "\n") {
				fmt.Fprintf(o.Stderr, "dsh: %s\n", line)
			}
		}
		return 1
	}

	cwd := o.Cwd
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fail("cannot read the working directory: " + err.Error())
		}
		cwd = wd
	}
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = r
	}

	def := rt.Defaults()
	if _, err := rt.Provider(def.Provider); err != nil {
		msg := err.Error()
		var me *model.Error
		if errors.As(err, &me) && me.Class == model.ClassMissingCredential && o.OfflineHint != "" {
			msg += "\n" + o.OfflineHint
		}
		return fail(msg)
	}

	// Default mode streams live reasoning to stderr under one header line;
	// the block ends with a newline once anything else arrives.
	var rmu sync.Mutex
	inReasoning, headed := false, false
	endReasoning := func() {
		rmu.Lock()
		defer rmu.Unlock()
		if inReasoning {
			fmt.Fprint(o.Stderr, "\n")
			inReasoning = false
		}
	}
	opts := core.SessionOptions{Cwd: cwd, Origin: "run"}
	if proj == nil {
		opts.OnDelta = func(d model.Delta) {
			if d.Kind != model.DeltaReasoning {
				if d.Kind != model.DeltaKeepAlive {
					endReasoning()
				}
				return
			}
			if d.Text == "" {
				return
			}
			rmu.Lock()
			defer rmu.Unlock()
			if !headed {
				fmt.Fprint(o.Stderr, "dsh: reasoning:\n")
				headed = true
			}
			inReasoning = true
			fmt.Fprint(o.Stderr, d.Text)
		}
	}

	var sess *core.Session
	var err error
	if o.Adopt {
		if err := checkAdoptable(rt.Store(), o.SessionID, cwd); err != nil {
			return fail(err.Error())
		}
		sess, err = rt.Resume(ctx, o.SessionID, opts)
		if errors.Is(err, store.ErrLeased) {
			return fail(fmt.Sprintf("session %q is open for writing in another process; wait for it to finish", o.SessionID))
		}
	} else {
		sess, err = rt.Create(ctx, opts)
	}
	if err != nil {
		return fail(err.Error())
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sess.Close(closeCtx)
	}()

	if proj != nil {
		if err := proj.Session(sess.ID(), cwd); err != nil {
			return 1
		}
	}

	sub := rt.Subscribe()
	defer sub.Close()
	startSeq := int64(len(sess.Events()))
	t, err := sess.Prompt(ctx, []event.ContentBlock{event.Text(o.Task)})
	if err != nil {
		return fail(err.Error())
	}

	// Cancel the turn when ctx ends (a signal): the turn ends aborted.
	stop := context.AfterFunc(ctx, func() { sess.Cancel(nil) })
	defer stop()

	// Project committed events of this session until the turn's end: the
	// turn/end notice whose seq the ticket reports.
	done := t.Done()
loop:
	for {
		select {
		case n := <-sub.C():
			if n.Kind != core.NoticeEvent || n.SessionID != sess.ID() || n.Event.Seq < startSeq {
				continue
			}
			if proj != nil {
				if err := proj.Event(n.Event); err != nil {
					o.Logger.Warn("event not projected", "type", n.Event.Type, "err", err)
				}
			}
			if n.Event.Type == event.TypeTurnEnd {
				<-t.Done()
				if n.Event.Seq >= t.Result().Seq {
					break loop
				}
			}
		case <-done:
			done = nil
			if t.Result().Seq < 0 {
				break loop // the turn recorded no end
			}
		}
	}
	res := t.Result()
	endReasoning()
	if proj != nil {
		_ = proj.Final(res.Text)
	} else {
		if res.Text != "" {
			fmt.Fprintln(o.Stdout, res.Text)
		}
		if res.Reason.Kind == event.ReasonError && res.Reason.Error != nil {
			fmt.Fprintf(o.Stderr, "dsh: %s: %s\n", res.Reason.Error.Code, res.Reason.Error.Message)
		} else if res.Reason.Kind != event.ReasonCompleted {
			fmt.Fprintf(o.Stderr, "dsh: turn ended %s%s\n", res.Reason.Kind, detail(res.Reason))
		}
	}
	if res.Reason.Kind == event.ReasonCompleted {
		return 0
	}
	return 1
}

func detail(r event.TurnEndReason) string {
	switch {
	case r.Detail != "":
		return ": " + r.Detail
	case r.Reason != nil:
		return " (" + r.Reason.Kind + ")"
	}
	return ""
}

// checkAdoptable refuses sessions a headless run must not continue: a
// missing one, one recorded in another cwd or with none, a subagent's.
func checkAdoptable(st *store.Store, id, cwd string) error {
	h, err := st.ReadHeader(id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("session %q does not exist; omit --session-id to start a new session", id)
	}
	if err != nil {
		return fmt.Errorf("session %q cannot be adopted: %w", id, err)
	}
	switch {
	case h.Cwd == "":
		return fmt.Errorf("session %q recorded no working directory; it cannot be adopted", id)
	case h.Cwd != cwd:
		return fmt.Errorf("session %q belongs to %s, not %s; run from that directory", id, h.Cwd, cwd)
	case h.ParentSession != "" || h.Origin == "subagent":
		return fmt.Errorf("session %q is a subagent's or forked session; it cannot be adopted", id)
	}
	// A live writer is refused by Resume itself (the lease), with the
	// same message; probing the lease here too would take it twice.
	return nil
}
