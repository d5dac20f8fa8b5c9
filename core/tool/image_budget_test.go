package tool

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
)

// png16Header is a 16-bit RGBA PNG header claiming width x height.
func png16Header(width, height uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = 16, 6
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// TestImageBudgetCountsDecodedBytes: a 49-megapixel 16-bit PNG is under
// the pixel limit but its bitmap would take 392 MB: refused from its
// header, before any decode (four of them in one step took dsh to 1.5 GiB).
func TestImageBudgetCountsDecodedBytes(t *testing.T) {
	_, _, _, _, _, err := FitImage("image/png", png16Header(7000, 7000))
	if err == nil || !strings.Contains(err.Error(), "MiB to decode") {
		t.Fatalf("got %v", err)
	}
	if n := decodedBytes(png16Header(7000, 7000)); n != 7000*7000*8 {
		t.Fatalf("decoded bytes %d", n)
	}
}
