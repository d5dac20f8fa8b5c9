package core

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

// TestClosedQueueIsNotRerun: prompts still queued when a session closes are
// dropped and recorded as canceled, so a resume does not run them later.
func TestClosedQueueIsNotRerun(t *testing.T) {
	started := make(chan struct{})
	block := func(ctx context.Context, _ *model.Request) (*model.Response, error) {
		close(started)
		<-ctx.Done()
		return nil, &model.Error{Class: model.ClassAborted, Message: "cancelled"}
	}
	h := newHarness(t, block, text("third"))
	s := h.session()
	id := s.ID()
	if _, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("first")}); err != nil {
		t.Fatal(err)
	}
	<-started
	queued, err := s.Prompt(context.Background(), []event.ContentBlock{event.Text("second")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-queued.Done()
	r, err := h.rt.Resume(context.Background(), id, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, r, "third"); res.Text != "third" {
		t.Fatalf("result %+v", res)
	}
	for _, req := range h.prov.requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "second") {
				t.Fatalf("the dropped prompt reached the model after the resume: %+v", req.Messages)
			}
		}
	}
}
