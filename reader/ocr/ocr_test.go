package ocr

import (
	"image"
	"image/color"
	"math"
	"strings"
	"testing"
)

// A TSV page as Tesseract 5.3 writes it: the heading shares a paragraph with the text
// below it in one block, and stands alone in another; rows of levels 1-4 and a blank word
// are not words.
const tsvPage = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" +
	"1\t1\t0\t0\t0\t0\t0\t0\t1654\t2338\t-1\t\n" +
	"2\t1\t1\t0\t0\t0\t181\t187\t996\t95\t-1\t\n" +
	"5\t1\t1\t1\t1\t1\t181\t187\t200\t38\t96.5\tMotivering\n" +
	"5\t1\t1\t1\t2\t1\t181\t240\t400\t38\t90\tHet\n" +
	"5\t1\t1\t1\t2\t2\t600\t240\t900\t38\t80\tStationsplein\n" +
	"5\t1\t1\t1\t3\t1\t181\t290\t700\t38\t-1\t \n" +
	"5\t1\t1\t1\t3\t2\t181\t290\t1300\t38\t70\tis druk.\n" +
	"5\t1\t2\t1\t1\t1\t181\t400\t300\t38\t60\tBeslispunt\n" +
	"5\t1\t2\t1\t1\t2\t500\t400\t40\t38\t50\t1\n"

func TestParseTSVAndBlocks(t *testing.T) {
	words, err := ParseTSV([]byte(tsvPage))
	if err != nil {
		t.Fatal(err)
	}
	if len(words) != 6 {
		t.Fatalf("%d words, want 6 (levels 1-4 and the blank word left out): %+v", len(words), words)
	}
	if w := words[2]; w.Text != "Stationsplein" || w.Left != 600 || w.Confidence != 80 || w.Line != 2 {
		t.Errorf("word 2 = %+v", w)
	}
	got := strings.Join(Blocks(words), "|")
	want := "Motivering|Het Stationsplein is druk.|Beslispunt 1"
	if got != want {
		t.Errorf("blocks %q, want %q", got, want)
	}
	if _, err := ParseTSV([]byte("no header\n")); err == nil {
		t.Error("output without header accepted")
	}
	if _, err := ParseTSV([]byte("level\tx\n5\t1\t1\n")); err == nil {
		t.Error("short row accepted")
	}
}

// A first line that ends a sentence, or is as wide as the rest, stays in its paragraph.
func TestBlocksKeepsFullFirstLines(t *testing.T) {
	w := func(line, left, width int, text string) Word {
		return Word{Page: 1, Block: 1, Paragraph: 1, Line: line, Left: left, Width: width, Text: text}
	}
	for _, c := range []struct {
		words []Word
		want  string
	}{
		{[]Word{w(1, 0, 200, "Zie hieronder."), w(2, 0, 1000, "De tekst")}, "Zie hieronder. De tekst"},
		{[]Word{w(1, 0, 900, "Een lange eerste regel"), w(2, 0, 1000, "en meer")}, "Een lange eerste regel en meer"},
		// A heading inside a paragraph, after a line that ends a sentence.
		{[]Word{w(1, 0, 1000, "Dit besluit treedt in werking."), w(2, 0, 300, "Stemverhouding"), w(3, 0, 1000, "Aangenomen met 23 stemmen")},
			"Dit besluit treedt in werking.|Stemverhouding|Aangenomen met 23 stemmen"},
		// A heading as the last line of the paragraph before it.
		{[]Word{w(1, 0, 1000, "Dit besluit treedt in werking."), w(2, 0, 300, "Stemverhouding")},
			"Dit besluit treedt in werking.|Stemverhouding"},
		// A speck read as a quote before a heading goes; a quotation keeps its marks.
		{[]Word{w(1, 0, 300, "„Artikel"), w(1, 310, 20, "1"), w(2, 0, 1000, "Dit besluit treedt in werking.")},
			"Artikel 1|Dit besluit treedt in werking."},
		{[]Word{w(1, 0, 1000, "„Wij"), w(1, 0, 1000, "besluiten”,"), w(1, 0, 1000, "zei hij.")},
			"„Wij besluiten”, zei hij."},
		// A short line in mid-sentence is no heading.
		{[]Word{w(1, 0, 1000, "De raad van de gemeente"), w(2, 0, 300, "Zuidervaart"), w(3, 0, 1000, "besluit")},
			"De raad van de gemeente Zuidervaart besluit"},
	} {
		if got := strings.Join(Blocks(c.words), "|"); got != c.want {
			t.Errorf("blocks %q, want %q", got, c.want)
		}
	}
}

func TestCharErrorRate(t *testing.T) {
	for _, c := range []struct {
		ref, hyp string
		want     float64
	}{
		{"abcd", "abcd", 0},
		{"ab  cd", "ab\ncd", 0}, // white space runs are one space
		{"abcd", "abxd", 0.25},  // one substitution
		{"abcd", "abd", 0.25},   // one deletion
		{"abcd", "abcde", 0.25}, // one insertion
		{"Artikel", "Artlkel", 1. / 7},
		{"", "", 0},
		{"", "x", 1},
	} {
		if got := CharErrorRate(c.ref, c.hyp); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("CER(%q, %q) = %v, want %v", c.ref, c.hyp, got, c.want)
		}
	}
}

// Clean removes isolated speckles and binarises between the two grey levels of a page.
func TestClean(t *testing.T) {
	img := image.NewGray(image.Rect(0, 0, 20, 20))
	for i := range img.Pix {
		img.Pix[i] = 230 // paper
	}
	for y := 5; y < 15; y++ { // a stroke 3 pixels wide
		for x := 8; x < 11; x++ {
			img.SetGray(x, y, color.Gray{Y: 40})
		}
	}
	img.SetGray(2, 2, color.Gray{Y: 0})     // a speckle
	img.SetGray(17, 17, color.Gray{Y: 255}) // a white speckle
	if th := OtsuThreshold(img); th < 40 || th >= 230 {
		t.Errorf("Otsu threshold %d, want between the levels 40 and 230", th)
	}
	out := Clean(img)
	if out.GrayAt(2, 2).Y != 255 {
		t.Error("speckle at (2,2) kept")
	}
	if out.GrayAt(9, 10).Y != 0 || out.GrayAt(0, 0).Y != 255 {
		t.Errorf("stroke %d, paper %d: want 0 and 255", out.GrayAt(9, 10).Y, out.GrayAt(0, 0).Y)
	}
	for _, v := range out.Pix {
		if v != 0 && v != 255 {
			t.Fatalf("grey level %d after binarisation", v)
		}
	}
}

func TestNewChecksOptions(t *testing.T) {
	if _, err := New(Options{Mode: Never}); err == nil {
		t.Error("mode Never gave an engine")
	}
	if _, err := New(Options{Mode: "Sometimes"}); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := New(Options{Mode: Auto, Languages: []string{"NL"}, Binary: "/bin/true"}); err == nil || !strings.Contains(err.Error(), "NL") {
		t.Errorf("language NL: err %v, want it named", err)
	}
	if _, err := New(Options{Mode: Auto, Binary: "/nonexistent/tesseract"}); err == nil {
		t.Error("missing binary accepted")
	}
}

func TestPGM(t *testing.T) {
	img := image.NewGray(image.Rect(0, 0, 3, 2))
	copy(img.Pix, []byte{1, 2, 3, 4, 5, 6})
	sub := img.SubImage(image.Rect(1, 0, 3, 2)).(*image.Gray)
	if got := string(PGM(sub)); got != "P5\n2 2\n255\n\x02\x03\x05\x06" {
		t.Errorf("PGM %q", got)
	}
}
