package docchunk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/pdf"
)

// rd reads every format; starting it compiles PDFium (seconds), so the tests share one.
var rd *formats.Readers

func TestMain(m *testing.M) {
	var err error
	if rd, err = formats.New(context.Background(), formats.Options{PDF: pdf.Options{Workers: 1}}); err != nil {
		fmt.Fprintln(os.Stderr, "start readers:", err)
		os.Exit(1)
	}
	code := m.Run()
	rd.Close()
	os.Exit(code)
}

const title = "Raadsbesluit 2026-041 over de herinrichting van het Stationsplein"

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "reader", "testdata", name))
	if err != nil {
		t.Fatalf("fixture %s (made by hack/make-reader-fixtures.sh): %v", name, err)
	}
	return b
}

func heading(t *testing.T, size int, opts chunkers.HeadingOptions) *chunkers.HeadingChunker {
	t.Helper()
	h, err := chunkers.NewHeading(chunkers.RuneSizer{}, size, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// holding returns the chunk whose text contains s; it fails the test when none does.
func holding(t *testing.T, text string, chunks []chunkers.Chunk, s string) chunkers.Chunk {
	t.Helper()
	for _, c := range chunks {
		if strings.Contains(text[c.Start:c.End], s) {
			return c
		}
	}
	t.Fatalf("no chunk holds %q", s)
	return chunkers.Chunk{}
}

// checkCouncil asserts the heading paths of the council resolution's chunks: a chunk under
// the level-2 heading Motivering carries the level-1 title and Motivering, one under the
// level-3 Financiële gevolgen all three, and the sibling Stemverhouding replaces Motivering.
func checkCouncil(t *testing.T, doc reader.Document, top string) {
	t.Helper()
	chunks, err := docchunk.Chunk(context.Background(), heading(t, 400, chunkers.HeadingOptions{Markdown: true}), doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   string
		path []string
	}{
		{"Het Stationsplein is het belangrijkste entreegebied", []string{top, "Motivering"}},
		{"De totale kosten worden geraamd", []string{top, "Motivering", "Financiële gevolgen"}},
		{"De grootste risico's zijn prijsstijgingen", []string{top, "Motivering", "Risico's"}},
		{"aangenomen met 27 stemmen voor", []string{top, "Stemverhouding"}},
	} {
		if got := holding(t, doc.Text, chunks, c.in).HeadingPath; !reflect.DeepEqual(got, c.path) {
			t.Errorf("chunk holding %q: heading path %q, want %q", c.in, got, c.path)
		}
	}
	for _, c := range chunks {
		if strings.HasPrefix(doc.Text[c.Start:c.End], "Motivering") && !reflect.DeepEqual(c.HeadingPath, []string{top, "Motivering"}) {
			t.Errorf("the Motivering heading's own chunk has path %q", c.HeadingPath)
		}
	}
}

// TestEveryReaderOutlineReachesHeading reads the council resolution in every format that
// carries an outline and checks that the Heading strategy cuts by that outline.
func TestEveryReaderOutlineReachesHeading(t *testing.T) {
	ctx := context.Background()
	for _, file := range []string{"raadsbesluit.md", "raadsbesluit.html", "raadsbesluit.docx", "raadsbesluit.odt",
		"raadsbesluit.pdf", "raadsbesluit-nobookmarks.pdf"} {
		t.Run(file, func(t *testing.T) {
			doc, err := rd.Read(ctx, readFixture(t, file))
			if err != nil {
				t.Fatal(err)
			}
			checkCouncil(t, doc, title)
		})
	}
	t.Run("beir", func(t *testing.T) {
		// The Markdown file as the text of a BEIR record, as legalqa-nl stores its laws.
		line, err := json.Marshal(map[string]string{"_id": "rb-041", "title": title, "text": string(readFixture(t, "raadsbesluit.md"))})
		if err != nil {
			t.Fatal(err)
		}
		doc, err := rd.Read(ctx, line)
		if err != nil {
			t.Fatal(err)
		}
		if doc.MediaType != reader.MediaTypeBEIR {
			t.Fatalf("media type %q", doc.MediaType)
		}
		checkCouncil(t, doc, title)
	})
}

// TestPlainTextDutchStructure: plain text has no outline, so the strategy's own detectors
// find the council's sections (Beslispunt, Motivering, Stemverhouding) in the .txt fixture.
func TestPlainTextDutchStructure(t *testing.T) {
	d, err := rd.Read(context.Background(), readFixture(t, "raadsbesluit.txt"))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := docchunk.Chunk(context.Background(), heading(t, 400, chunkers.HeadingOptions{Markdown: true, NumberedSections: true}), d)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string][]string{
		"1. Het Voorlopig Ontwerp Stationsplein vast": {"Beslispunt"},
		"Het Stationsplein is het belangrijkste":      {"Motivering"},
		"aangenomen met 27 stemmen voor":              {"Stemverhouding"},
	} {
		if got := holding(t, d.Text, chunks, in).HeadingPath; !reflect.DeepEqual(got, want) {
			t.Errorf("chunk holding %q: heading path %q, want %q", in, got, want)
		}
	}
}

// TestMarkdownCodeCommentIsNoHeading is the first input: through the Markdown
// reader, the chunk holding "y" carries [A B], and the "# comment" in the sh fence is text
// of section B, never a heading.
func TestMarkdownCodeCommentIsNoHeading(t *testing.T) {
	in := "# A\n\nx\n\n## B\n\ny\n\n```sh\n# not a heading\necho hi\n```\n"
	doc, err := rd.Read(context.Background(), []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if doc.MediaType != reader.MediaTypeMarkdown {
		t.Fatalf("media type %q", doc.MediaType)
	}
	for _, size := range []int{4, 40} {
		chunks, err := docchunk.Chunk(context.Background(), heading(t, size, chunkers.HeadingOptions{Markdown: true}), doc)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range chunks {
			got = append(got, fmt.Sprintf("%q%q", doc.Text[c.Start:c.End], c.HeadingPath))
		}
		if got := holding(t, doc.Text, chunks, "y").HeadingPath; !reflect.DeepEqual(got, []string{"A", "B"}) {
			t.Errorf("size %d: chunk holding y has path %q; chunks %s", size, got, got)
		}
		for _, c := range chunks {
			if !reflect.DeepEqual(c.HeadingPath, []string{"A"}) && !reflect.DeepEqual(c.HeadingPath, []string{"A", "B"}) {
				t.Errorf("size %d: chunk %q has path %q; chunks %s", size, doc.Text[c.Start:c.End], c.HeadingPath, got)
			}
		}
		if got := holding(t, doc.Text, chunks, "echo").HeadingPath; !reflect.DeepEqual(got, []string{"A", "B"}) {
			t.Errorf("size %d: code line's chunk has path %q", size, got)
		}
	}
}

// TestBEIRMarkdownHeadingsCutChunks is the second defect on a legalqa-nl style law:
// the headings in a BEIR record's text, not its title alone, cut the chunks, so they differ
// from Recursive at the same size, and no chunk spans two articles.
func TestBEIRMarkdownHeadingsCutChunks(t *testing.T) {
	var body strings.Builder
	body.WriteString("# Vreemdelingenwet\n\n## Hoofdstuk 3 Toelating\n\n")
	for i := 19; i <= 22; i++ {
		fmt.Fprintf(&body, "### Artikel %d\n\n1 De aanvraag tot het verlenen van een verblijfsvergunning kan worden afgewezen indien voorwaarde %d niet is vervuld.\n\n", i, i)
	}
	body.WriteString("```\n# geen kop\n```\n")
	doc, bodyStart := beir.FromFields("Vreemdelingenwet 2000", body.String())
	var titles []string
	for _, o := range doc.Outline {
		titles = append(titles, fmt.Sprintf("%d %s", o.Level, o.Title))
		if !strings.Contains(doc.Text[o.Start:doc.TitleEnd(len(titles)-1)], o.Title) {
			t.Errorf("heading %q starts at %d: %q", o.Title, o.Start, doc.Text[o.Start:doc.TitleEnd(len(titles)-1)])
		}
	}
	want := []string{"1 Vreemdelingenwet 2000", "1 Vreemdelingenwet", "2 Hoofdstuk 3 Toelating", "3 Artikel 19", "3 Artikel 20", "3 Artikel 21", "3 Artikel 22"}
	if !reflect.DeepEqual(titles, want) {
		t.Fatalf("outline %q, want %q", titles, want)
	}
	if doc.Text[bodyStart:] != body.String() {
		t.Fatalf("body not kept exactly")
	}
	h := heading(t, 300, chunkers.HeadingOptions{Markdown: true})
	chunks, err := docchunk.Chunk(context.Background(), h, doc)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := chunkers.NewRecursive(chunkers.RuneSizer{}, 300, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	recChunks, err := docchunk.Chunk(context.Background(), rec, doc)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(spans(chunks), spans(recChunks)) {
		t.Errorf("Heading cuts exactly as Recursive: %v", spans(chunks))
	}
	c := holding(t, doc.Text, chunks, "voorwaarde 20 ")
	if want := []string{"Vreemdelingenwet", "Hoofdstuk 3 Toelating", "Artikel 20"}; !reflect.DeepEqual(c.HeadingPath, want) {
		t.Errorf("Artikel 20's chunk has path %q, want %q", c.HeadingPath, want)
	}
	for _, c := range chunks {
		if n := strings.Count(doc.Text[c.Start:c.End], "### Artikel"); n > 1 {
			t.Errorf("chunk %q spans %d articles", doc.Text[c.Start:c.End], n)
		}
		if c.End > c.Start && strings.Contains(strings.Join(c.HeadingPath, "|"), "geen kop") {
			t.Errorf("code line became a heading: %q", c.HeadingPath)
		}
	}
}

func spans(chunks []chunkers.Chunk) [][2]int {
	out := make([][2]int, len(chunks))
	for i, c := range chunks {
		out[i] = [2]int{c.Start, c.End}
	}
	return out
}

// TestPathPrefixFromSpec builds the Heading strategy from a ChunkingStrategy spec with
// heading.pathPrefix, as a build does, and chunks a legalqa-nl style BEIR record: the
// embedded text starts with the law > chapter > article path, the stored text does not.
func TestPathPrefixFromSpec(t *testing.T) {
	spec := v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyHeading, Unit: v1alpha1.UnitCharacters, Size: 200,
		Heading: &v1alpha1.HeadingOptions{PathPrefix: true}}
	c, err := registry.New(spec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := beir.FromFields("Vreemdelingenwet 2000", "# Vreemdelingenwet 2000\n\n## Hoofdstuk 3\n\n### Artikel 20\n\n1 Onze Minister is bevoegd de aanvraag in te willigen.\n")
	chunks, err := docchunk.Chunk(context.Background(), c, doc)
	if err != nil {
		t.Fatal(err)
	}
	ch := holding(t, doc.Text, chunks, "Onze Minister")
	want := "Vreemdelingenwet 2000 > Hoofdstuk 3 > Artikel 20\n"
	if ch.PathPrefix != want || !strings.HasPrefix(ch.EmbedText(doc.Text), want+"### Artikel 20") || strings.Contains(ch.Text(doc.Text), "Hoofdstuk 3 >") {
		t.Errorf("prefix %q, embedded %q, stored %q", ch.PathPrefix, ch.EmbedText(doc.Text), ch.Text(doc.Text))
	}
	if ch.TokenCount != len([]rune(ch.EmbedText(doc.Text))) {
		t.Errorf("TokenCount %d does not count the prefix (%q)", ch.TokenCount, ch.EmbedText(doc.Text))
	}
}

// TestLegalQANLArticlesAreSections chunks the laws of legalqa-nl that hold a gold article
// (spans.jsonl) as a build does: every chunk overlapping a gold article lies inside it and
// carries its heading path (law title first, the article last), and Recursive at the same
// size cuts differently. The data set comes from $RAGOPS_DATASETS (default
// ../../../shared/datasets); the test skips without it, or fails under RAGOPS_REQUIRE_ALL=1.
func TestLegalQANLArticlesAreSections(t *testing.T) {
	dir := os.Getenv("RAGOPS_DATASETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "datasets")
	}
	spansFile, err := os.ReadFile(filepath.Join(dir, "legalqa-nl", "spans.jsonl"))
	if err != nil {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("legalqa-nl missing: %v", err)
		}
		t.Skipf("legalqa-nl missing (set RAGOPS_DATASETS): %v", err)
	}
	type span struct {
		Doc         string   `json:"doc_id"`
		Article     string   `json:"article"`
		HeadingPath []string `json:"heading_path"`
		Start       int      `json:"start_byte"`
		End         int      `json:"end_byte"`
	}
	byDoc := map[string][]span{}
	for _, l := range strings.Split(strings.TrimSpace(string(spansFile)), "\n") {
		var s span
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatal(err)
		}
		byDoc[s.Doc] = append(byDoc[s.Doc], s)
	}
	f, err := os.Open(filepath.Join(dir, "legalqa-nl", "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := chunkers.NewRecursive(chunkers.WordSizer{}, 300, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := chunkers.NewHeading(chunkers.WordSizer{}, 300, 0, chunkers.HeadingOptions{Markdown: true})
	if err != nil {
		t.Fatal(err)
	}
	laws, checked, differ := 0, 0, 0
	err = beir.Scan(f, func(e beir.Entry) error {
		gold := byDoc[e.ID]
		if e.Err != nil || len(gold) == 0 {
			return e.Err
		}
		laws++
		chunks, err := docchunk.Chunk(context.Background(), h, e.Doc)
		if err != nil {
			return err
		}
		recChunks, err := docchunk.Chunk(context.Background(), rec, e.Doc)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(spans(chunks), spans(recChunks)) {
			differ++
		}
		for _, s := range gold {
			start, end := e.BodyStart+s.Start, e.BodyStart+s.End
			if !strings.HasPrefix(e.Doc.Text[start:end], "#") || !strings.Contains(e.Doc.Text[start:start+80], s.Article) {
				t.Fatalf("%s %s: span does not start at its heading: %.80q", e.ID, s.Article, e.Doc.Text[start:])
			}
			n := 0
			for _, c := range chunks {
				if c.End <= start || c.Start >= end {
					continue
				}
				n++
				if c.Start < start || c.End > end {
					t.Errorf("%s %s [%d,%d): chunk [%d,%d) crosses the article's bounds", e.ID, s.Article, start, end, c.Start, c.End)
				}
				p := c.HeadingPath
				if len(p) < len(s.HeadingPath)+1 || !reflect.DeepEqual(p[len(p)-len(s.HeadingPath):], s.HeadingPath) || p[0] != e.Doc.Outline[0].Title {
					t.Errorf("%s %s: chunk path %q, want the title then ... %q", e.ID, s.Article, p, s.HeadingPath)
				}
			}
			if n == 0 {
				t.Errorf("%s %s: no chunk", e.ID, s.Article)
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if laws < 10 || checked != 57 || differ != laws {
		t.Errorf("%d laws, %d gold articles checked (want 57), %d laws cut differently from Recursive (want all)", laws, checked, differ)
	}
}

// TestLineHeadingsJoinReaderOutline: a document whose reader outline lacks the decision's
// and regulation's sections (bold paragraphs in a DOCX, say) is still cut at them when the
// strategy has numbered sections; they nest below the reader's headings, a reader heading
// clears them, and a line that is already a reader heading is not added twice.
func TestLineHeadingsJoinReaderOutline(t *testing.T) {
	var b reader.Builder
	b.Heading(1, "Archiefverordening 2026")
	b.Paragraph("Beslispunt 1")
	b.Paragraph("De raad stelt de verordening vast.")
	b.Paragraph("Artikel 1 Begrippen")
	b.Paragraph("In deze verordening wordt verstaan onder archief: het gemeentelijk archief.")
	b.Heading(2, "Motivering")
	b.Paragraph("De oude verordening is verouderd.")
	b.Heading(2, "Toelichting")
	b.Paragraph("Uitleg van de begrippen.")
	doc := b.Finish("application/vnd.openxmlformats-officedocument.wordprocessingml.document")
	h := heading(t, 1000, chunkers.HeadingOptions{Markdown: true, NumberedSections: true})
	chunks, err := docchunk.Chunk(context.Background(), h, doc)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string][]string{
		"De raad stelt":            {"Archiefverordening 2026", "Beslispunt 1"},
		"het gemeentelijk archief": {"Archiefverordening 2026", "Beslispunt 1", "Artikel 1 Begrippen"},
		"De oude verordening":      {"Archiefverordening 2026", "Motivering"},
		"Uitleg van de begrippen":  {"Archiefverordening 2026", "Toelichting"},
	} {
		if got := holding(t, doc.Text, chunks, in).HeadingPath; !reflect.DeepEqual(got, want) {
			t.Errorf("chunk holding %q: path %q, want %q", in, got, want)
		}
	}
	// Without numbered sections only the reader's outline counts.
	chunks, err = docchunk.Chunk(context.Background(), heading(t, 1000, chunkers.HeadingOptions{Markdown: true}), doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := holding(t, doc.Text, chunks, "het gemeentelijk archief").HeadingPath; !reflect.DeepEqual(got, []string{"Archiefverordening 2026"}) {
		t.Errorf("without numbered sections: path %q", got)
	}
}

// TestMarkdownCodeKeepsLines reads a .md file with a Python block through the Markdown
// reader and cuts it with Recursive and Heading at 120 code points: the document text holds
// the code byte for byte, and every chunk inside the code starts and ends at a line
// boundary (the line separators cut it, not sentence ends or words inside a line that the
// old flattening made).
func TestMarkdownCodeKeepsLines(t *testing.T) {
	var code strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&code, "def f%d(x):\n    if x > %d:\n        return x  # keep\n", i, i)
	}
	in := "# Script\n\nThe helpers.\n\n```python\n" + code.String() + "```\n"
	doc, err := rd.Read(context.Background(), []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(doc.Text, code.String())
	if at < 0 {
		t.Fatalf("the code is not in the text byte for byte:\n%q", doc.Text)
	}
	codeEnd := at + code.Len() - 1 // the last newline ends the block
	rec, err := chunkers.NewRecursive(chunkers.RuneSizer{}, 120, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]chunkers.Chunker{"Recursive": rec, "Heading": heading(t, 120, chunkers.HeadingOptions{Markdown: true})} {
		chunks, err := docchunk.Chunk(context.Background(), c, doc)
		if err != nil {
			t.Fatal(err)
		}
		inCode := 0
		for _, ch := range chunks {
			if ch.Start < at || ch.End > codeEnd {
				continue
			}
			inCode++
			if doc.Text[ch.Start-1] != '\n' || (ch.End < len(doc.Text) && doc.Text[ch.End] != '\n') {
				t.Errorf("%s: chunk [%d, %d) cuts inside a line: %q", name, ch.Start, ch.End, doc.Text[ch.Start:ch.End])
			}
		}
		if inCode < code.Len()/120 {
			t.Errorf("%s: %d chunks inside %d bytes of code", name, inCode, code.Len())
		}
	}
}

// TestMarkdownTableHeaderRepeats reads a .md table of 40 rows (the reader writes it as
// tab-separated rows) and cuts it with Heading at 160 code points: every chunk that
// continues the table carries its header row as Prefix, as a BEIR record's pipe table does.
func TestMarkdownTableHeaderRepeats(t *testing.T) {
	var md strings.Builder
	md.WriteString("# Uitslag\n\nDe stemmen per fractie.\n\n| Fractie | Voor | Tegen |\n|---|---|---|\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&md, "| Fractie %d | %d | %d |\n", i, i, 40-i)
	}
	md.WriteString("\nAldus besloten.\n")
	doc, err := rd.Read(context.Background(), []byte(md.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Text, "Fractie\tVoor\tTegen\nFractie 0\t0\t40\n") {
		t.Fatalf("the reader's table is not tab-separated rows:\n%q", doc.Text)
	}
	beirDoc, _ := beir.FromFields("Uitslag", md.String())
	for name, d := range map[string]reader.Document{"md": doc, "beir": beirDoc} {
		chunks, err := docchunk.Chunk(context.Background(), heading(t, 160, chunkers.HeadingOptions{Markdown: true}), d)
		if err != nil {
			t.Fatal(err)
		}
		header := map[string]string{"md": "Fractie\tVoor\tTegen\n", "beir": "| Fractie | Voor | Tegen |\n|---|---|---|\n"}[name]
		continued, withHeader := 0, 0
		for _, c := range chunks {
			span := d.Text[c.Start:c.End]
			if !strings.HasPrefix(span, "Fractie ") && !strings.HasPrefix(span, "| Fractie ") {
				continue
			}
			continued++
			if c.Prefix == header {
				withHeader++
			}
			if c.TokenCount != len([]rune(c.Text(d.Text))) || c.TokenCount > 160 {
				t.Errorf("%s: chunk %d measures %d, its text %d code points", name, c.Ordinal, c.TokenCount, len([]rune(c.Text(d.Text))))
			}
		}
		if continued < 4 || withHeader != continued {
			t.Errorf("%s: %d of %d continued table chunks carry the header %q", name, withHeader, continued, header)
		}
	}
}

// TestTabIndentedCodeIsNoTable: a block of code indented with tabs is not a tab-separated
// table, so no chunk carries one of its lines as a header.
func TestTabIndentedCodeIsNoTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("func f() {\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "\tx%d := %d\n", i, i)
	}
	b.WriteString("}\n")
	chunks, err := heading(t, 80, chunkers.HeadingOptions{Markdown: true}).Chunk(context.Background(), b.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if c.Prefix != "" {
			t.Fatalf("chunk %d carries prefix %q", c.Ordinal, c.Prefix)
		}
	}
}

// headingMin returns a Heading chunker in code points with spec.minSize set.
func headingMin(t *testing.T, size, minSize int) chunkers.Chunker {
	t.Helper()
	c, err := chunkers.WithMinSize(heading(t, size, chunkers.HeadingOptions{Markdown: true}), minSize)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHeadingOnlySectionsFold: with minSize on, a guidance page in BEIR form (the record's
// title, then its own "# Title" line, a heading-only "## Steps" over its subsections, and a
// "## Script" heading over code that does not fit with it) has no chunk holding only
// headings: the two titles and the heading-only section fold into the first subsection
// (its path keeps both titles), and "## Script" starts the chunk of its code. Without
// minSize the titles and headings stand alone, and every byte is covered either way.
func TestHeadingOnlySectionsFold(t *testing.T) {
	var code strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&code, "    step_%d = run(%d)\n", i, i)
	}
	body := "# Renew a permit\n\n## Steps\n\n### Apply\n\nFill in the form and send it to the office before the permit ends.\n\n" +
		"### Pay\n\nPay the fee within two weeks of the letter.\n\n## Script\n\n```python\ndef renew():\n" + code.String() + "```\n"
	doc, _ := beir.FromFields("Renew a permit", body)
	onlyHeadings := func(c chunkers.Chunk) bool {
		for _, l := range strings.Split(doc.Text[c.Start:c.End], "\n") {
			l = strings.TrimSpace(strings.TrimLeft(l, "#"))
			if l != "" && !slices.ContainsFunc(doc.Outline, func(h reader.Heading) bool { return h.Title == l }) {
				return false
			}
		}
		return true
	}
	for _, minSize := range []int{0, 60} {
		var c chunkers.Chunker = heading(t, 200, chunkers.HeadingOptions{Markdown: true})
		if minSize > 0 {
			c = headingMin(t, 200, minSize)
		}
		chunks, err := docchunk.Chunk(context.Background(), c, doc)
		if err != nil {
			t.Fatal(err)
		}
		covered := make([]bool, len(doc.Text))
		alone := 0
		for _, ch := range chunks {
			for j := ch.Start; j < ch.End; j++ {
				covered[j] = true
			}
			if onlyHeadings(ch) {
				alone++
			}
		}
		for j, r := range doc.Text {
			if !unicode.IsSpace(r) && !covered[j] {
				t.Fatalf("minSize %d: byte %d (%q) is in no chunk", minSize, j, doc.Text[j:min(len(doc.Text), j+20)])
			}
		}
		if minSize == 0 {
			if alone == 0 {
				t.Errorf("minSize 0: no heading-only chunk to fold; the test input is too easy")
			}
			continue
		}
		if alone != 0 {
			t.Errorf("minSize %d: %d chunks hold only headings", minSize, alone)
		}
		first := chunks[0]
		if first.Start != 0 || !strings.Contains(doc.Text[first.Start:first.End], "Fill in the form") {
			t.Errorf("minSize %d: first chunk %q, want the titles folded into Apply's text", minSize, doc.Text[first.Start:first.End])
		}
		if want := []string{"Renew a permit", "Steps", "Apply"}; !reflect.DeepEqual(first.HeadingPath, want) {
			t.Errorf("minSize %d: first chunk's path %q, want %q", minSize, first.HeadingPath, want)
		}
		s := holding(t, doc.Text, chunks, "def renew")
		if !strings.HasPrefix(doc.Text[s.Start:s.End], "## Script\n\n```python\ndef renew") {
			t.Errorf("minSize %d: the script's first chunk is %q", minSize, doc.Text[s.Start:s.End])
		}
	}
}
