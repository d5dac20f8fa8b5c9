package mcp

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/tool"
)

// hugePNG is a PNG header that claims width x height pixels (no pixel
// data: the checks must refuse it from its header alone).
func hugePNG(width, height uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = 16, 6 // 16-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// TestMCPImagesGetReadsChecks: an MCP image result passes the checks a
// read image does: a 100000x100000 PNG (and a 7000x7000 16-bit one, whose
// decoded bitmap would take 392 MB) is a note, never an attachment.
func TestMCPImagesGetReadsChecks(t *testing.T) {
	saved := 0
	env := &tool.Env{ModelImages: true, SaveAttachment: func(mime string, data []byte) (*event.Attachment, error) {
		saved++
		return &event.Attachment{}, nil
	}}
	for _, size := range [][2]uint32{{100000, 100000}, {7000, 7000}} {
		blocks := imageBlocks("image/png", hugePNG(size[0], size[1]), env, 1, &Tool{})
		if len(blocks) != 1 || !strings.Contains(blocks[0].Text, "not shown") || saved != 0 {
			t.Fatalf("%dx%d: %+v, %d saved", size[0], size[1], blocks, saved)
		}
	}
}
