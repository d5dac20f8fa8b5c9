package e2e

// End-to-end tests of `dsh run --image` (spec dsh-protocols.md §6): the
// images ride in the task's user message after its text, stored beside
// the log like the doors' prompt images; a bad batch or a model without
// image input is refused before anything is recorded.

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model/modeltest"
	"github.com/dsh-dev/dsh/core/store"
)

// encodeImage returns a small PNG or JPEG.
func encodeImage(t *testing.T, kind string, w, h int) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	var err error
	if kind == "png" {
		err = png.Encode(&b, m)
	} else {
		err = jpeg.Encode(&b, m, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// contentPart is one part of a user message's content array.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// lastUserParts are the content parts of the last user message of req.
func lastUserParts(t *testing.T, req *modeltest.Request) []contentPart {
	t.Helper()
	msgs := req.Body.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var parts []contentPart
		if err := json.Unmarshal(msgs[i].Content, &parts); err != nil {
			t.Fatalf("last user message content is not an array of parts: %s", shortHead(string(msgs[i].Content), 300))
		}
		return parts
	}
	t.Fatal("no user message")
	return nil
}

// wantImageParts checks parts: the text, then one image_url part per
// image, in order, each the data URL of those exact bytes.
func wantImageParts(t *testing.T, parts []contentPart, text string, mimes []string, data [][]byte) {
	t.Helper()
	if len(parts) != 1+len(data) || parts[0].Type != "text" || parts[0].Text != text {
		t.Fatalf("parts %+v, want the text %q then %d images", parts, text, len(data))
	}
	for i, d := range data {
		p := parts[i+1]
		want := "data:" + mimes[i] + ";base64," + base64.StdEncoding.EncodeToString(d)
		if p.Type != "image_url" || p.ImageURL.URL != want {
			t.Errorf("part %d = %s %q, want image_url %q", i+1, p.Type, shortHead(p.ImageURL.URL, 60), shortHead(want, 60))
		}
	}
}

// userImages returns the image blocks of the last user/message in the
// session's log, checking each is stored beside the log under its hash.
func userImages(t *testing.T, w *world, id string) []event.ContentBlock {
	t.Helper()
	st := store.New(w.Root)
	_, log, err := st.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := st.Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	var imgs []event.ContentBlock
	for _, ev := range log {
		if ev.Type != event.TypeUserMessage {
			continue
		}
		m, err := event.Decode[event.Message](ev)
		if err != nil {
			t.Fatal(err)
		}
		imgs = nil
		for _, b := range m.Content {
			if b.Type == event.BlockImage {
				imgs = append(imgs, b)
			}
		}
	}
	for _, b := range imgs {
		a := b.Attachment
		if a == nil || !strings.HasPrefix(a.AttachmentID, "sha256:") {
			t.Fatalf("image block without an attachment: %+v", b)
		}
		data, err := os.ReadFile(filepath.Join(dir, "attachments", "sha256-"+strings.TrimPrefix(a.AttachmentID, "sha256:")))
		if err != nil {
			t.Fatalf("attachment %s not stored beside the log: %v", a.AttachmentID, err)
		}
		sum := sha256.Sum256(data)
		if "sha256:"+hex.EncodeToString(sum[:]) != a.AttachmentID || a.Bytes != int64(len(data)) {
			t.Errorf("attachment %s holds %d bytes hashing elsewhere", a.AttachmentID, len(data))
		}
	}
	return imgs
}

// TestHeadlessImage: --image files reach the model after the task text in
// the one user message, and the log records them as attachments (no
// base64 in the log).
func TestHeadlessImage(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	shot, photo := encodeImage(t, "png", 8, 6), encodeImage(t, "jpeg", 5, 4)
	writeFile(t, filepath.Join(w.Cwd, "shot.png"), string(shot))
	// No image extension: typed by its bytes.
	writeFile(t, filepath.Join(w.Cwd, "photo"), string(photo))

	srv.Enqueue(modeltest.TextReply("a black square and a black photo"))
	evs, r := runJSON(t, w, nil, "run", "--json", "--image", "shot.png", "what are these?", "--image="+filepath.Join(w.Cwd, "photo"))
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)
	if evs[len(evs)-1].Str("text") != "a black square and a black photo" {
		t.Errorf("final = %s", evs[len(evs)-1].Raw)
	}
	wantImageParts(t, lastUserParts(t, srv.Last()), "what are these?", []string{"image/png", "image/jpeg"}, [][]byte{shot, photo})

	imgs := userImages(t, w, id)
	if len(imgs) != 2 || imgs[0].Attachment.MediaType != "image/png" || imgs[1].Attachment.MediaType != "image/jpeg" ||
		imgs[0].Attachment.Width != 8 || imgs[0].Attachment.Height != 6 {
		t.Fatalf("logged image blocks %+v", imgs)
	}
	_, log, err := store.New(w.Root).Read(id)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(shot)
	for _, ev := range log {
		if strings.Contains(string(ev.Data), b64[:40]) {
			t.Errorf("the log's %s event carries the image's base64", ev.Type)
		}
	}

	// Default mode and stdin as the task take images too.
	srv.Enqueue(modeltest.TextReply("same square"))
	r = w.run(strings.NewReader("and now?\n"), "run", "-q", "--image", "shot.png")
	wantExit(t, r, 0)
	if r.Stdout != "same square\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
	wantImageParts(t, lastUserParts(t, srv.Last()), "and now?\n", []string{"image/png"}, [][]byte{shot})
}

// TestHeadlessImageResume: an adopted session (--session-id or -c) takes
// images in its next task, and earlier turns keep theirs.
func TestHeadlessImageResume(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	shot, photo := encodeImage(t, "png", 3, 3), encodeImage(t, "jpeg", 2, 2)
	writeFile(t, filepath.Join(w.Cwd, "a.png"), string(shot))
	writeFile(t, filepath.Join(w.Cwd, "b.jpg"), string(photo))

	srv.Enqueue(modeltest.TextReply("ready"))
	evs, r := runJSON(t, w, nil, "run", "--json", "get ready")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)

	srv.Enqueue(modeltest.TextReply("a PNG"))
	evs, r = runJSON(t, w, nil, "run", "--json", "--session-id", id, "--image", "a.png", "look")
	wantExit(t, r, 0)
	if checkRunStream(t, w, evs) != id {
		t.Fatal("--session-id did not adopt the session")
	}
	wantImageParts(t, lastUserParts(t, srv.Last()), "look", []string{"image/png"}, [][]byte{shot})

	srv.Enqueue(modeltest.TextReply("a JPEG"))
	r = w.run(nil, "run", "-c", "--image", "b.jpg", "and this")
	wantExit(t, r, 0)
	if !strings.Contains(r.Stderr, id) {
		t.Errorf("-c did not continue %s: %q", id, r.Stderr)
	}
	req := srv.Last()
	wantImageParts(t, lastUserParts(t, req), "and this", []string{"image/jpeg"}, [][]byte{photo})
	n := 0
	for _, m := range req.Body.Messages {
		n += m.Images()
	}
	if n != 2 {
		t.Errorf("the third wake's request carries %d images, want the earlier one too (2)", n)
	}
	if imgs := userImages(t, w, id); len(imgs) != 1 || imgs[0].Attachment.MediaType != "image/jpeg" {
		t.Errorf("last user message's images %+v", imgs)
	}
}

// TestHeadlessImageRefusals: each bad --image, and a model that does not
// take images, is a usage error (exit 2) before any session is created:
// nothing is recorded and the model is never asked.
func TestHeadlessImageRefusals(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t) // nothing enqueued: no case may reach the model
	w := newWorld(t, srv.Env()...)
	good := encodeImage(t, "png", 2, 2)
	writeFile(t, filepath.Join(w.Cwd, "good.png"), string(good))
	writeFile(t, filepath.Join(w.Cwd, "notes.txt"), "plain words\n")
	writeFile(t, filepath.Join(w.Cwd, "fake.png"), "plain words, png by name\n")
	if err := os.Mkdir(filepath.Join(w.Cwd, "shots"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no such file", []string{"--image", "good.png", "--image", "gone.png"}, "--image gone.png: no such file"},
		{"a directory", []string{"--image", "shots"}, "--image shots: not a regular file (a directory)"},
		{"unknown type", []string{"--image", "notes.txt", "--image", "good.png"}, "--image notes.txt: not a PNG, JPEG, GIF or WebP image"},
		{"text named png", []string{"--image", "fake.png"}, "--image fake.png: named as image/png but its bytes are text/plain"},
		{"missing value", []string{"--image"}, "option '--image' argument missing"},
		{"text-only model", []string{"--model", "deepseek-v4-pro", "--image", "good.png"}, `model "deepseek-v4-pro" does not take image input`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The task first, so a trailing --image has no value.
			r := w.run(nil, append([]string{"run", "describe it"}, c.args...)...)
			wantExit(t, r, 2)
			if r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "dsh: "+c.want) {
				t.Errorf("stdout %q stderr %q, want one line `dsh: %s…`", r.Stdout, r.Stderr, c.want)
			}
			evs, r := runJSON(t, w, nil, append([]string{"run", "describe it", "--json"}, c.args...)...)
			wantExit(t, r, 2)
			if len(evs) != 1 || evs[0].Type() != "error" || !strings.HasPrefix(evs[0].Str("message"), c.want) || r.Stderr != "" {
				t.Errorf("--json stdout %q stderr %q, want one error event %q", r.Stdout, r.Stderr, c.want)
			}
			if _, err := os.Stat(w.Root); !errors.Is(err, os.ErrNotExist) {
				ents, _ := os.ReadDir(w.Root)
				t.Errorf("the session root exists after a refusal (%d entries)", len(ents))
			}
		})
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d model requests were made by refusals", n)
	}
}

// TestHeadlessImageResumeTextOnlyModel: a stored session whose model does
// not take images is refused with --image when adopted, and its log is
// left as it was.
func TestHeadlessImageResumeTextOnlyModel(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	writeFile(t, filepath.Join(w.Cwd, "a.png"), string(encodeImage(t, "png", 2, 2)))
	srv.Enqueue(modeltest.TextReply("ok"))
	evs, r := runJSON(t, w, nil, "run", "--json", "--model", "deepseek-v4-pro", "hello")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)
	st := store.New(w.Root)
	_, before, err := st.Read(id)
	if err != nil {
		t.Fatal(err)
	}

	r = w.run(nil, "run", "--session-id", id, "--image", "a.png", "look")
	wantExit(t, r, 2)
	if want := `dsh: model "deepseek-v4-pro" of session ` + id + ` does not take image input`; !strings.HasPrefix(r.Stderr, want) || r.Stdout != "" {
		t.Errorf("stdout %q stderr %q, want %q…", r.Stdout, r.Stderr, want)
	}
	_, after, err := st.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the refused wake recorded %d events", len(after)-len(before))
	}
	dir, _ := st.Dir(id)
	if _, err := os.Stat(filepath.Join(dir, "attachments")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused wake stored an attachment: %v", err)
	}
	if n := srv.Count(); n != 1 {
		t.Errorf("%d model requests, want only the first wake's", n)
	}
}
