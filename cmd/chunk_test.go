package cmd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/embedder/tokenize"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/preview"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr/ocrtest"
	"github.com/ragops/ragops/reader/pdf"
)

// The Dutch council resolution in every format the readers take.
var dutchFormats = []string{"md", "txt", "html", "docx", "odt", "pdf"}

// The heading paths of its sections, in document order (the reader outline of the HTML,
// DOCX, ODT and PDF versions).
const title = "Raadsbesluit 2026-041 over de herinrichting van het Stationsplein"

var dutchSections = [][]string{
	{title},
	{title, "Beslispunt"},
	{title, "Motivering"},
	{title, "Motivering", "Financiële gevolgen"},
	{title, "Motivering", "Risico's"},
	{title, "Stemverhouding"},
}

func root(parts ...string) string {
	return filepath.Join(append([]string{testenv.ModuleRoot()}, parts...)...)
}

func fixture(ext string) string { return root("reader", "testdata", "raadsbesluit."+ext) }

func strategyFile(name string) string { return root("preview", "testdata", name) }

// modelDir returns RAGOPS_MODEL_DIR (hack/prepare.d/embedder.sh), skipping without it or
// failing under RAGOPS_REQUIRE_ALL=1.
func modelDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("RAGOPS_MODEL_DIR")
	if d == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal("RAGOPS_MODEL_DIR is not set: run hack/prepare.d/embedder.sh")
		}
		t.Skip("RAGOPS_MODEL_DIR is not set: run hack/prepare.d/embedder.sh")
	}
	return d
}

// tempStrategy writes a ChunkingStrategy named name with the given spec lines (YAML,
// indented by two spaces) to a temporary file and returns its path.
func tempStrategy(t *testing.T, name, spec string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".yaml")
	doc := "apiVersion: ragops.dev/v1alpha1\nkind: ChunkingStrategy\nmetadata:\n  name: " + name + "\nspec:\n" + spec
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// chunkCmd runs `ragops chunk args...` in process.
func chunkCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	c := cmd.NewRoot()
	var out, errb bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SetArgs(append([]string{"chunk"}, args...))
	err = c.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// jsonChunks runs the command with -o json and parses the lines.
func jsonChunks(t *testing.T, args ...string) []preview.JSONChunk {
	t.Helper()
	out, stderr, err := chunkCmd(t, append(args, "-o", "json")...)
	if err != nil {
		t.Fatalf("ragops chunk %v: %v\n%s", args, err, stderr)
	}
	var res []preview.JSONChunk
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c preview.JSONChunk
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		res = append(res, c)
	}
	if len(res) == 0 {
		t.Fatalf("ragops chunk %v printed no chunks", args)
	}
	return res
}

var (
	testReadersOnce sync.Once
	testReaders     *formats.Readers
	testReadersErr  error
)

// readDoc reads a file with the build's readers, independently of the command. The readers
// (PDFium takes seconds to start) are shared by the tests and never closed.
func readDoc(t *testing.T, path string) reader.Document {
	t.Helper()
	testReadersOnce.Do(func() {
		testReaders, testReadersErr = formats.New(context.Background(), formats.Options{PDF: pdf.Options{CacheDir: filepath.Join(os.TempDir(), "ragops-test-pdfium")}})
	})
	if testReadersErr != nil {
		t.Fatal(testReadersErr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := testReaders.Read(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// pageSpan computes the pages [first, last] that [start, end) overlaps from doc.Pages.
func pageSpan(doc reader.Document, start, end int) (int, int) {
	first, last := 0, 0
	for _, p := range doc.Pages {
		if p.Start < end && start < p.End {
			if first == 0 {
				first = p.Number
			}
			last = p.Number
		}
	}
	return first, last
}

var cellSplit = regexp.MustCompile(` {2,}`)

// tableRows parses the chunk rows of a table: the lines after the header line starting
// with "#" up to the first line that is not a row.
func tableRows(t *testing.T, out string) (cols []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "#  ") {
			continue
		}
		cols = cellSplit.Split(strings.TrimSpace(l), -1)
		for _, r := range lines[i+1:] {
			cells := cellSplit.Split(strings.TrimSpace(r), -1)
			if _, err := strconv.Atoi(cells[0]); err != nil || len(cells) != len(cols) {
				break
			}
			rows = append(rows, cells)
		}
		return cols, rows
	}
	t.Fatalf("no table in\n%s", out)
	return nil, nil
}

func words(s string) []string { return strings.FieldsFunc(s, unicode.IsSpace) }

// checkChunks asserts what must hold for the chunks of doc printed as JSON: spans in
// order slice the text exactly, every non-space byte is covered, the token counts equal
// the tokenizer's recount, page spans follow the pages, and the edge words are the span's.
func checkChunks(t *testing.T, doc reader.Document, chunks []preview.JSONChunk, tok *tokenize.Tokenizer) {
	t.Helper()
	covered := make([]bool, len(doc.Text))
	prevStart := -1
	for i, c := range chunks {
		if c.Ordinal != i || c.Start < prevStart || c.Start >= c.End || c.End > len(doc.Text) {
			t.Fatalf("chunk %d: ordinal %d span [%d, %d) after start %d, text of %d bytes", i, c.Ordinal, c.Start, c.End, prevStart, len(doc.Text))
		}
		prevStart = c.Start
		span := doc.Text[c.Start:c.End]
		if c.Prefix == "" && c.Text != span {
			t.Errorf("chunk %d: text is not the document's bytes [%d, %d)", i, c.Start, c.End)
		}
		for j := c.Start; j < c.End; j++ {
			covered[j] = true
		}
		w := words(span)
		if first := strings.Join(w[:min(5, len(w))], " "); c.FirstWords != first {
			t.Errorf("chunk %d: first words %q, the span starts with %q", i, c.FirstWords, first)
		}
		if last := strings.Join(w[max(0, len(w)-5):], " "); c.LastWords != last {
			t.Errorf("chunk %d: last words %q, the span ends with %q", i, c.LastWords, last)
		}
		if tok != nil {
			if c.Tokens == nil || *c.Tokens != tok.Size(c.Text) {
				t.Errorf("chunk %d: tokens %v, the tokenizer counts %d", i, c.Tokens, tok.Size(c.Text))
			}
		}
		first, last := pageSpan(doc, c.Start, c.End)
		if c.PageStart != first || c.PageEnd != last {
			t.Errorf("chunk %d: pages %d-%d, the span lies on %d-%d", i, c.PageStart, c.PageEnd, first, last)
		}
	}
	for j, r := range doc.Text {
		if !unicode.IsSpace(r) && !covered[j] {
			t.Fatalf("byte %d (%q) is in no chunk", j, doc.Text[j:min(len(doc.Text), j+20)])
		}
	}
}

// TestChunkDutchResolutionEveryFormat runs `ragops chunk --model` under Fixed 510 and
// Heading on the resolution in every format and checks the printed JSON and table against
// the document read independently and the tokenizer.
func TestChunkDutchResolutionEveryFormat(t *testing.T) {
	dir := modelDir(t)
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range dutchFormats {
		t.Run(ext, func(t *testing.T) {
			path := fixture(ext)
			doc := readDoc(t, path)
			for _, strategy := range []string{"fixed-510.yaml", "heading-510.yaml"} {
				args := []string{"-f", strategyFile(strategy), "--model", dir, path}
				chunks := jsonChunks(t, args...)
				checkChunks(t, doc, chunks, tok)
				if chunks[0].Start != 0 || chunks[0].FirstWords != "Raadsbesluit 2026-041 over de herinrichting" {
					t.Errorf("%s: chunk 0 starts at %d with %q", strategy, chunks[0].Start, chunks[0].FirstWords)
				}
				if last := chunks[len(chunks)-1].LastWords; last != "niet aan de stemming deelgenomen." {
					t.Errorf("%s: the last chunk ends with %q", strategy, last)
				}
				for _, c := range chunks {
					if c.File != path || c.MediaType != doc.MediaType || c.Unit != preview.UnitTokens {
						t.Fatalf("%s: chunk %d names %s %s %s", strategy, c.Ordinal, c.File, c.MediaType, c.Unit)
					}
				}
				if strategy == "heading-510.yaml" {
					checkHeadingPaths(t, doc, chunks)
				}

				// The table prints the same spans, token counts and heading paths.
				out, _, err := chunkCmd(t, args...)
				if err != nil {
					t.Fatal(err)
				}
				cols, rows := tableRows(t, out)
				if want := []string{"#", "SPAN", "PAGES", "TOKENS", "HEADING PATH", "FIRST WORDS … LAST WORDS"}; !slices.Equal(cols, want) {
					t.Fatalf("columns %q, want %q", cols, want)
				}
				if len(rows) != len(chunks) {
					t.Fatalf("%s: %d table rows, %d chunks", strategy, len(rows), len(chunks))
				}
				for i, r := range rows {
					c := chunks[i]
					tokens := strings.Fields(r[3])[0]
					wantPages := "-"
					if c.PageStart > 0 {
						wantPages = strconv.Itoa(c.PageStart)
						if c.PageEnd != c.PageStart {
							wantPages += "-" + strconv.Itoa(c.PageEnd)
						}
					}
					wantPath := "-"
					if len(c.HeadingPath) > 0 {
						wantPath = strings.Join(c.HeadingPath, " > ")
					}
					if r[1] != fmt.Sprintf("[%d, %d)", c.Start, c.End) || r[2] != wantPages || tokens != strconv.Itoa(tok.Size(doc.Text[c.Start:c.End])) || r[4] != wantPath {
						t.Errorf("%s row %d: %q, want span [%d, %d) pages %s tokens %d path %q", strategy, i, r, c.Start, c.End, wantPages, tok.Size(doc.Text[c.Start:c.End]), wantPath)
					}
					if !strings.HasPrefix(r[5], strconv.Quote(c.FirstWords)) {
						t.Errorf("%s row %d: words %s, want %q first", strategy, i, r[5], c.FirstWords)
					}
				}
				if !strings.Contains(out, fmt.Sprintf("chunks %d; tokens mean ", len(chunks))) {
					t.Errorf("%s: no summary for %d chunks in\n%s", strategy, len(chunks), out)
				}
			}
		})
	}
}

// checkHeadingPaths asserts the Heading strategy's paths: for formats whose reader hands
// the outline to the chunker (HTML, DOCX, ODT, PDF) the chunks walk the six sections in
// order, each chunk inside the outline section of its innermost heading; for every format,
// a printed path is a chain of headings of the document.
func checkHeadingPaths(t *testing.T, doc reader.Document, chunks []preview.JSONChunk) {
	t.Helper()
	var walked [][]string
	for _, c := range chunks {
		if len(c.HeadingPath) == 0 {
			continue
		}
		if len(walked) == 0 || !slices.Equal(walked[len(walked)-1], c.HeadingPath) {
			walked = append(walked, c.HeadingPath)
		}
		for _, h := range c.HeadingPath {
			if !strings.Contains(doc.Text[:c.End], h) {
				t.Errorf("chunk %d: heading %q of its path is not in the text before its end", c.Ordinal, h)
			}
		}
	}
	if doc.MediaType == reader.MediaTypeMarkdown || doc.MediaType == reader.MediaTypeText {
		return // these are chunked from their text (chunkers/docchunk)
	}
	if len(walked) != len(dutchSections) {
		t.Fatalf("%s: heading paths %q, want %q", doc.MediaType, walked, dutchSections)
	}
	for i := range walked {
		if !slices.Equal(walked[i], dutchSections[i]) {
			t.Errorf("%s: section %d has path %q, want %q", doc.MediaType, i, walked[i], dutchSections[i])
		}
	}
	for _, c := range chunks {
		inner := c.HeadingPath[len(c.HeadingPath)-1]
		i := slices.IndexFunc(doc.Outline, func(h reader.Heading) bool { return h.Title == inner })
		if i < 0 || c.Start < doc.Outline[i].Start || c.End > doc.Outline[i].End {
			t.Errorf("chunk %d [%d, %d) is not inside the section of %q", c.Ordinal, c.Start, c.End, inner)
		}
	}
}

// TestChunkWithoutModel checks sizes in the strategy's unit when no model is given: words
// for a Tokens strategy (and the output says so), code points for Characters.
func TestChunkWithoutModel(t *testing.T) {
	path := fixture("html")
	doc := readDoc(t, path)
	out, _, err := chunkCmd(t, "-f", strategyFile("fixed-510.yaml"), path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "sizes in words: spec.unit is Tokens but no --model was given") {
		t.Errorf("no note on the unit in\n%s", out)
	}
	chunks := jsonChunks(t, "-f", strategyFile("fixed-510.yaml"), path)
	checkChunks(t, doc, chunks, nil)
	for _, c := range chunks {
		if c.Unit != preview.UnitWords || c.Tokens != nil || c.Size != len(words(c.Text)) || c.Size > 510 {
			t.Errorf("chunk %d: unit %s tokens %v size %d, the span has %d words", c.Ordinal, c.Unit, c.Tokens, c.Size, len(words(c.Text)))
		}
	}

	chars := tempStrategy(t, "recursive-600c", "  type: Recursive\n  unit: Characters\n  size: 600\n  overlap: 60\n")
	chunks = jsonChunks(t, "-f", chars, path)
	checkChunks(t, doc, chunks, nil)
	if runes := len([]rune(doc.Text)); len(chunks) < runes/600 {
		t.Errorf("%d chunks of at most 600 characters for %d characters of text", len(chunks), runes)
	}
	for _, c := range chunks {
		if c.Unit != preview.UnitCharacters || c.Size != len([]rune(c.Text)) || c.Size > 600 {
			t.Errorf("chunk %d: unit %s size %d, the span has %d code points", c.Ordinal, c.Unit, c.Size, len([]rune(c.Text)))
		}
	}
}

// TestChunkCompare checks the side-by-side output: one row per chunk start of either
// strategy, in text order, with the right line numbers, cells and counts.
func TestChunkCompare(t *testing.T) {
	dir := modelDir(t)
	path := fixture("docx")
	doc := readDoc(t, path)
	a := jsonChunks(t, "-f", strategyFile("fixed-510.yaml"), "--model", dir, path)
	b := jsonChunks(t, "-f", strategyFile("heading-510.yaml"), "--model", dir, path)
	out, _, err := chunkCmd(t, "-f", strategyFile("fixed-510.yaml"), "--compare", strategyFile("heading-510.yaml"), "--model", dir, path)
	if err != nil {
		t.Fatal(err)
	}
	startsA, startsB := map[int]bool{}, map[int]bool{}
	for _, c := range a {
		startsA[c.Start] = true
	}
	for _, c := range b {
		startsB[c.Start] = true
	}
	var offsets []int
	shared := 0
	for off := range startsA {
		offsets = append(offsets, off)
		if startsB[off] {
			shared++
		}
	}
	for off := range startsB {
		if !startsA[off] {
			offsets = append(offsets, off)
		}
	}
	slices.Sort(offsets)

	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "OFFSET") })
	if i < 0 {
		t.Fatalf("no comparison header in\n%s", out)
	}
	// Cells sit at the header's column positions (tabwriter counts runes).
	hdr := []rune(lines[i])
	var at []int
	for _, name := range []string{"OFFSET", "LINE", "A fixed-510", "B heading-510", "TEXT AT OFFSET"} {
		k := strings.Index(lines[i], name)
		if k < 0 {
			t.Fatalf("no column %q in %q", name, lines[i])
		}
		at = append(at, len([]rune(lines[i][:k])))
	}
	at = append(at, len(hdr)+1000)
	for k, off := range offsets {
		row := []rune(lines[i+1+k])
		cell := func(c int) string {
			return strings.TrimSpace(string(row[min(at[c], len(row)):min(at[c+1], len(row))]))
		}
		if cell(0) != strconv.Itoa(off) || cell(1) != strconv.Itoa(1+strings.Count(doc.Text[:off], "\n")) {
			t.Fatalf("row %d %q, want offset %d", k, string(row), off)
		}
		for side, r := range [][]preview.JSONChunk{a, b} {
			want := ""
			if c := slices.IndexFunc(r, func(c preview.JSONChunk) bool { return c.Start == off }); c >= 0 {
				want = fmt.Sprintf("#%d %d tok", r[c].Ordinal, *r[c].Tokens)
				if p := r[c].HeadingPath; len(p) > 0 {
					want += " · " + p[len(p)-1]
				}
			} else if slices.ContainsFunc(r, func(c preview.JSONChunk) bool { return c.Start < off && off < c.End }) {
				want = "│"
			}
			if got := strings.TrimSuffix(strings.TrimSuffix(cell(2+side), " !truncated"), "…"); !strings.HasPrefix(want, got) || (got == "") != (want == "") {
				t.Errorf("row %d (offset %d) side %c: %q, want %q", k, off, 'A'+side, cell(2+side), want)
			}
		}
		if w := words(doc.Text[off:]); !strings.HasPrefix(cell(4), strconv.Quote(strings.Join(w[:min(5, len(w))], " "))) {
			t.Errorf("row %d: text %s, want the words at %d", k, cell(4), off)
		}
	}
	if want := fmt.Sprintf("chunk starts: A %d, B %d, shared %d", len(a), len(b), shared); !strings.Contains(out, want) {
		t.Errorf("want %q in\n%s", want, out)
	}
	if shared < 1 || len(b) < len(dutchSections) {
		t.Errorf("A %d and B %d chunks share %d starts", len(a), len(b), shared)
	}
}

// TestChunkLateWindows runs the sample strategy (Heading with late chunking, windows of 512
// tokens with 128 shared) and a small-window variant and checks the printed macro windows.
func TestChunkLateWindows(t *testing.T) {
	dir := modelDir(t)
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	small := tempStrategy(t, "sentence-late-64", "  type: Sentence\n  size: 48\n  late:\n    enabled: true\n    window: 66\n    windowOverlap: 16\n")
	path := fixture("pdf")
	doc := readDoc(t, path)
	n := tok.Size(doc.Text)
	for _, tc := range []struct {
		file            string
		window, overlap int
	}{
		{root("config", "samples", "ragops_v1alpha1_chunkingstrategy.yaml"), 512, 128},
		{small, 66, 16},
	} {
		chunks := jsonChunks(t, "-f", tc.file, "--model", dir, path)
		checkChunks(t, doc, chunks, tok)
		// Windows of window-2 content tokens advancing by window-2-overlap, the last
		// aligned to the end (embedder's long late chunking).
		size := tc.window - 2
		var wins [][2]int
		for s := 0; ; s += size - tc.overlap {
			if s+size >= n {
				wins = append(wins, [2]int{n - size, n})
				break
			}
			wins = append(wins, [2]int{s, s + size})
		}
		out, _, err := chunkCmd(t, "-f", tc.file, "--model", dir, path)
		if err != nil {
			t.Fatal(err)
		}
		enc := tok.Encode(doc.Text, false)
		for i, w := range wins {
			line := fmt.Sprintf("window %d: tokens [%d, %d), bytes [%d, %d)", i, w[0], w[1], enc.Offsets[w[0]].Start, enc.Offsets[w[1]-1].End)
			if !strings.Contains(out, line+"\n") {
				t.Errorf("window %d: want %q in\n%s", i, line, out)
			}
		}
		if strings.Contains(out, fmt.Sprintf("window %d:", len(wins))) {
			t.Errorf("more than %d windows in\n%s", len(wins), out)
		}
		cols, rows := tableRows(t, out)
		if cols[4] != "WINDOWS" || len(rows) != len(chunks) {
			t.Fatalf("columns %q, %d rows for %d chunks", cols, len(rows), len(chunks))
		}
		used := map[int]bool{}
		for i, c := range chunks {
			if len(c.Windows) == 0 || len(c.WindowSpans) != len(c.Windows) {
				t.Fatalf("chunk %d: windows %v spans %v", i, c.Windows, c.WindowSpans)
			}
			var ws []string
			for k, w := range c.Windows {
				used[w] = true
				ws = append(ws, strconv.Itoa(w))
				// A window a chunk pools from overlaps the chunk.
				if sp := c.WindowSpans[k]; sp[0] >= c.End || sp[1] <= c.Start {
					t.Errorf("chunk %d [%d, %d) pools from window %d [%d, %d), which does not overlap it", i, c.Start, c.End, w, sp[0], sp[1])
				}
			}
			if rows[i][4] != strings.Join(ws, ",") {
				t.Errorf("row %d windows %q, want %v", i, rows[i][4], c.Windows)
			}
		}
		if len(used) != len(wins) {
			t.Errorf("chunks pool from %d of %d windows", len(used), len(wins))
		}
		if tc.window == 66 && len(wins) < 10 {
			t.Errorf("only %d windows of 64 tokens over %d tokens", len(wins), n)
		}
	}
}

// TestChunkCorpusLimit chunks the first documents of the SciFact corpus.jsonl with --limit.
func TestChunkCorpusLimit(t *testing.T) {
	ds := os.Getenv("RAGOPS_DATASETS")
	if ds == "" {
		ds = root("..", "..", "shared", "datasets")
	}
	corpus := filepath.Join(ds, "scifact", "corpus.jsonl")
	f, err := os.Open(corpus)
	if err != nil {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	var ids []string
	texts, titles := map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for len(ids) < 3 && sc.Scan() {
		var rec struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
		texts[rec.ID] = rec.Title + "\n\n" + rec.Text
		titles[rec.ID] = rec.Title
	}
	f.Close()
	chunks := jsonChunks(t, "-f", strategyFile("heading-510.yaml"), "--limit", "3", corpus)
	var seen []string
	for _, c := range chunks {
		if len(seen) == 0 || seen[len(seen)-1] != c.Document {
			seen = append(seen, c.Document)
		}
		// A record is read as its title (a level-1 heading), a blank line and its text.
		if c.MediaType != reader.MediaTypeBEIR || c.End > len(texts[c.Document]) || texts[c.Document][c.Start:c.End] != c.Text {
			t.Errorf("chunk %d of %s: %q is not bytes [%d, %d) of its record", c.Ordinal, c.Document, c.Text, c.Start, c.End)
		}
		if !slices.Equal(c.HeadingPath, []string{titles[c.Document]}) {
			t.Errorf("chunk %d of %s: heading path %q, want the title", c.Ordinal, c.Document, c.HeadingPath)
		}
	}
	if !slices.Equal(seen, ids) {
		t.Errorf("documents %v, want the first three %v", seen, ids)
	}
}

// TestChunkSkippedFileIsReported checks that a file a build would skip is named with its
// reason and fails the command, while the other files are still printed.
func TestChunkSkippedFileIsReported(t *testing.T) {
	out, stderr, err := chunkCmd(t, "-f", strategyFile("fixed-510.yaml"), fixture("md"), root("reader", "testdata", "encrypted.pdf"))
	if err == nil || err.Error() != "documents skipped: 1" {
		t.Errorf("err = %v, want documents skipped: 1", err)
	}
	if !strings.Contains(stderr, "encrypted.pdf: skipped (Encrypted)") {
		t.Errorf("stderr %q does not name the encrypted file", stderr)
	}
	if !strings.Contains(out, "raadsbesluit.md: text/markdown") {
		t.Errorf("the readable file is missing from\n%s", out)
	}
}

// TestChunkInvalidStrategyMatchesAPIServer runs the command with a strategy whose overlap
// equals its size, and with one that has an unknown field, and requires the error to be
// the message the envtest kube-apiserver (CRDs installed) gives for the same YAML.
func TestChunkInvalidStrategyMatchesAPIServer(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		if errors.Is(err, testenv.ErrNoAssets) && os.Getenv("RAGOPS_REQUIRE_ALL") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	unknown := tempStrategy(t, "typo", "  type: Heading\n  heading:\n    markdwn: true\n")
	for _, file := range []string{strategyFile("overlap-too-large.yaml"), unknown} {
		manifest, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var resp *http.Response
		var body []byte
		// The CRD's endpoint can lag its discovery entry: retry a bare 404 for a while.
		for try := 0; ; try++ {
			req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(env.Config.Host, "/")+"/apis/ragops.dev/v1alpha1/namespaces/default/chunkingstrategies?fieldValidation=Strict", bytes.NewReader(manifest))
			req.Header.Set("Content-Type", "application/yaml")
			if resp, err = hc.Do(req); err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || try == 20 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil || st.Status != metav1.StatusFailure {
			t.Fatalf("kube-apiserver answered HTTP %d %s", resp.StatusCode, body)
		}
		_, _, err = chunkCmd(t, "-f", file, fixture("md"))
		if err == nil {
			t.Fatalf("%s was accepted", file)
		}
		if want := file + ": " + st.Message; err.Error() != want {
			t.Errorf("error\n got: %s\nwant: %s", err, want)
		}
		t.Logf("kube-apiserver: %s", st.Message)
	}
}

// TestChunkSemanticWithModel runs a Semantic strategy, whose cuts come from sentence
// embeddings, with the model on ONNX Runtime.
func TestChunkSemanticWithModel(t *testing.T) {
	dir := modelDir(t)
	if os.Getenv("RAGOPS_ONNXRUNTIME_LIB") == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal("RAGOPS_ONNXRUNTIME_LIB is not set: run hack/prepare.d/embedder.sh")
		}
		t.Skip("RAGOPS_ONNXRUNTIME_LIB is not set: run hack/prepare.d/embedder.sh")
	}
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := tempStrategy(t, "semantic-128", "  type: Semantic\n  size: 128\n  semantic:\n    thresholdAmount: \"80\"\n")
	path := fixture("odt")
	doc := readDoc(t, path)
	chunks := jsonChunks(t, "-f", s, "--model", dir, path)
	checkChunks(t, doc, chunks, tok)
	if len(chunks) < 9 {
		t.Errorf("%d chunks of at most 128 tokens over %d tokens", len(chunks), tok.Size(doc.Text))
	}
	for _, c := range chunks {
		if *c.Tokens > 128 && !c.Oversize {
			t.Errorf("chunk %d: %d tokens over the size of 128", c.Ordinal, *c.Tokens)
		}
	}
}

// Scanned documents are previewed as a build reads them: the two-page scanned resolution,
// as an image-only PDF and as a multi-page TIFF, is read by OCR (both pages counted in the
// header) and cut at its decision sections, Stemverhouding on page 2. With --ocr Never
// both are skipped with the build's reasons.
func TestChunkScannedDocumentsByOCR(t *testing.T) {
	ocrtest.Require(t)
	scans := []string{root("reader", "testdata", "ocr", "raadsbesluit-scan.pdf"), root("reader", "testdata", "ocr", "raadsbesluit-scan.tiff")}
	args := append([]string{"-f", strategyFile("besluit-koppen-128.yaml")}, scans...)
	out, stderr, err := chunkCmd(t, args...)
	if err != nil {
		t.Fatalf("ragops chunk: %v\n%s", err, stderr)
	}
	if n := strings.Count(out, "2 pages (2 read by OCR"); n != 2 {
		t.Errorf("%d documents with 2 pages read by OCR, want 2:\n%s", n, out)
	}
	chunks := jsonChunks(t, args...)
	under := map[string][]int{} // heading -> first page of each chunk under it, both documents
	for _, c := range chunks {
		if len(c.HeadingPath) > 0 {
			h := c.HeadingPath[len(c.HeadingPath)-1]
			under[h] = append(under[h], c.PageStart)
		}
	}
	for _, h := range []string{"Beslispunt 1", "Beslispunt 2", "Motivering", "Stemverhouding"} {
		if len(under[h]) != 2 {
			t.Errorf("heading %q: %d chunks under it, want one per document; headings %v", h, len(under[h]), under)
		}
	}
	if got := under["Stemverhouding"]; len(got) != 2 || got[0] != 2 || got[1] != 2 {
		t.Errorf("Stemverhouding chunks start on pages %v, want [2 2]", got)
	}
	_, stderr, err = chunkCmd(t, append([]string{"--ocr", "never"}, args...)...)
	if err == nil || err.Error() != "documents skipped: 2" {
		t.Errorf("--ocr never: err %v, want documents skipped: 2", err)
	}
	for _, want := range []string{"raadsbesluit-scan.pdf: skipped (NoTextLayer)", "raadsbesluit-scan.tiff: skipped (Unsupported)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--ocr never: stderr %q does not say %q", stderr, want)
		}
	}
	if _, _, err := chunkCmd(t, append([]string{"--ocr", "sometimes"}, args...)...); err == nil || !strings.Contains(err.Error(), "Auto, Always or Never") {
		t.Errorf("--ocr sometimes: err %v, want the modes named", err)
	}
}

// e5Dir returns RAGOPS_E5_SMALL_DIR (hack/prepare.d/models.sh), skipping without it or
// failing under RAGOPS_REQUIRE_ALL=1.
func e5Dir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("RAGOPS_E5_SMALL_DIR")
	if d == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal("RAGOPS_E5_SMALL_DIR is not set: run hack/prepare.d/models.sh")
		}
		t.Skip("RAGOPS_E5_SMALL_DIR is not set: run hack/prepare.d/models.sh")
	}
	return d
}

// TestChunkRefusesWhatTheBuildRefuses runs `ragops chunk --model` with sizes and late
// windows a build with that model refuses (registry.CheckModelLimits, as pipeline/build
// calls it): the command fails before reading any file, naming the field and both numbers,
// the document prefix's positions included (e5's "passage: " is 2 tokens, "passage" and
// ":", so 508 tokens of text fit its 512 positions), with the build's
// message. The largest sizes that fit are accepted.
func TestChunkRefusesWhatTheBuildRefuses(t *testing.T) {
	minilm, e5 := modelDir(t), e5Dir(t)
	for _, tc := range []struct {
		model, spec string
		want        string // "" when accepted
	}{
		{minilm, "  type: Fixed\n  size: 600\n", "spec.size 600 tokens needs 602 positions, over model all-minilm-l6-v2's limit of 512 positions"},
		{minilm, "  type: Fixed\n  size: 512\n", "spec.size 512 tokens needs 514 positions"},
		{minilm, "  type: Fixed\n  size: 510\n", ""},
		{e5, "  type: Fixed\n  size: 510\n", "spec.size 510 tokens needs 514 positions, over model e5-small-v2's limit of 512 positions (room for 508 tokens"},
		{e5, "  type: Recursive\n  size: 509\n", "spec.size 509 tokens needs 513 positions"},
		{e5, "  type: Fixed\n  size: 508\n", ""},
		{minilm, "  type: Sentence\n  size: 128\n  late:\n    enabled: true\n    window: 1024\n", "spec.late.window 1024 tokens needs 1024 positions, over model all-minilm-l6-v2's limit of 512 positions"},
		{minilm, "  type: Sentence\n  size: 128\n  late:\n    enabled: true\n    window: 512\n", ""},
	} {
		file := tempStrategy(t, "s", tc.spec)
		doc := fixture("md")
		if tc.want != "" {
			doc = filepath.Join(t.TempDir(), "missing.md") // refused before any file is read
		}
		_, _, err := chunkCmd(t, "-f", file, "--model", tc.model, doc)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s with %s: %v", strings.TrimSpace(tc.spec), filepath.Base(tc.model), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "ModelLimitExceeded: "+tc.want) {
			t.Errorf("%s with %s: err = %v, want ModelLimitExceeded: %s...", strings.TrimSpace(tc.spec), filepath.Base(tc.model), err, tc.want)
		}
	}
}
