package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/store"
)

// configChanges decodes the config/change events of evs.
func configChanges(t *testing.T, evs []event.Event) []event.ConfigChange {
	t.Helper()
	var out []event.ConfigChange
	for _, ev := range evs {
		if ev.Type != event.TypeConfigChange {
			continue
		}
		d, err := event.Decode[event.ConfigChange](ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// TestConcurrentSetConfigAndSetModeLoseNothing runs SetConfig and SetMode
// concurrently, as ACP's set_config_option and set_mode may be, many
// times. After each pair the session holds both changes, and in the log
// each config/change differs from the one before it only in what its own
// call changed: a change carrying a stale copy of the other field (a lost
// update) would change both. A resumed session ends in the same state.
func TestConcurrentSetConfigAndSetModeLoseNothing(t *testing.T) {
	h := newHarness(t)
	s := h.session()
	modes := []permission.Mode{permission.ModeAsk, permission.ModeAuto}
	const pairs = 300
	for i := range pairs {
		cfg := event.Config{Provider: "test", Model: fmt.Sprint("m", i)}
		mode := modes[i%2]
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; errs <- s.SetConfig(cfg) }()
		go func() { defer wg.Done(); <-start; errs <- s.SetMode(mode) }()
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := s.Config(); got != cfg {
			t.Fatalf("pair %d: config %+v, want %+v", i, got, cfg)
		}
		if got := s.Mode(); got != mode {
			t.Fatalf("pair %d: mode %q, want %q (the mode change was lost)", i, got, mode)
		}
	}
	id := s.ID()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	_, logged, err := store.New(h.root).Read(id)
	if err != nil {
		t.Fatal(err)
	}
	changes := configChanges(t, logged)
	if len(changes) != 2*pairs {
		t.Fatalf("%d config/change events, want %d", len(changes), 2*pairs)
	}
	for i := 1; i < len(changes); i++ {
		prev, cur := changes[i-1], changes[i]
		if prev.Config != cur.Config && prev.PermissionMode != cur.PermissionMode {
			t.Fatalf("config/change %d changes both the config (%s → %s) and the mode (%s → %s): one call overwrote the other's change",
				i, prev.Config.Model, cur.Config.Model, prev.PermissionMode, cur.PermissionMode)
		}
	}
	last := changes[len(changes)-1]
	wantModel, wantMode := fmt.Sprint("m", pairs-1), string(modes[(pairs-1)%2])
	if last.Config.Model != wantModel || last.PermissionMode != wantMode {
		t.Fatalf("the log ends with model %q mode %q, want %q %q", last.Config.Model, last.PermissionMode, wantModel, wantMode)
	}

	r, err := h.rt.Resume(context.Background(), id, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Config().Model != wantModel || string(r.Mode()) != wantMode {
		t.Fatalf("resumed with model %q mode %q, want %q %q", r.Config().Model, r.Mode(), wantModel, wantMode)
	}
}

// TestSecondCloseWaitsForTheFirst: a Close that finds another Close under
// way returns only once that one has flushed the log and released the
// lease, with its result; a caller whose ctx ends first gets ctx's error,
// never a nil that claims the session is closed.
func TestSecondCloseWaitsForTheFirst(t *testing.T) {
	entered := make(chan struct{})
	cancelled := make(chan struct{})
	release := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, _ *model.Request) (*model.Response, error) {
		close(entered)
		<-ctx.Done() // cancelled by the first Close, after it marked the session closed
		close(cancelled)
		<-release // the turn settles only when the test says so
		return nil, ctx.Err()
	})
	s := h.session()
	if _, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("go")}); err != nil {
		t.Fatal(err)
	}

	<-entered
	first := make(chan error, 1)
	go func() { first <- s.Close(context.Background()) }()
	<-cancelled

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second Close with a done ctx returned %v while the first was still closing, want context.Canceled", err)
	}

	second := make(chan error, 1)
	go func() { second <- s.Close(context.Background()) }()
	close(release)
	err2 := <-second
	if leased, err := h.rt.cfg.Store.Leased(s.ID()); err != nil || leased {
		t.Fatalf("the second Close returned (%v) while the lease was still held (leased %v, %v)", err2, leased, err)
	}
	if err1 := <-first; err1 != err2 {
		t.Fatalf("first Close %v, second %v: want the same result", err1, err2)
	}
}

// busySession is a session whose first prompt's turn holds its model call
// until release is closed; the inbox is empty when it returns.
func busySession(t *testing.T) (s *Session, first *Ticket, release chan struct{}) {
	t.Helper()
	entered, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, func(ctx context.Context, r *model.Request) (*model.Response, error) {
		close(entered)
		<-release
		return text("first")(ctx, r)
	}, text("the rest"))
	s = h.session()
	first, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("first")})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	return s, first, release
}

// TestPromptQueueIsBoundedInBytes: the waiting prompts' text is bounded
// too; a prompt that would pass it is refused (nothing committed), while
// one bigger than the bound alone still queues into an empty inbox.
func TestPromptQueueIsBoundedInBytes(t *testing.T) {
	s, first, release := busySession(t)
	big := strings.Repeat("x", MaxQueuedPromptBytes/2+1)
	alone, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text(big + big)})
	if err != nil {
		t.Fatalf("a prompt over the bound into an empty inbox: %v", err)
	}
	before := len(s.Events())
	if _, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("small, but the inbox is full")}); !errors.Is(err, ErrQueueFull) ||
		!strings.Contains(err.Error(), "bytes") {
		t.Fatalf("prompt past the byte bound: %v, want ErrQueueFull naming bytes", err)
	}
	if n := len(s.Events()); n != before {
		t.Fatalf("the refused prompt committed %d events", n-before)
	}
	close(release)
	<-first.Done()
	<-alone.Done()
	if _, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text(big)}); err != nil {
		t.Fatalf("after the queue drained: %v", err)
	}
}

// TestPromptQueueIsBounded: while a turn runs, prompts queue up to
// MaxQueuedPrompts; the next is refused with ErrQueueFull (nothing
// committed for it), and every queued prompt is answered once the turn
// ends.
func TestPromptQueueIsBounded(t *testing.T) {
	s, first, release := busySession(t) // the first prompt's turn has claimed it: the inbox is empty
	var queued []*Ticket
	for i := range MaxQueuedPrompts {
		tk, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text(fmt.Sprint("queued ", i))})
		if err != nil {
			t.Fatalf("prompt %d of %d: %v", i+1, MaxQueuedPrompts, err)
		}
		queued = append(queued, tk)
	}
	before := len(s.Events())
	if _, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("one too many")}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("prompt past the bound: %v, want ErrQueueFull", err)
	}
	if n := len(s.Events()); n != before {
		t.Fatalf("the refused prompt committed %d events", n-before)
	}
	close(release)
	<-first.Done()
	for _, tk := range queued {
		<-tk.Done()
		if tk.Result().Reason.Kind != event.ReasonCompleted {
			t.Fatalf("a queued prompt ended %+v", tk.Result().Reason)
		}
	}
}
