package tool

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"
	"golang.org/x/sync/semaphore"
)

// Limits of images sent to the model. A larger image is scaled down to
// imageMaxPixels (about 1.2 megapixels, enough to read a screenshot's text;
// the original scales to about 640k) and re-encoded; one that cannot be
// decoded safely is refused with a note.
const (
	// imageMaxPixels is the most pixels an image reaches the model with.
	imageMaxPixels = 1280 * 960
	// imageMaxBytes is the most encoded bytes an image reaches the model
	// with (about 5 MB once base64-encoded into the request).
	imageMaxBytes = 3_750_000
	// imageMaxDecodePixels bounds the images dsh decodes to scale: past it
	// the decoded bitmap alone would take hundreds of MiB.
	imageMaxDecodePixels = 50_000_000
	// imageMaxDecodeBytes bounds the decoded bitmap of one image (pixels
	// count less than bytes: a 16-bit RGBA pixel is 8 bytes), and all the
	// images being decoded at once in this process (decodeBudget): past
	// it, decodes wait for each other, so four 49-megapixel images read
	// in one step are decoded one at a time, not together.
	imageMaxDecodeBytes = 256 << 20
)

// decodeBudget is the process's budget of decoded image bytes. It is
// process-wide on purpose: the memory it guards is.
var decodeBudget = semaphore.NewWeighted(imageMaxDecodeBytes)

// decodedBytes estimates the bitmap image.Decode makes of data, from its
// header: width × height × the bytes per pixel of its color model.
func decodedBytes(data []byte) int64 {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0
	}
	bpp := int64(4)
	switch cfg.ColorModel {
	case color.RGBA64Model, color.NRGBA64Model:
		bpp = 8
	case color.Gray16Model:
		bpp = 2
	case color.GrayModel, color.AlphaModel:
		bpp = 1
	case color.YCbCrModel:
		bpp = 3
	}
	if _, ok := cfg.ColorModel.(color.Palette); ok {
		bpp = 1
	}
	return int64(cfg.Width) * int64(cfg.Height) * bpp
}

// FitImage returns data as it may be sent to the model: unchanged when it
// is within the limits, else scaled down and re-encoded (PNG for images
// with transparency, JPEG otherwise). note says what was done, for the
// result text. read uses it; other image sources (MCP tools) may too.
func FitImage(mediaType string, data []byte) (string, []byte, int, int, string, error) {
	return fitImageTo(mediaType, data, imageMaxPixels, imageMaxBytes)
}

// fitImageTo is FitImage with its limits as arguments.
func fitImageTo(mediaType string, data []byte, imageMaxPixels, imageMaxBytes int) (string, []byte, int, int, string, error) {
	w, h := imageSize(mediaType, data)
	if w*h <= imageMaxPixels && len(data) <= imageMaxBytes && w > 0 {
		return mediaType, data, w, h, "", nil
	}
	if mediaType == "image/webp" {
		return "", nil, w, h, "", fmt.Errorf("a %dx%d WebP image of %d bytes is over the limits (%d pixels, %d bytes) and WebP images cannot be scaled here; convert it (for example to PNG, smaller) with bash first", w, h, len(data), imageMaxPixels, imageMaxBytes)
	}
	if w*h > imageMaxDecodePixels || w == 0 {
		return "", nil, w, h, "", fmt.Errorf("the image is %dx%d pixels, too large to scale safely (limit %d pixels); make a smaller copy with bash first", w, h, imageMaxDecodePixels)
	}
	need := decodedBytes(data) + int64(imageMaxPixels)*4 // the bitmap and the scaled copy
	if need > imageMaxDecodeBytes {
		return "", nil, w, h, "", fmt.Errorf("the image is %dx%d pixels and would take %d MiB to decode (limit %d MiB); make a smaller copy with bash first", w, h, need>>20, imageMaxDecodeBytes>>20)
	}
	// Wait for the decoded bytes of the images being scaled now; this
	// decode holds its share until it is done.
	_ = decodeBudget.Acquire(context.Background(), need)
	defer decodeBudget.Release(need)
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return "", nil, w, h, "", fmt.Errorf("the image cannot be decoded: %v", err)
	}
	scale := 1.0
	for float64(w)*scale*float64(h)*scale > float64(imageMaxPixels) {
		scale *= 0.9
	}
	for {
		nw, nh := max(1, int(float64(w)*scale)), max(1, int(float64(h)*scale))
		dst := image.NewRGBA(image.Rect(0, 0, nw, nh))
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
		var buf bytes.Buffer
		mt := "image/jpeg"
		if opaque(dst) {
			err = jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85})
		} else {
			mt = "image/png"
			err = png.Encode(&buf, dst)
		}
		if err != nil {
			return "", nil, w, h, "", fmt.Errorf("the image cannot be re-encoded: %v", err)
		}
		if buf.Len() <= imageMaxBytes || nw*nh < 64*64 {
			return mt, buf.Bytes(), nw, nh, fmt.Sprintf("scaled down from %dx%d, %d bytes", w, h, len(data)), nil
		}
		scale *= 0.7
	}
}

func opaque(m *image.RGBA) bool {
	for i := 3; i < len(m.Pix); i += 4 {
		if m.Pix[i] != 0xff {
			return false
		}
	}
	return true
}
