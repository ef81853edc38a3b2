package chunkers

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// words returns n numbered words separated by single spaces: "w0 w1 ...".
func words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(ws, " ")
}

// TestMinSizeFixedLastWindowFull: a Fixed document's last window under minSize starts
// earlier so that it holds size units and ends at the end of the text; without minSize
// the 3-word tail stands alone.
func TestMinSizeFixedLastWindowFull(t *testing.T) {
	text := words(23)
	for _, sz := range []Sizer{WordSizer{}, RuneSizer{}} {
		size := 10
		if _, ok := sz.(RuneSizer); ok {
			size = 40
		}
		base, err := NewFixed(sz, size, 0)
		if err != nil {
			t.Fatal(err)
		}
		c, err := WithMinSize(base, size/2)
		if err != nil {
			t.Fatal(err)
		}
		plain, got := run(t, base, text), run(t, c, text)
		if last := plain[len(plain)-1]; last.TokenCount >= size/2 {
			t.Fatalf("%T: the plain cut has no short tail to merge: %+v", sz, plain)
		}
		checkChunks(t, text, got, checkOpts{max: size, sizer: sz, ordered: true})
		last := got[len(got)-1]
		if len(got) != len(plain) || last.End != len(text) || last.TokenCount < size-1 || last.Start >= plain[len(plain)-1].Start {
			t.Fatalf("%T: last window %+v %q, want about %d units ending at %d (plain cut %+v)", sz, last, last.Text(text), size, len(text), plain)
		}
		if !reflect.DeepEqual(got[:len(got)-1], plain[:len(plain)-1]) {
			t.Fatalf("%T: windows before the last changed: %+v vs %+v", sz, got, plain)
		}
	}
}
