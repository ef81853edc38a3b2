package chunkers

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragops/ragops/reader/markup"
)

// pathOf returns the heading path of the chunk holding s, joined by " > ".
func pathOf(t *testing.T, text string, chunks []Chunk, s string) string {
	t.Helper()
	for _, c := range chunks {
		if strings.Contains(text[c.Start:c.End], s) {
			return strings.Join(c.HeadingPath, " > ")
		}
	}
	t.Fatalf("no chunk holds %q", s)
	return ""
}

func outlineTitles(h *HeadingChunker, text string) []string {
	var out []string
	for _, o := range h.Outline(text) {
		out = append(out, fmt.Sprintf("%d %s", o.Level, o.Title))
	}
	return out
}

// TestHeadingFenceClosesWithListItem is the third input: a fence opened inside a
// list item ends with the item (CommonMark), so the heading after it is found.
func TestHeadingFenceClosesWithListItem(t *testing.T) {
	text := "# Top\n\n- item\n  ```\n  code\n\n# Real heading\n\nbody text\n"
	h, _ := NewHeading(RuneSizer{}, 1000, 0, HeadingOptions{Markdown: true})
	if got, want := outlineTitles(h, text), []string{"1 Top", "1 Real heading"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("outline %q, want %q", got, want)
	}
	chunks := run(t, h, text)
	checkChunks(t, text, chunks, checkOpts{max: 1000, sizer: RuneSizer{}, ordered: true})
	if p := pathOf(t, text, chunks, "body text"); p != "Real heading" {
		t.Errorf("body text under %q, want Real heading", p)
	}
	// Inside the item the fence still hides "# comment" lines, and a fence on the item's
	// own line counts too; a top-level fence is not closed by less indented lines.
	text = "# Top\n\n- item\n  ```sh\n  # not a heading\n  ```\n- ```\n  # nor this\n  ```\n\npara\n\n  ```\n# nor at top\n```\n\n## Sub\n"
	if got, want := outlineTitles(h, text), []string{"1 Top", "2 Sub"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("outline %q, want %q", got, want)
	}
	// A fence in a block quote hides its lines and ends with the quote.
	text = "# Top\n\n> ```\n> # quoted code\n\n# After quote\n\n> ```\n> # still code\n> ```\n> text\n"
	if got, want := outlineTitles(h, text), []string{"1 Top", "1 After quote"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("outline %q, want %q", got, want)
	}
}

// TestHeadingTableHeaderWithinSize is the fourth input: at max 128 runes, a header
// prefix of 91 runes and rows of 68 each fit alone but not together; no chunk may go over
// the size or be flagged Oversize.
func TestHeadingTableHeaderWithinSize(t *testing.T) {
	head := "| Fractie | Stemmen voor | Stemmen tegen | Onthouden |"
	sep := "|" + strings.Repeat("-", 91-len(head)-2-4) + "|-|"
	prefix := head + "\n" + sep + "\n"
	var b strings.Builder
	b.WriteString("# Stemverhouding\n\n" + prefix)
	for i := 0; i < 6; i++ {
		row := fmt.Sprintf("| Fractie nummer %d | 4 | 0 | 1 |", i)
		row += strings.Repeat(" ", 67-utf8.RuneCountInString(row)) + "|"
		if utf8.RuneCountInString(row) != 68 {
			t.Fatalf("row %q has %d runes", row, utf8.RuneCountInString(row))
		}
		b.WriteString(row + "\n")
	}
	text := b.String()
	if utf8.RuneCountInString(prefix) != 91 {
		t.Fatalf("prefix has %d runes, want 91", utf8.RuneCountInString(prefix))
	}
	h, _ := NewHeading(RuneSizer{}, 128, 0, HeadingOptions{Markdown: true})
	chunks := run(t, h, text)
	checkChunks(t, text, chunks, checkOpts{max: 128, sizer: RuneSizer{}, ordered: true})
	rows := 0
	for _, c := range chunks {
		if c.Oversize || c.TokenCount > 128 || c.TokenCount != utf8.RuneCountInString(c.Text(text)) {
			t.Errorf("chunk %d %q: %d runes with prefix %q, oversize %v", c.Ordinal, text[c.Start:c.End], c.TokenCount, c.Prefix, c.Oversize)
		}
		rows += strings.Count(text[c.Start:c.End], "| Fractie nummer")
	}
	if rows != 6 {
		t.Errorf("%d rows in chunks, want 6", rows)
	}
	// With room for the header, a continued row still carries it.
	h, _ = NewHeading(RuneSizer{}, 160, 0, HeadingOptions{Markdown: true})
	withHeader := 0
	for _, c := range run(t, h, text) {
		if c.Prefix == prefix {
			withHeader++
		}
		if c.Oversize || c.TokenCount > 160 {
			t.Errorf("size 160: chunk %d over the size", c.Ordinal)
		}
	}
	if withHeader == 0 {
		t.Error("size 160: no continued row carries the header")
	}
}

// dutchLaw is plain text in the layout of a consolidated Dutch act (no Markdown).
const dutchLaw = `Wet op de gemeentelijke archieven

Boek 1. Algemene bepalingen

Titel 1 Begrippen

Afdeling 1.1 Reikwijdte

Artikel 1
In deze wet wordt verstaan onder archiefbescheiden: stukken die door een bestuursorgaan zijn ontvangen.
Artikel 5 is van overeenkomstige toepassing op de archieven van de gemeenschappelijke regelingen.

Artikel 1a
Deze wet is niet van toepassing op de archieven van de Staten-Generaal.

Hoofdstuk 2 Overbrenging

§ 1 Termijnen

Artikel 6:12
1. De archiefbescheiden worden overgebracht na twintig jaar.
2. Het college kan de termijn verlengen, bedoeld in het eerste lid.

§ 2 Uitzonderingen

Artikel 7
Uitzonderingen worden gemotiveerd.

Titeldeel 2 Toezicht

Paragraaf 3 - Inspectie

Artikel 8
De inspecteur ziet toe.

Bijlage I
Lijst van archieven.
`

// TestHeadingDutchLegalStructure detects the BWB divisions in plain text: each article's
// chunk carries the divisions above it; a sentence starting "Artikel 5 is" and a numbered
// lid ending in a full stop are text, not headings.
func TestHeadingDutchLegalStructure(t *testing.T) {
	h, _ := NewHeading(RuneSizer{}, 1000, 0, HeadingOptions{Markdown: true, NumberedSections: true})
	want := []string{"1 Boek 1. Algemene bepalingen", "3 Titel 1 Begrippen", "5 Afdeling 1.1 Reikwijdte", "8 Artikel 1", "8 Artikel 1a",
		"4 Hoofdstuk 2 Overbrenging", "6 § 1 Termijnen", "8 Artikel 6:12", "6 § 2 Uitzonderingen", "8 Artikel 7",
		"3 Titeldeel 2 Toezicht", "6 Paragraaf 3 - Inspectie", "8 Artikel 8", "1 Bijlage I"}
	if got := outlineTitles(h, dutchLaw); !reflect.DeepEqual(got, want) {
		t.Fatalf("outline\n got %q\nwant %q", got, want)
	}
	chunks := run(t, h, dutchLaw)
	checkChunks(t, dutchLaw, chunks, checkOpts{max: 1000, sizer: RuneSizer{}, ordered: true})
	for in, want := range map[string]string{
		"Artikel 5 is van overeenkomstige":  "Boek 1. Algemene bepalingen > Titel 1 Begrippen > Afdeling 1.1 Reikwijdte > Artikel 1",
		"Staten-Generaal":                   "Boek 1. Algemene bepalingen > Titel 1 Begrippen > Afdeling 1.1 Reikwijdte > Artikel 1a",
		"bedoeld in het eerste lid":         "Boek 1. Algemene bepalingen > Titel 1 Begrippen > Hoofdstuk 2 Overbrenging > § 1 Termijnen > Artikel 6:12",
		"Uitzonderingen worden gemotiveerd": "Boek 1. Algemene bepalingen > Titel 1 Begrippen > Hoofdstuk 2 Overbrenging > § 2 Uitzonderingen > Artikel 7",
		"De inspecteur ziet toe":            "Boek 1. Algemene bepalingen > Titeldeel 2 Toezicht > Paragraaf 3 - Inspectie > Artikel 8",
		"Lijst van archieven":               "Bijlage I",
	} {
		if got := pathOf(t, dutchLaw, chunks, in); got != want {
			t.Errorf("%q under %q, want %q", in, got, want)
		}
	}
	// Without the option, none of this is a heading.
	plain, _ := NewHeading(RuneSizer{}, 1000, 0, HeadingOptions{Markdown: true})
	if got := plain.Outline(dutchLaw); len(got) != 0 {
		t.Errorf("Markdown-only detector found %v", got)
	}
}

// TestHeadingDutchDecisionStructure detects the sections of a council decision in plain
// text, siblings of one another, with the articles of the regulation it adopts below
// Besluit, and numbered sections nested under a Hoofdstuk.
func TestHeadingDutchDecisionStructure(t *testing.T) {
	text := `Raadsvoorstel 2026-12

Overwegende dat:
het college een nieuwe archiefverordening heeft voorbereid;

Motivering
De oude verordening dateert van 1996. 1. Deze zin begint met een nummer.

Beslispunten
1. De Archiefverordening 2026 vast te stellen.
2. De Archiefverordening 1996 in te trekken.

BESLUIT:

Hoofdstuk 1 Algemeen

1.1 Begrippen
In deze verordening wordt verstaan onder archief: het gemeentelijk archief.

Artikel 2
De archivaris is belast met het beheer.

Stemverhouding
Aangenomen met 30 stemmen voor en 3 tegen.

Beslispunt 3
Ingetrokken.
`
	h, _ := NewHeading(RuneSizer{}, 1000, 0, HeadingOptions{NumberedSections: true})
	want := []string{"1 Overwegende dat:", "1 Motivering", "1 Beslispunten", "1 BESLUIT:", "4 Hoofdstuk 1 Algemeen", "5 1.1 Begrippen",
		"8 Artikel 2", "1 Stemverhouding", "1 Beslispunt 3"}
	if got := outlineTitles(h, text); !reflect.DeepEqual(got, want) {
		t.Fatalf("outline\n got %q\nwant %q", got, want)
	}
	chunks := run(t, h, text)
	checkChunks(t, text, chunks, checkOpts{max: 1000, sizer: RuneSizer{}, ordered: true})
	for in, want := range map[string]string{
		"nieuwe archiefverordening":       "Overwegende dat:",
		"De Archiefverordening 2026 vast": "Beslispunten",
		"het gemeentelijk archief":        "BESLUIT: > Hoofdstuk 1 Algemeen > 1.1 Begrippen",
		"belast met het beheer":           "BESLUIT: > Hoofdstuk 1 Algemeen > 1.1 Begrippen > Artikel 2",
		"30 stemmen voor":                 "Stemverhouding",
		"Ingetrokken":                     "Beslispunt 3",
	} {
		if got := pathOf(t, text, chunks, in); got != want {
			t.Errorf("%q under %q, want %q", in, got, want)
		}
	}
}

// TestSentenceDutchAbbreviations cuts Dutch legal prose: citations (art., lid, jo., nr.)
// and dotted abbreviations (o.a., d.w.z., m.b.t., i.v.m., e.d.) do not end a sentence;
// "het eerste lid." does.
func TestSentenceDutchAbbreviations(t *testing.T) {
	sents := []string{
		"Op grond van art. 3:40 lid 2 jo. art. 6:12 BW is de overeenkomst nietig. ",
		"Zie besluit nr. 2024/118, o.a. De Vries en d.w.z. Bakker stemden tegen. ",
		"Het college besluit m.b.t. Havenkwartier i.v.m. Ruimtelijke ordening e.d. Zaken het volgende. ",
		"De termijn wordt verlengd als bedoeld in het eerste lid. ",
		"Dit besluit treedt in werking op 1 januari.",
	}
	text := strings.Join(sents, "")
	g, err := NewSentenceSegmenter([]string{"nl"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range g.Sentences(text) {
		got = append(got, text[s.Start:s.End])
	}
	if !reflect.DeepEqual(got, sents) {
		t.Errorf("sentences\n got %q\nwant %q", got, sents)
	}
	// The Sentence strategy cuts only between those sentences.
	c, err := NewSentence(RuneSizer{}, 100, 0, SentenceOptions{Languages: []string{"nl"}})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := c.Chunk(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	starts, ends := map[int]bool{}, map[int]bool{}
	off := 0
	for _, s := range sents {
		starts[off] = true
		ends[off+len(strings.TrimSpace(s))] = true
		off += len(s)
	}
	for _, c := range chunks {
		if !starts[c.Start] || !ends[c.End] {
			t.Errorf("chunk %q cuts inside a sentence", text[c.Start:c.End])
		}
	}
	if len(chunks) < 3 {
		t.Errorf("%d chunks at size 100, want at least 3", len(chunks))
	}
}

// TestHeadingPathPrefix: with PathPrefix every chunk's embedded text starts with its heading
// path, the whole embedded text measures at most the size (TokenCount exact), the stored
// text stays text[Start:End], and a path too long for half the size keeps its inner titles.
func TestHeadingPathPrefix(t *testing.T) {
	const size = 120
	with, _ := NewHeading(RuneSizer{}, size, 10, HeadingOptions{Markdown: true, NumberedSections: true, PathPrefix: true})
	without, _ := NewHeading(RuneSizer{}, size, 10, HeadingOptions{Markdown: true, NumberedSections: true})
	chunks := run(t, with, dutchLaw)
	checkChunks(t, dutchLaw, chunks, checkOpts{max: size, sizer: RuneSizer{}, ordered: true})
	prefixed := 0
	for _, c := range chunks {
		emb := c.EmbedText(dutchLaw)
		if c.Text(dutchLaw) != dutchLaw[c.Start:c.End] {
			t.Errorf("chunk %d stored text %q is not its span", c.Ordinal, c.Text(dutchLaw))
		}
		if n := utf8.RuneCountInString(emb); n != c.TokenCount || n > size {
			t.Errorf("chunk %d: embedded text %d runes, TokenCount %d, size %d: %q", c.Ordinal, n, c.TokenCount, size, emb)
		}
		if len(c.HeadingPath) == 0 {
			if c.PathPrefix != "" {
				t.Errorf("chunk %d without a path has prefix %q", c.Ordinal, c.PathPrefix)
			}
			continue
		}
		prefixed++
		full := strings.Join(c.HeadingPath, " > ") + "\n"
		if !strings.HasSuffix(full, c.PathPrefix) || !strings.HasSuffix(c.PathPrefix, c.HeadingPath[len(c.HeadingPath)-1]+"\n") {
			t.Errorf("chunk %d: prefix %q is not the tail of path %q", c.Ordinal, c.PathPrefix, full)
		}
		if utf8.RuneCountInString(full) <= size/2 && c.PathPrefix != full {
			t.Errorf("chunk %d: prefix %q, want the whole path %q", c.Ordinal, c.PathPrefix, full)
		}
		if utf8.RuneCountInString(c.PathPrefix) > size/2 {
			t.Errorf("chunk %d: prefix %q over half the size", c.Ordinal, c.PathPrefix)
		}
	}
	if p := pathOf(t, dutchLaw, chunks, "bedoeld in het eerste lid"); p == "" {
		t.Fatal("no path")
	}
	// Artikel 6:12's path (106 runes) is over half the size: the outer titles go.
	for _, c := range chunks {
		if strings.Contains(dutchLaw[c.Start:c.End], "bedoeld in het eerste lid") {
			if want := "Hoofdstuk 2 Overbrenging > § 1 Termijnen > Artikel 6:12\n"; c.PathPrefix != want {
				t.Errorf("Artikel 6:12 prefix %q, want %q", c.PathPrefix, want)
			}
		}
	}
	if prefixed == 0 {
		t.Fatal("no chunk has a prefix")
	}
	// The budget shrinks: at least as many chunks as without the prefix, and more here.
	if n, m := len(chunks), len(run(t, without, dutchLaw)); n <= m {
		t.Errorf("%d chunks with the prefix, %d without: the prefix did not count toward the size", n, m)
	}
	for _, c := range run(t, without, dutchLaw) {
		if c.PathPrefix != "" {
			t.Fatalf("prefix %q without the option", c.PathPrefix)
		}
	}
}

// TestHeadingMarkdownMatchesGoldmark compares the Markdown detector's headings with a
// CommonMark parser's (goldmark, through reader/markup.Headings): the same heading lines in
// real READMEs full of fenced code and in the fence-in-container cases.
func TestHeadingMarkdownMatchesGoldmark(t *testing.T) {
	docs := []string{readTestdata(t, "goldmark-README.md"), readTestdata(t, "logr-README.md"),
		"# Top\n\n- item\n  ```\n  code\n\n# Real heading\n\nbody text\n",
		"# Top\n\n> ```\n> # quoted code\n\n# After quote\n",
		"# A\n\nx\n\n## B\n\ny\n\n```sh\n# not a heading\necho hi\n```\n"}
	h, _ := NewHeading(RuneSizer{}, 1000, 0, HeadingOptions{Markdown: true})
	for i, d := range docs {
		var got, want []int
		for _, o := range h.Outline(d) {
			got = append(got, o.Start)
		}
		for _, o := range markup.Headings(d) {
			want = append(want, o.Start)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("doc %d: heading lines at %v, goldmark %v", i, got, want)
		}
	}
}
