package core

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model"
)

// TestToolImageReachesModel: an image read returns goes to the model in a
// user message after the tool results (tool messages carry text only),
// and a model without image input gets a note instead.
func TestToolImageReachesModel(t *testing.T) {
	for _, images := range []bool{true, false} {
		h := newHarness(t,
			calls(model.ToolCall{ID: "r", Name: "read", Arguments: `{"file_path":"pic.png"}`},
				model.ToolCall{ID: "l", Name: "glob", Arguments: `{"pattern":"*.png"}`}),
			text("seen"), text("again"))
		h.prov.caps.Images = images
		var b bytes.Buffer
		if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 3))); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.cwd, "pic.png"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		s := h.session()
		run(t, s, "look at pic.png")
		reqs := h.prov.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		msgs := reqs[1].Messages
		last := msgs[len(msgs)-1]
		if !images {
			// The model could not see it: read said so, nothing attached.
			for _, m := range msgs {
				if len(m.Images) > 0 {
					t.Fatal("image sent to a model without image input")
				}
			}
			continue
		}
		if last.Role != "user" || last.Content != toolImagesIntro || len(last.Images) != 1 || last.Images[0].MediaType != "image/png" || !bytes.Equal(last.Images[0].Data, b.Bytes()) {
			t.Fatalf("last message = %+v", last)
		}
		if msgs[len(msgs)-2].Role != "tool" || msgs[len(msgs)-3].Role != "tool" || !strings.Contains(msgs[len(msgs)-3].Content, "attached for you to view") {
			t.Fatalf("tool results do not precede the image: %+v", msgs[len(msgs)-3:])
		}
		// A resumed session folds the same request from the log.
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		s2, err := h.rt.Resume(context.Background(), s.ID(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		run(t, s2, "again")
		re := h.prov.requests()[2].Messages
		if got := re[len(msgs)-1]; got.Role != "user" || len(got.Images) != 1 {
			t.Fatalf("after resume: %+v", got)
		}
		// With the model switched to one without images, a note stands in.
		s2.commitMu.Lock()
		m := s2.conv.build(s2, "sys", false)[len(msgs)-1]
		s2.commitMu.Unlock()
		if len(m.Images) != 0 || !strings.Contains(m.Content, "cannot view images") {
			t.Fatalf("no-image build: %+v", m)
		}
	}
}
