package headless

import (
	"bytes"
	"errors"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Minimal images of each accepted type. WebP has no encoder in the
// standard library: a RIFF/WEBP header is what identifies one.
func testImages(t *testing.T) map[string][]byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, 4, 3))
	var p, j, g bytes.Buffer
	if err := png.Encode(&p, m); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&j, m, nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&g, m, nil); err != nil {
		t.Fatal(err)
	}
	webp := append([]byte("RIFF\x1a\x00\x00\x00WEBPVP8L"), make([]byte, 14)...)
	return map[string][]byte{"image/png": p.Bytes(), "image/jpeg": j.Bytes(), "image/gif": g.Bytes(), "image/webp": webp}
}

func TestLoadImagesTypes(t *testing.T) {
	imgs := testImages(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, mime string
	}{
		{"a.png", "image/png"},
		{"b.JPG", "image/jpeg"},
		{"c.jpeg", "image/jpeg"},
		{"d.gif", "image/gif"},
		{"e.webp", "image/webp"},
		// No image extension: the bytes say what it is.
		{"screenshot", "image/png"},
		{"photo.bin", "image/jpeg"},
		{"anim.dat", "image/gif"},
		{"pic.tmp", "image/webp"},
	}
	var paths []string
	for _, c := range cases {
		paths = append(paths, write(c.name, imgs[c.mime]))
	}
	got, err := LoadImages(paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("%d images, want %d", len(got), len(cases))
	}
	for i, c := range cases {
		if got[i].Path != paths[i] || got[i].MediaType != c.mime || !bytes.Equal(got[i].Data, imgs[c.mime]) {
			t.Errorf("%s: got %s %s (%d bytes), want %s", c.name, got[i].Path, got[i].MediaType, len(got[i].Data), c.mime)
		}
	}
	if got, err := LoadImages(nil); err != nil || got != nil {
		t.Errorf("no images: %v %v", got, err)
	}
}

func TestLoadImagesRefusals(t *testing.T) {
	imgs := testImages(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.png", imgs["image/png"])
	big := filepath.Join(dir, "big.png")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(imgs["image/png"]); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxImageBytes + 1); err != nil { // sparse: no 20 MiB written
		t.Fatal(err)
	}
	f.Close()
	cases := []struct {
		name string
		path string
		want string
	}{
		{"missing", filepath.Join(dir, "nope.png"), "no such file"},
		{"directory", dir, "not a regular file (a directory)"},
		{"unknown type", write("notes.txt", []byte("just some text\n")), "not a PNG, JPEG, GIF or WebP image"},
		{"unknown binary", write("blob", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8}), "not a PNG, JPEG, GIF or WebP image"},
		// The extension names the type; bytes of another kind are refused,
		// as the ACP door refuses data that is not its declared type.
		{"text named png", write("fake.png", []byte("not really a picture\n")), "named as image/png but its bytes are text/plain"},
		{"png named jpg", write("wrong.jpg", imgs["image/png"]), "named as image/jpeg but its bytes are image/png"},
		{"empty", write("empty.gif", nil), "is empty"},
		{"too large", big, "over the 20 MiB limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The good image first: the whole batch is refused.
			got, err := LoadImages([]string{good, c.path})
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, %v; want a usage error", len(got), err)
			}
			if got != nil {
				t.Errorf("returned %d images with the error", len(got))
			}
			if !strings.Contains(ue.Msg, c.want) || !strings.Contains(ue.Msg, c.path) || !strings.HasPrefix(ue.Msg, "--image ") {
				t.Errorf("message %q, want --image, the path %q and %q", ue.Msg, c.path, c.want)
			}
		})
	}
}
