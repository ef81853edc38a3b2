package imagedoc

import (
	"encoding/binary"
	"testing"
)

// tiffPages follows the IFD chain: 1 for a single page, 3 for three, 0 for other bytes.
func TestTIFFPages(t *testing.T) {
	tiff := func(pages int) []byte {
		b := []byte("II*\x00\x08\x00\x00\x00")
		for i := range pages {
			ifd := make([]byte, 2+12+4) // one entry
			binary.LittleEndian.PutUint16(ifd, 1)
			if i < pages-1 {
				binary.LittleEndian.PutUint32(ifd[14:], uint32(len(b)+len(ifd)))
			}
			b = append(b, ifd...)
		}
		return b
	}
	for _, c := range []struct {
		data []byte
		want int
	}{{tiff(1), 1}, {tiff(3), 3}, {[]byte("\x89PNG\r\n\x1a\n"), 0}, {tiff(2)[:20], 0}} {
		if got := tiffPages(c.data); got != c.want {
			t.Errorf("tiffPages = %d, want %d", got, c.want)
		}
	}
}
