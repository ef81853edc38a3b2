package pdf

import "testing"

func chars(s string, size float64) []pchar {
	var cs []pchar
	for _, r := range s {
		cs = append(cs, pchar{r: r, size: size})
	}
	return cs
}

func TestMakeLineMarksSuperscriptNotes(t *testing.T) {
	cs := append(chars("stemmen tegen.", 12), chars("12", 7)...)
	cs = append(cs, chars(" In 2026 en", 12)...)
	l, ok := makeLine(cs, 100)
	if !ok || l.text != "stemmen tegen.[12] In 2026 en" || l.size != 12 || l.smallDigits {
		t.Fatalf("line %+v", l)
	}
	// Digits at body size, or small digits after a space, are not note markers.
	l, _ = makeLine(append(chars("artikel ", 12), chars("108", 7)...), 100)
	if l.text != "artikel 108" {
		t.Errorf("text %q", l.text)
	}
	if _, ok := makeLine(chars("   ", 12), 0); ok {
		t.Error("blank line kept")
	}
}

func TestNoteLinesJoinFootnoteNumber(t *testing.T) {
	body := func(s string) line { l, _ := makeLine(chars(s, 12), 0); return l }
	num, _ := makeLine(chars("1", 7), 0)
	got := noteLines([]line{body("Tekst van de pagina die lang genoeg is."), num, body("Het raadslid was afwezig.")})
	if len(got) != 2 || got[1].text != "[1] Het raadslid was afwezig." {
		t.Fatalf("lines %+v", got)
	}
}

func TestDropPageNumber(t *testing.T) {
	ls := func(texts ...string) []line {
		var out []line
		for _, s := range texts {
			out = append(out, line{text: s})
		}
		return out
	}
	cases := []struct {
		in   []line
		page int
		want int
	}{
		{ls("- 3 -", "tekst", "Pagina 3 van 9"), 3, 1},
		{ls("tekst", "3"), 3, 1},
		{ls("tekst", "4"), 3, 2},     // another number: content
		{ls("2026", "tekst"), 3, 2},  // a year at the top
		{ls("tekst", "3 / 9"), 3, 1}, // "n / total"
	}
	for i, c := range cases {
		if got := dropPageNumber(c.in, c.page); len(got) != c.want {
			t.Errorf("case %d: %d lines left, want %d", i, len(got), c.want)
		}
	}
}

func TestContinues(t *testing.T) {
	a := line{size: 12, base: 700}
	if !continues(a, line{size: 12, base: 686}) {
		t.Error("next line at 1.17x size does not continue the paragraph")
	}
	if continues(a, line{size: 12, base: 677}) {
		t.Error("a 23 pt step (paragraph spacing) continues the paragraph")
	}
	if continues(a, line{size: 14, base: 686}) || continues(a, line{size: 12, bold: true, base: 686}) {
		t.Error("a style change continues the paragraph")
	}
	if continues(a, line{size: 12, base: 760}) {
		t.Error("a jump up the page (next column) continues the paragraph")
	}
}
