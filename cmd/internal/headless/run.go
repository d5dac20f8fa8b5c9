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
	// Images follow the task text in its user message (LoadImages has
	// checked them); the session's model must take image input.
	Images []Image
	// Cwd is the workspace; "" means the process cwd.
	Cwd    string
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	// OfflineHint is printed after a missing-credential error.
	OfflineHint string
	// Continue adopts the most recent session of the cwd.
	Continue bool
	// Reconfigure, if set, is what an adopted session's configuration
	// becomes (the model flags given on this command line); a change is
	// recorded before the task, so later wakes keep it.
	Reconfigure func(event.Config) event.Config
	// SandboxLine, when set, is the first stderr line of a plain run once
	// its session is open: what contains the model's commands.
	SandboxLine string
	// Progress configures the default mode's stderr view.
	Progress ProgressOptions
}

// Run performs one task in a new or adopted session and returns the exit
// code: 0 exactly when the turn ended completed, else 1.
func Run(ctx context.Context, rt *core.Runtime, o Options) int {
	out := &stdoutWatch{w: o.Stdout}
	if f, ok := o.Stdout.(*os.File); ok {
		defer watchReaderGone(f, out.readerGone)()
	}
	o.Stdout = out
	var proj *Projector
	if o.JSON {
		proj = NewProjector(o.Stdout)
	}
	fail := func(msg string) int { return failed(proj, o.Stderr, msg) }
	cwd, err := workDir(o.Cwd)
	if err != nil {
		return fail(err.Error())
	}
	if msg := providerProblem(rt, o); msg != "" {
		return fail(msg)
	}

	var prog *Progress
	deltas := make(chan model.Delta)
	// quit ends the delta forwarding and the spinner once the turn's
	// events are shown; every return path closes it once.
	quit := make(chan struct{})
	var quitOnce sync.Once
	stopShowing := func() { quitOnce.Do(func() { close(quit) }) }
	defer stopShowing()
	opts := core.SessionOptions{Cwd: cwd, Origin: "run"}
	if proj == nil {
		prog = NewProgress(o.Stderr, o.Progress)
		// Deltas go through the projection loop below, so a reasoning
		// block is never printed ahead of the tool result committed before it.
		opts.OnDelta = func(d model.Delta) {
			if d.Kind == model.DeltaKeepAlive {
				return
			}
			select {
			case deltas <- d:
			case <-quit:
			}
		}
	}

	sess, err := openSession(ctx, rt, o, cwd, opts)
	if err != nil {
		// A usage error found only now (images for a model that cannot
		// see them) exits 2, like the parser's.
		code := fail(err.Error())
		var ue *UsageError
		if errors.As(err, &ue) {
			code = 2
		}
		return code
	}
	defer closeSession(sess)
	if proj == nil && o.SandboxLine != "" {
		fmt.Fprintln(o.Stderr, o.SandboxLine)
	}

	if proj != nil {
		if err := proj.Session(sess.ID(), cwd); err != nil {
			if isClosedStdout(err) {
				return ExitStdoutClosed
			}
			return 1
		}
	}

	sub := rt.Subscribe()
	defer sub.Close()
	startSeq := sess.NextSeq()
	task, turn, reply, done, err := slashCommand(ctx, sess, o.Task)
	switch {
	case err != nil:
		return fail(err.Error())
	case done:
		if proj != nil {
			_ = proj.Final(reply)
		} else if reply != "" {
			fmt.Fprintln(o.Stdout, reply)
		}
		return 0
	}
	awaitMCP(ctx, sess, o.Stderr)
	content, err := promptContent(sess, task, o.Images)
	if err != nil {
		return fail(err.Error())
	}
	t, err := sess.PromptWith(ctx, content, core.PromptOptions{Command: turn})
	if err != nil {
		return fail(err.Error())
	}

	// Cancel the turn when ctx ends (a signal) or the reader of stdout
	// goes away: the turn ends aborted. CancelAll, not Cancel: the prompt
	// may still be queued, not yet a running turn.
	stop := context.AfterFunc(ctx, func() { sess.CancelAll(nil) })
	defer stop()
	out.OnClose(func() { sess.CancelAll(nil) })
	if prog != nil && prog.tty {
		defer spin(prog, quit)()
	}
	projectTurn(sub, sess.ID(), startSeq, t, proj, prog, deltas, o.Logger)
	stopShowing() // before the deferred Close, so no late delta can wait on the loop
	return finishRun(o, out, proj, prog, sess.ID(), t.Result())
}

// failed reports msg (a JSON error line, or each of its lines on stderr)
// and returns the exit status 1.
func failed(proj *Projector, stderr io.Writer, msg string) int {
	if proj != nil {
		_ = proj.Error(msg)
	} else {
		for _, line := range strings.Split(msg, "\n") {
			fmt.Fprintf(stderr, "dsh: %s\n", line)
		}
	}
	return 1
}

// workDir is the task's workspace: cwd, or the process's working
// directory, with symlinks resolved.
func workDir(cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", errors.New("cannot read the working directory: " + err.Error())
		}
		cwd = wd
	}
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = r
	}
	return cwd, nil
}

// providerProblem says why the default provider cannot be used ("" when it
// can), with the offline hint for a missing credential.
func providerProblem(rt *core.Runtime, o Options) string {
	_, err := rt.Provider(rt.Defaults().Provider)
	if err == nil {
		return ""
	}
	msg := err.Error()
	var me *model.Error
	if errors.As(err, &me) && me.Class == model.ClassMissingCredential && o.OfflineHint != "" {
		msg += "\n" + o.OfflineHint
	}
	return msg
}

// spin ticks the progress spinner until quit is closed; the returned func
// stops its ticker.
func spin(prog *Progress, quit <-chan struct{}) func() {
	tick := time.NewTicker(SpinnerInterval)
	go func() {
		for {
			select {
			case <-tick.C:
				prog.Tick()
			case <-quit:
				return
			}
		}
	}()
	return tick.Stop
}

// finishRun shows the turn's result (the final JSON line, or the answer on
// stdout and how the turn ended on stderr) and returns the exit status.
func finishRun(o Options, out *stdoutWatch, proj *Projector, prog *Progress, id string, res core.TurnResult) int {
	if proj != nil {
		_ = proj.Final(res.Text)
	} else if !out.Closed() {
		prog.Finish(res.Reason)
		if res.Text != "" {
			fmt.Fprintln(o.Stdout, res.Text)
		}
		if res.Reason.Kind == event.ReasonError && res.Reason.Error != nil {
			fmt.Fprintf(o.Stderr, "dsh: %s: %s\n", res.Reason.Error.Code, res.Reason.Error.Message)
		} else if res.Reason.Kind != event.ReasonCompleted {
			fmt.Fprintf(o.Stderr, "dsh: turn ended %s%s\n", res.Reason.Kind, detail(res.Reason))
		}
		if !o.Progress.Quiet {
			fmt.Fprintf(o.Stderr, "dsh: session %s (continue it with: dsh run -c, or --session-id %s)\n", id, id)
		}
	}
	switch {
	case out.Closed():
		return ExitStdoutClosed
	case res.Reason.Kind == event.ReasonCompleted:
		return 0
	}
	return 1
}

// slashCommand runs a task that is one of the session's slash commands
// (core's registry: the built-ins and the project's and user's command
// files). A command that expands to a prompt returns it as the task, with
// what it asks of its turn; one that answers itself returns its reply and
// done. Text that is no command goes to the model unchanged.
func slashCommand(ctx context.Context, sess *core.Session, task string) (string, *event.CommandTurn, string, bool, error) {
	name, args, ok := core.ParseCommand(task)
	if !ok {
		return task, nil, "", false, nil
	}
	res, err := sess.RunCommand(ctx, name, args)
	switch {
	case errors.Is(err, core.ErrUnknownCommand):
		return task, nil, "", false, nil
	case err != nil:
		return "", nil, "", false, err
	case res.Prompt != "":
		return res.Prompt, res.Turn, "", false, nil
	}
	return "", nil, res.Reply, true, nil
}

// projectTurn shows the committed events of session id from startSeq until the
// turn's end — the turn/end notice whose seq the ticket reports — on the
// --json projector or the progress view, with the live deltas in order.
func projectTurn(sub *core.Subscription, id string, startSeq int64, t *core.Ticket, proj *Projector, prog *Progress,
	deltas <-chan model.Delta, logger *slog.Logger) {
	children := map[string]string{} // in-process subagents of this turn → their call
	show := func(n core.Notice) (end bool) {
		if call, ok := children[n.SessionID]; ok && n.Kind == core.NoticeEvent && proj == nil {
			prog.ChildEvent(call, n.Event)
			return false
		}
		if n.Kind != core.NoticeEvent || n.SessionID != id || n.Event.Seq < startSeq {
			return false
		}
		if n.Event.Type == event.TypeSubagentStart {
			if d, err := event.Decode[event.SubagentStart](n.Event); err == nil && d.ChildSessionID != "" {
				children[d.ChildSessionID] = d.CallID
			}
		}
		if proj != nil {
			if err := proj.Event(n.Event); err != nil && !isClosedStdout(err) {
				logger.Warn("event not projected", "type", n.Event.Type, "err", err)
			}
		} else {
			prog.Event(n.Event)
		}
		if n.Event.Type == event.TypeTurnEnd {
			<-t.Done()
			return n.Event.Seq >= t.Result().Seq
		}
		return false
	}
	done := t.Done()
	for {
		select {
		case n := <-sub.C():
			if show(n) {
				return
			}
		case d := <-deltas:
			// Every event committed before this delta was produced is
			// already queued: show those first.
			for drained := false; !drained; {
				select {
				case n := <-sub.C():
					if show(n) {
						return
					}
				default:
					drained = true
				}
			}
			if d.Kind == model.DeltaReasoning {
				prog.Reasoning(d.Text)
			} else {
				prog.Pause()
			}
		case <-done:
			done = nil
			if t.Result().Seq < 0 {
				return // the turn recorded no end
			}
		}
	}
}

// openSession adopts the session the options name (an id, a unique prefix
// of one, or the latest of cwd), or creates a new one. With images, the
// model must take them: a new session's is checked before it is created,
// an adopted one's (its recorded model) before anything is appended.
func openSession(ctx context.Context, rt *core.Runtime, o Options, cwd string, opts core.SessionOptions) (*core.Session, error) {
	if !o.Adopt && !o.Continue {
		if len(o.Images) > 0 {
			if err := checkTakesImages(rt, rt.Defaults(), ""); err != nil {
				return nil, err
			}
		}
		return rt.Create(ctx, opts)
	}
	id, err := adoptID(rt.Store(), o, cwd)
	if err != nil {
		return nil, err
	}
	sess, err := rt.Resume(ctx, id, opts)
	if errors.Is(err, store.ErrLeased) {
		return nil, fmt.Errorf("session %q is open for writing in another process; wait for it to finish", id)
	}
	if err != nil {
		return nil, err
	}
	if err := adopted(rt, sess, o); err != nil {
		closeSession(sess)
		return nil, err
	}
	return sess, nil
}

// adopted readies an adopted session for this run: the configuration the
// command line asks for (recorded only when it differs), after checking
// that the model it ends with takes the images, so a refusal appends
// nothing.
func adopted(rt *core.Runtime, sess *core.Session, o Options) error {
	cur := sess.Config()
	next := cur
	if o.Reconfigure != nil {
		next = o.Reconfigure(cur)
	}
	if len(o.Images) > 0 {
		if err := checkTakesImages(rt, next, sess.ID()); err != nil {
			return err
		}
	}
	if next != cur {
		if err := sess.SetConfig(next); err != nil {
			return fmt.Errorf("session %q cannot take the configuration given: %w", sess.ID(), err)
		}
	}
	return nil
}

// adoptID resolves --session-id (exact or a unique prefix) or --continue to
// a session id that this run may adopt.
func adoptID(st *store.Store, o Options, cwd string) (string, error) {
	if o.Continue {
		in, err := st.Latest(cwd)
		if errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("no session to continue in %s; start one with: dsh run \"TASK\"", cwd)
		}
		if err != nil {
			return "", err
		}
		return in.Header.ID, checkAdoptable(st, in.Header.ID, cwd)
	}
	id, err := st.Resolve(o.SessionID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if err != nil {
		id = o.SessionID // checkAdoptable says it does not exist
	}
	return id, checkAdoptable(st, id, cwd)
}

// closeSession closes sess, waiting at most 10 s for it to settle.
func closeSession(sess *core.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = sess.Close(ctx)
}

// checkTakesImages refuses images for a model that does not declare image
// input, as the SDK and ACP doors do; sessionID names an adopted session
// whose recorded model it is.
func checkTakesImages(rt *core.Runtime, cfg event.Config, sessionID string) error {
	prov, err := rt.Provider(cfg.Provider)
	if err != nil {
		return err
	}
	if prov.Caps(cfg.Model).Images {
		return nil
	}
	if sessionID != "" {
		return usageErrorf("model %q of session %s does not take image input; drop --%s, or start a new session with a model that does", cfg.Model, sessionID, FlagImage)
	}
	return usageErrorf("model %q does not take image input; choose one that does with --model, or drop --%s", cfg.Model, FlagImage)
}

// promptContent is the task's user message: the text, then the images,
// stored beside the log as the doors store prompt images.
func promptContent(sess *core.Session, task string, images []Image) ([]event.ContentBlock, error) {
	content := []event.ContentBlock{event.Text(task)}
	for _, im := range images {
		att, err := sess.SaveAttachment(im.MediaType, im.Data)
		if err != nil {
			return nil, fmt.Errorf("saving image %s: %w", im.Path, err)
		}
		content = append(content, event.ContentBlock{Type: event.BlockImage, Attachment: att})
	}
	return content, nil
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
	case h.Delegated():
		return fmt.Errorf("session %q is a subagent's or forked session; it cannot be adopted", id)
	}
	// A live writer is refused by Resume itself (the lease), with the
	// same message; probing the lease here too would take it twice.
	return nil
}
