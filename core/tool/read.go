package tool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // DecodeConfig for attachment sizes
	_ "image/jpeg" // DecodeConfig for attachment sizes
	_ "image/png"  // DecodeConfig for attachment sizes
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// Limits of read.
const (
	readDefaultLimit = 2000                // lines per call by default
	readMaxLineChars = 2000                // longer lines are cut
	readMaxBytes     = OutputBudget - 1024 // lines shown per call; past it read stops on a line boundary and says where
	readMaxFileSize  = 32 << 20            // larger files are refused before reading (grep, or bash sed -n, print parts)
	readMaxImage     = 20 << 20
	binarySniffBytes = 8000 // like git: a NUL in the first 8000 bytes means binary
)

const readSchema = `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file to read, absolute or relative to the working directory."},"offset":{"type":"integer","minimum":1,"description":"1-based line number to start from. Default 1."},"limit":{"type":"integer","minimum":1,"description":"Maximum number of lines to return. Default 2000."}},"required":["file_path"],"additionalProperties":false}`

const readDescription = `Read a text file. Returns its lines numbered from 1 (line number, a tab, then the line), at most 2000 lines per call; use offset and limit to page through longer files. Lines longer than 2000 characters are cut. Binary files are refused. PNG, JPEG, GIF and WebP images are shown to you as images when your model can view them (scaled down past 1280x960 pixels or 3.75 MB; files over 20 MB are refused); otherwise read says it cannot show them. Read a file before editing or overwriting it.`

type readTool struct{}

type readArgs struct {
	FilePath string `json:"file_path"`
	Offset   *int   `json:"offset"`
	Limit    *int   `json:"limit"`
}

func (readTool) Name() string            { return "read" }
func (readTool) Description() string     { return readDescription }
func (readTool) Schema() json.RawMessage { return json.RawMessage(readSchema) }
func (readTool) Kind() Kind              { return KindRead }
func (readTool) ParallelSafe() bool      { return true }

func (readTool) parse(args json.RawMessage, env *Env) (readArgs, string, error) {
	var a readArgs
	if err := decodeArgs("read", args, &a); err != nil {
		return a, "", err
	}
	if err := required("read", "file_path", a.FilePath); err != nil {
		return a, "", err
	}
	if a.Offset != nil && *a.Offset < 0 {
		return a, "", fmt.Errorf("invalid arguments for read: offset must be a line number from 1, got %d", *a.Offset)
	}
	if a.Limit != nil && *a.Limit < 1 {
		return a, "", fmt.Errorf("invalid arguments for read: limit must be at least 1, got %d", *a.Limit)
	}
	p, err := resolveIn(env, a.FilePath)
	if err != nil {
		return a, "", fmt.Errorf("read: %w", err)
	}
	return a, p, nil
}

func (t readTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	_, p, err := t.parse(args, env)
	if err != nil {
		return Access{}, err
	}
	ws, _ := workspaceOf(env)
	return Access{Paths: []string{p}, Title: "Read " + display(ws, p), SessionOwned: env.Spill.Owns(p)}, nil
}

func (t readTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	a, p, err := t.parse(args, env)
	if err != nil {
		return ErrorResult(err.Error())
	}
	ws, _ := workspaceOf(env)
	shown := display(ws, p)
	meta := &event.ToolMeta{Kind: "read", Paths: []string{p}}
	var modTime time.Time
	if fi, err := os.Stat(p); err == nil {
		if fi.IsDir() {
			return withMeta(ErrorResult(fmt.Sprintf("%s is a directory, not a file; use glob to list its files", shown)), meta)
		}
		if imageExt(p) && fi.Size() > readMaxImage {
			return withMeta(ErrorResult(fmt.Sprintf("%s is an image too large to attach (%d bytes, limit %d); make a smaller copy with bash first", shown, fi.Size(), readMaxImage)), meta)
		}
		if fi.Size() > readMaxFileSize {
			return withMeta(ErrorResult(fmt.Sprintf("%s is too large to read (%d bytes, limit %d); use grep to find the part you need, or bash (sed -n 'START,ENDp') to print a range", shown, fi.Size(), readMaxFileSize)), meta)
		}
		modTime = fi.ModTime()
	}
	files := filesOf(env)
	if env.Spill.Owns(p) {
		files = LocalFS() // the session's own file, never an editor buffer
	}
	data, err := files.ReadFile(ctx, p)
	if err != nil {
		return withMeta(ErrorResult(fileError("read", shown, err)), meta)
	}
	if mt := imageType(data); mt != "" {
		return withMeta(readImage(env, shown, mt, data), meta)
	}
	if isBinary(data) {
		return withMeta(ErrorResult(fmt.Sprintf("%s is a binary file (%d bytes); read shows text files only. Use bash (for example `file` or `xxd | head`) to inspect it", shown, len(data))), meta)
	}
	if env.Reads != nil {
		env.Reads.Record(p, data, modTime)
	}
	offset := 1
	if a.Offset != nil && *a.Offset > 0 {
		offset = *a.Offset
	}
	limit := readDefaultLimit
	if a.Limit != nil {
		limit = *a.Limit
	}
	return withMeta(numberLines(shown, data, offset, limit), meta)
}

// numberLines renders lines [offset, offset+limit) cat -n style.
func numberLines(shown string, data []byte, offset, limit int) Result {
	if len(data) == 0 {
		return TextResult(fmt.Sprintf("(%s is empty)", shown))
	}
	lines := splitLines(string(data))
	total := len(lines)
	if offset > total {
		return ErrorResult(fmt.Sprintf("offset %d is past the end of %s, which has %d lines", offset, shown, total))
	}
	var b strings.Builder
	cut := 0
	last := offset - 1
	stoppedForSize := false
	for i := offset - 1; i < total && i < offset-1+limit; i++ {
		line := strings.TrimSuffix(lines[i], "\n")
		line, wasCut := cutLine(line, readMaxLineChars)
		numbered := fmt.Sprintf("%6d\t%s\n", i+1, line)
		if b.Len()+len(numbered) > readMaxBytes {
			// Whole lines only: the footer below names exactly the
			// lines shown.
			stoppedForSize = true
			break
		}
		if wasCut {
			cut++
		}
		b.WriteString(numbered)
		last = i + 1
	}
	var notes []string
	if cut > 0 {
		notes = append(notes, fmt.Sprintf("%d line(s) longer than %d characters were cut", cut, readMaxLineChars))
	}
	if last < total {
		why := ""
		if stoppedForSize {
			why = fmt.Sprintf(" (the output budget of %d KB is full)", OutputBudget>>10)
		}
		notes = append(notes, fmt.Sprintf("showing lines %d-%d of %d%s; use offset=%d to read on", offset, last, total, why, last+1))
	}
	if len(notes) > 0 {
		b.WriteString("\n(" + strings.Join(notes, "; ") + ")\n")
	}
	return TextResult(b.String())
}

func readImage(env *Env, shown, mediaType string, data []byte) Result {
	if !env.ModelImages || env.SaveAttachment == nil {
		w, h := imageSize(mediaType, data)
		return ErrorResult(fmt.Sprintf("%s is an image (%s, %dx%d, %d bytes), but the model of this session cannot view images, so it is not shown", shown, mediaType, w, h, len(data)))
	}
	if len(data) > readMaxImage {
		return ErrorResult(fmt.Sprintf("%s is an image too large to attach (%d bytes, limit %d)", shown, len(data), readMaxImage))
	}
	mt, fitted, w, h, note, err := FitImage(mediaType, data)
	if err != nil {
		return ErrorResult(fmt.Sprintf("%s cannot be shown: %v", shown, err))
	}
	att, err := env.SaveAttachment(mt, fitted)
	if err != nil {
		return ErrorResult(fmt.Sprintf("could not attach image %s: %v", shown, err))
	}
	if att == nil {
		sum := sha256.Sum256(fitted)
		att = &event.Attachment{AttachmentID: "sha256:" + hex.EncodeToString(sum[:]), MediaType: mt, Bytes: int64(len(fitted))}
	}
	if att.Width == 0 || att.Height == 0 {
		att.Width, att.Height = w, h
	}
	if att.Name == "" {
		att.Name = shown
	}
	if note != "" {
		note = "; " + note
	}
	return Result{Content: []event.ContentBlock{
		event.Text(fmt.Sprintf("Image %s (%s, %dx%d, %d bytes%s), attached for you to view:", shown, mt, att.Width, att.Height, len(fitted), note)),
		{Type: event.BlockImage, Attachment: att},
	}}
}

// imageExt reports whether a file name says it is an image read can show.
func imageExt(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return true
	}
	return false
}

// imageType returns the media type of a PNG, JPEG, GIF or WebP image, by
// content (extensions lie), or "".
func imageType(data []byte) string {
	switch mt := http.DetectContentType(data); mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return mt
	}
	return ""
}

func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0
}

// imageSize returns the pixel size of an image, 0x0 when unknown.
func imageSize(mediaType string, data []byte) (int, int) {
	if mediaType == "image/webp" {
		return webpSize(data)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}

// webpSize reads the canvas size from a WebP header (VP8, VP8L or VP8X);
// the standard library has no WebP decoder.
func webpSize(b []byte) (int, int) {
	if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0
	}
	le24 := func(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }
	switch string(b[12:16]) {
	case "VP8X":
		return 1 + le24(b[24:27]), 1 + le24(b[27:30])
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0
		}
		bits := uint32(b[21]) | uint32(b[22])<<8 | uint32(b[23])<<16 | uint32(b[24])<<24
		return int(bits&0x3fff) + 1, int((bits>>14)&0x3fff) + 1
	case "VP8 ":
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0
		}
		return int(uint16(b[26])|uint16(b[27])<<8) & 0x3fff, int(uint16(b[28])|uint16(b[29])<<8) & 0x3fff
	}
	return 0, 0
}

func filesOf(env *Env) FileSystem {
	if env != nil && env.Files != nil {
		return env.Files
	}
	return LocalFS()
}

// fileError words a FileSystem error for the model.
func fileError(verb, shown string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist; check the path (glob can find files by name)", shown)
	case errors.Is(err, errIsDir):
		return fmt.Sprintf("%s is a directory, not a file; use glob to list its files", shown)
	case errors.Is(err, errNotRegular):
		return fmt.Sprintf("%s is not a regular file (a device, pipe or socket); it cannot be read or edited", shown)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("cannot %s %s: permission denied", verb, shown)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s of %s was cancelled", verb, shown)
	}
	return fmt.Sprintf("cannot %s %s: %v", verb, shown, err)
}

func withMeta(r Result, m *event.ToolMeta) Result {
	r.Meta = m
	return r
}
