package tool

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math/rand"
	"os"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

func imageEnv(t *testing.T) (*testEnv, *[]byte) {
	te := newTestEnv(t)
	var saved []byte
	te.ModelImages = true
	te.SaveAttachment = func(mt string, data []byte) (*event.Attachment, error) {
		saved = data
		return &event.Attachment{AttachmentID: "sha256:abc", MediaType: mt, Bytes: int64(len(data))}, nil
	}
	return te, &saved
}

func TestReadScalesLargeImage(t *testing.T) {
	te, saved := imageEnv(t)
	te.file(t, "big.png", string(pngBytes(t, 1400, 1000)))
	r := call(t, tRead, te.Env, obj{"file_path": "big.png"})
	out := mustOK(t, r)
	a := r.Content[1].Attachment
	if a.Width*a.Height > imageMaxPixels || a.Width < 1000 || a.Width >= 1400 || len(*saved) > imageMaxBytes {
		t.Fatalf("scaled to %dx%d, %d bytes", a.Width, a.Height, len(*saved))
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(*saved))
	if err != nil || cfg.Width != a.Width || cfg.Height != a.Height {
		t.Fatalf("saved bytes are not the %dx%d image: %v %+v", a.Width, a.Height, err, cfg)
	}
	contains(t, out, "scaled down from 1400x1000")
}

// TestFitImageRecompressesHeavyImage: an image within the pixel limit
// but over the byte limit is made smaller until it fits; a translucent one
// stays a PNG. (Small limits keep the test fast.)
func TestFitImageRecompressesHeavyImage(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 200, 150))
	rng := rand.New(rand.NewSource(1))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Intn(256))
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	const maxBytes = 30_000
	if b.Len() <= maxBytes {
		t.Fatalf("test image is only %d bytes", b.Len())
	}
	mt, data, w, h, note, err := fitImageTo("image/png", b.Bytes(), 200*150, maxBytes)
	if err != nil || mt != "image/png" || len(data) > maxBytes || w >= 200 || note == "" {
		t.Fatalf("%s %d bytes %dx%d %q %v", mt, len(data), w, h, note, err)
	}
}

// pngHeader is the start of a PNG whose header claims w x h pixels.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	_ = binary.Write(&b, binary.BigEndian, uint32(13))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestReadImageBadInput(t *testing.T) {
	te, _ := imageEnv(t)
	// 40 MB: refused from its size, before reading.
	p := te.file(t, "huge.png", "")
	if err := os.Truncate(p, 40<<20); err != nil {
		t.Fatal(err)
	}
	mustErr(t, call(t, tRead, te.Env, obj{"file_path": "huge.png"}), "huge.png is an image too large to attach (41943040 bytes")
	// A header claiming 20000x20000 pixels: not decoded.
	te.file(t, "claims.png", string(pngHeader(20000, 20000)))
	mustErr(t, call(t, tRead, te.Env, obj{"file_path": "claims.png"}), "too large to scale safely")
	// A model without images gets a clear note.
	te.ModelImages = false
	te.file(t, "small.png", string(pngBytes(t, 4, 4)))
	mustErr(t, call(t, tRead, te.Env, obj{"file_path": "small.png"}), "small.png is an image (image/png, 4x4", "cannot view images, so it is not shown")
	_ = color.RGBA{}
}
