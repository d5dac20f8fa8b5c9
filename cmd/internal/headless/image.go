package headless

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Image is one --image file, read and checked before any session is
// created or resumed, so a bad one leaves nothing recorded.
type Image struct {
	Path      string
	MediaType string
	Data      []byte
}

// MaxImageBytes bounds one --image file: the limit the read tool and MCP
// results put on an image file (20 MiB). The SDK and ACP doors are bounded
// by their frame caps instead; a file has no frame, so it gets the tools'.
const MaxImageBytes = 20 << 20

// imageExts are the extensions that name an image type. A file without one
// of them is typed by its leading bytes.
var imageExts = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp",
}

// LoadImages reads and checks the --image files in order. The whole batch
// is checked: the first bad file fails it with a *UsageError naming the
// file, and no image is returned.
func LoadImages(paths []string) ([]Image, error) {
	var out []Image
	for _, p := range paths {
		im, err := loadImage(p)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, nil
}

// loadImage reads one image file. Its type is named by its extension when
// it has an image one (bytes of another type are refused, as the ACP door
// refuses data that is not its declared type), else by its magic bytes.
func loadImage(path string) (Image, error) {
	refuse := func(err error, format string, a ...any) (Image, error) {
		return Image{}, &UsageError{Msg: "--image " + path + ": " + fmt.Sprintf(format, a...), Err: err}
	}
	// Stat before opening: opening a named pipe would wait for a writer.
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return refuse(err, "no such file")
	}
	if err != nil {
		return refuse(err, "cannot read it: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return refuse(nil, "not a regular file (%s)", fileKind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return refuse(err, "cannot open it: %v", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return refuse(err, "cannot read it: %v", err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return refuse(nil, "not a regular file (%s)", fileKind(fi.Mode()))
	case fi.Size() == 0:
		return refuse(nil, "the file is empty")
	case fi.Size() > MaxImageBytes:
		return refuse(nil, "%.1f MiB, over the %d MiB limit of an image", float64(fi.Size())/(1<<20), MaxImageBytes>>20)
	}
	// The limit again while reading: the file may have grown since Stat.
	data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return refuse(err, "cannot read it: %v", err)
	}
	if len(data) > MaxImageBytes {
		return refuse(nil, "over the %d MiB limit of an image", MaxImageBytes>>20)
	}
	sniffed := http.DetectContentType(data)
	mime, named := imageExts[strings.ToLower(filepath.Ext(path))]
	switch {
	case named && sniffed != mime:
		return refuse(nil, "named as %s but its bytes are %s", mime, sniffed)
	case !named && !isImageType(sniffed):
		return refuse(nil, "not a PNG, JPEG, GIF or WebP image (its bytes are %s)", sniffed)
	}
	return Image{Path: path, MediaType: sniffed, Data: data}, nil
}

func isImageType(mime string) bool {
	for _, m := range imageExts {
		if m == mime {
			return true
		}
	}
	return false
}

// fileKind names what a non-regular file is, for the refusal.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
