// Package beir loads retrieval data sets in the BEIR layout (Thakur et al. 2021, "BEIR: A
// Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models"):
//
//	corpus.jsonl       one document a line: {"_id": "...", "title": "...", "text": "..."}
//	queries.jsonl      one query a line:    {"_id": "...", "text": "..."}
//	qrels/<split>.tsv  query-id <TAB> corpus-id <TAB> score, with an optional header line
//	query_spans.jsonl  optional (QMSum): relevant byte spans per query and document
//
// A data set is read from an io/fs.FS, so the caller decides where it lives: a folder
// (os.DirFS), a ConfigMap's data (ConfigMapFS) or an archive fetched from a URL (Fetch).
//
// corpus.jsonl is optional: an evaluation needs only queries and judgements, and a team whose
// documents are PDFs has no corpus.jsonl to give. Where it is present, Options.Texts says whose
// text is kept in memory (every document's, or only those query_spans.jsonl names).
//
// Every malformed line is an error naming the file and the 1-based line. Judgements that name
// a query absent from queries.jsonl, or a document absent from a present corpus.jsonl, are
// never used: they are counted in Dataset.Dropped, with a few examples, for the caller to report.
package beir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	readerbeir "github.com/ragops/ragops/reader/beir"
)

// File names of the BEIR layout, relative to the data set's root.
const (
	CorpusFile     = "corpus.jsonl"
	QueriesFile    = "queries.jsonl"
	QrelsDir       = "qrels"
	QuerySpansFile = "query_spans.jsonl"
)

// maxLine bounds one JSONL line (a whole document); QMSum's longest meeting is about 200 KB.
const maxLine = 64 << 20

// Document is one corpus entry. Text is the document body exactly as in corpus.jsonl;
// byte offsets of spans index into it.
type Document struct {
	ID    string
	Title string
	Text  string
}

// Query is one query of queries.jsonl.
type Query struct {
	ID   string
	Text string
}

// Span is a half-open byte range [Start, End). In Dataset.Spans it indexes into the document
// ragops indexes for a corpus record (reader/beir.FromFields: the title, a blank line, then
// Text), the offsets chunks carry; query_spans.jsonl's byte_spans index into Text and are
// shifted by reader/beir.BodyStart(Title) when loaded.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// QuerySpans lists, for one query, the relevant byte spans of one document.
type QuerySpans struct {
	QueryID string
	DocID   string
	Spans   []Span
}

// Qrels maps query ID -> document ID -> graded relevance (BEIR "score"; > 0 is relevant).
type Qrels map[string]map[string]int

// Dropped counts judgements that were read but not used because they name an unknown query or
// document. Examples holds up to MaxDroppedExamples "file:line: reason" strings.
type Dropped struct {
	UnknownQueries   int      `json:"unknownQueries"`
	UnknownDocuments int      `json:"unknownDocuments"`
	Examples         []string `json:"examples,omitempty"`
}

// MaxDroppedExamples bounds Dropped.Examples.
const MaxDroppedExamples = 5

// Total returns the number of dropped judgements.
func (d Dropped) Total() int { return d.UnknownQueries + d.UnknownDocuments }

func (d *Dropped) add(example string) {
	if len(d.Examples) < MaxDroppedExamples {
		d.Examples = append(d.Examples, example)
	}
}

// Dataset is a loaded BEIR split. Queries holds only the queries that have at least one
// judgement in the split, in queries.jsonl order (BEIR evaluates exactly those).
type Dataset struct {
	Split string
	// Corpus holds the documents of corpus.jsonl whose text Options.Texts keeps, in file order;
	// empty when the data set has no corpus.jsonl.
	Corpus  []Document
	Queries []Query
	Qrels   Qrels
	// Spans holds query_spans.jsonl entries of the split's queries; nil when the file is absent.
	Spans map[string][]QuerySpans
	// Dropped counts judgements not used (unknown query or document).
	Dropped Dropped
	// Judgements is the number of (query, document) judgements used.
	Judgements int

	// docIndex maps every ID of corpus.jsonl to its index in Corpus, or -1 where the text
	// was not kept; nil when there is no corpus.jsonl.
	docIndex map[string]int
}

// Doc returns the document with the given ID; false when corpus.jsonl does not list it or
// its text was not kept (Options.Texts).
func (d *Dataset) Doc(id string) (Document, bool) {
	i, ok := d.docIndex[id]
	if !ok || i < 0 {
		return Document{}, false
	}
	return d.Corpus[i], true
}

// HasCorpus reports whether the data set has a corpus.jsonl.
func (d *Dataset) HasCorpus() bool { return d.docIndex != nil }

// Texts selects the documents of corpus.jsonl whose title and text Load keeps in memory.
type Texts int

const (
	// TextsAll keeps every document (the zero value): a reranker that cuts chunk text from
	// the corpus by offsets, or a tool that indexes the corpus, needs them all.
	TextsAll Texts = iota
	// TextsSpans keeps only the documents query_spans.jsonl names for the split (span offsets
	// follow the title and are checked against the text's length); the other documents are
	// listed by ID only, so an archive-size corpus.jsonl costs its IDs, not its text.
	TextsSpans
)

// Options select what Load reads.
type Options struct {
	// Split names qrels/<Split>.tsv; required (BEIR uses "test", "dev", "train").
	Split string
	// SkipSpans ignores query_spans.jsonl even when present.
	SkipSpans bool
	// Texts selects the documents whose text is kept; default TextsAll.
	Texts Texts
}

// Load reads a BEIR data set from fsys (paths relative to its root). The judgements are
// qrels/<split>.tsv or, where that is absent, qrels-<split>.tsv at the root (a ConfigMap data
// set mounted as a folder, see ConfigMapFS). Errors name the file and line; a missing
// queries.jsonl or judgements file is an error, a missing corpus.jsonl is not (judgements
// are then not checked against it), but query_spans.jsonl needs it for its documents' titles.
func Load(fsys fs.FS, opts Options) (*Dataset, error) {
	if opts.Split == "" {
		return nil, errors.New("beir: no split given (the name of qrels/<split>.tsv, e.g. test)")
	}
	if strings.ContainsAny(opts.Split, "/\\") || opts.Split == "." || opts.Split == ".." {
		return nil, fmt.Errorf("beir: split %q is not a plain file name", opts.Split)
	}
	ds := &Dataset{Split: opts.Split, Qrels: Qrels{}}
	// query_spans.jsonl is read first (it is small) so that the corpus scan knows whose
	// text the spans need.
	var spans []rawSpans
	if !opts.SkipSpans && fileExists(fsys, QuerySpansFile) {
		var err error
		if spans, err = readRawSpans(fsys); err != nil {
			return nil, err
		}
	}
	if fileExists(fsys, CorpusFile) {
		keep := func(string) bool { return true }
		if opts.Texts == TextsSpans {
			named := map[string]bool{}
			for _, s := range spans {
				named[s.docID] = true
			}
			keep = func(id string) bool { return named[id] }
		}
		if err := ds.readCorpus(fsys, keep); err != nil {
			return nil, err
		}
	}

	var allQueries []Query
	queryIndex := map[string]int{}
	if err := readJSONL(fsys, QueriesFile, func(line int, raw []byte) error {
		var rec struct {
			ID   json.RawMessage `json:"_id"`
			Text *string         `json:"text"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		id, err := parseID(rec.ID)
		if err != nil {
			return err
		}
		if rec.Text == nil {
			return errors.New(`no "text" field`)
		}
		if strings.TrimSpace(*rec.Text) == "" {
			return fmt.Errorf("query %q has empty text", id)
		}
		if _, dup := queryIndex[id]; dup {
			return fmt.Errorf("duplicate _id %q", id)
		}
		queryIndex[id] = len(allQueries)
		allQueries = append(allQueries, Query{ID: id, Text: *rec.Text})
		return nil
	}); err != nil {
		return nil, err
	}

	qrelsName := path.Join(QrelsDir, opts.Split+".tsv")
	if _, err := fs.Stat(fsys, qrelsName); errors.Is(err, fs.ErrNotExist) {
		// A ConfigMap data set mounted as a folder: its keys are files at the root
		// (ConfigMapFS's qrels-<split>.tsv; a key cannot hold a slash).
		if flat := "qrels-" + opts.Split + ".tsv"; fileExists(fsys, flat) {
			qrelsName = flat
		}
	}
	if err := ds.readQrels(fsys, qrelsName, queryIndex); err != nil {
		return nil, err
	}
	if len(ds.Qrels) == 0 {
		return nil, fmt.Errorf("beir: %s has no judgement naming a known query and document (%d dropped: %s)",
			qrelsName, ds.Dropped.Total(), strings.Join(ds.Dropped.Examples, "; "))
	}
	for _, q := range allQueries {
		if _, ok := ds.Qrels[q.ID]; ok {
			ds.Queries = append(ds.Queries, q)
		}
	}

	if spans != nil {
		if err := ds.addSpans(spans); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// readCorpus lists every document of corpus.jsonl and keeps the title and text of those
// keep selects.
func (ds *Dataset) readCorpus(fsys fs.FS, keep func(id string) bool) error {
	ds.docIndex = map[string]int{}
	if err := readJSONL(fsys, CorpusFile, func(line int, raw []byte) error {
		var rec struct {
			ID    json.RawMessage `json:"_id"`
			Title *string         `json:"title"`
			Text  *string         `json:"text"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		id, err := parseID(rec.ID)
		if err != nil {
			return err
		}
		if rec.Text == nil {
			return errors.New(`no "text" field`)
		}
		if _, dup := ds.docIndex[id]; dup {
			return fmt.Errorf("duplicate _id %q", id)
		}
		if !keep(id) {
			ds.docIndex[id] = -1
			return nil
		}
		doc := Document{ID: id, Text: *rec.Text}
		if rec.Title != nil {
			doc.Title = *rec.Title
		}
		ds.docIndex[id] = len(ds.Corpus)
		ds.Corpus = append(ds.Corpus, doc)
		return nil
	}); err != nil {
		return err
	}
	if len(ds.docIndex) == 0 {
		return fmt.Errorf("beir: %s has no documents", CorpusFile)
	}
	return nil
}

// parseID accepts a JSON string or number as an _id (some BEIR exports write numbers).
func parseID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", errors.New(`no "_id" field`)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", errors.New(`empty "_id"`)
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf(`"_id" is %s, want a string or number`, raw)
}

// readJSONL calls fn for each non-blank line of name; errors are wrapped with file:line.
func readJSONL(fsys fs.FS, name string, fn func(line int, raw []byte) error) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("beir: %w", err)
	}
	defer f.Close()
	return scanLines(f, name, func(line int, raw []byte) error {
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil
		}
		return fn(line, raw)
	})
}

func scanLines(r io.Reader, name string, fn func(line int, raw []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	line := 0
	for sc.Scan() {
		line++
		if err := fn(line, sc.Bytes()); err != nil {
			return fmt.Errorf("beir: %s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("beir: %s: after line %d: %w", name, line, err)
	}
	return nil
}

func (ds *Dataset) readQrels(fsys fs.FS, name string, queryIndex map[string]int) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("beir: %w", err)
	}
	defer f.Close()
	seen := map[[2]string]int{}
	return scanLines(f, name, func(line int, raw []byte) error {
		text := strings.TrimRight(string(raw), "\r")
		if strings.TrimSpace(text) == "" {
			return nil
		}
		fields := strings.Split(text, "\t")
		if len(fields) != 3 {
			return fmt.Errorf("want 3 tab-separated fields (query-id, corpus-id, score), got %d", len(fields))
		}
		qid, did, scoreText := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1]), strings.TrimSpace(fields[2])
		if line == 1 && qid == "query-id" {
			return nil // header
		}
		if qid == "" || did == "" {
			return errors.New("empty query-id or corpus-id")
		}
		score, err := strconv.Atoi(scoreText)
		if err != nil {
			return fmt.Errorf("score %q is not an integer", scoreText)
		}
		key := [2]string{qid, did}
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("duplicate judgement for query %q, document %q (first on line %d)", qid, did, prev)
		}
		seen[key] = line
		if _, ok := queryIndex[qid]; !ok {
			ds.Dropped.UnknownQueries++
			ds.Dropped.add(fmt.Sprintf("%s:%d: query %q not in %s", name, line, qid, QueriesFile))
			return nil
		}
		if _, ok := ds.docIndex[did]; !ok && ds.HasCorpus() {
			ds.Dropped.UnknownDocuments++
			ds.Dropped.add(fmt.Sprintf("%s:%d: document %q not in %s", name, line, did, CorpusFile))
			return nil
		}
		m := ds.Qrels[qid]
		if m == nil {
			m = map[string]int{}
			ds.Qrels[qid] = m
		}
		m[did] = score
		ds.Judgements++
		return nil
	})
}

// rawSpans is one line of query_spans.jsonl before its document is looked up.
type rawSpans struct {
	line           int
	queryID, docID string
	byteSpans      [][2]int
}

func readRawSpans(fsys fs.FS) ([]rawSpans, error) {
	out := []rawSpans{}
	err := readJSONL(fsys, QuerySpansFile, func(line int, raw []byte) error {
		var rec struct {
			QueryID   *string  `json:"query-id"`
			CorpusID  *string  `json:"corpus-id"`
			ByteSpans [][2]int `json:"byte_spans"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		if rec.QueryID == nil || rec.CorpusID == nil {
			return errors.New(`want "query-id" and "corpus-id"`)
		}
		out = append(out, rawSpans{line: line, queryID: *rec.QueryID, docID: *rec.CorpusID, byteSpans: rec.ByteSpans})
		return nil
	})
	return out, err
}

// addSpans keeps the spans of the split's queries, shifted by their document's title.
func (ds *Dataset) addSpans(spans []rawSpans) error {
	ds.Spans = map[string][]QuerySpans{}
	for _, rec := range spans {
		if _, ok := ds.Qrels[rec.queryID]; !ok {
			continue // a query of another split
		}
		err := func() error {
			if !ds.HasCorpus() {
				return fmt.Errorf("document %q: spans need %s (their offsets follow the title)", rec.docID, CorpusFile)
			}
			doc, ok := ds.Doc(rec.docID)
			if !ok {
				return fmt.Errorf("document %q not in %s", rec.docID, CorpusFile)
			}
			if len(rec.byteSpans) == 0 {
				return errors.New(`no "byte_spans"`)
			}
			qs := QuerySpans{QueryID: rec.queryID, DocID: doc.ID}
			// Chunks are cut from the title, a blank line and the text (reader/beir), so their
			// offsets are the text's shifted by the title; the spans follow them.
			body := readerbeir.BodyStart(doc.Title)
			for _, s := range rec.byteSpans {
				if s[0] < 0 || s[1] <= s[0] || s[1] > len(doc.Text) {
					return fmt.Errorf("byte span [%d, %d) outside document %q (%d bytes) or empty", s[0], s[1], doc.ID, len(doc.Text))
				}
				qs.Spans = append(qs.Spans, Span{Start: body + s[0], End: body + s[1]})
			}
			sort.Slice(qs.Spans, func(i, j int) bool { return qs.Spans[i].Start < qs.Spans[j].Start })
			ds.Spans[qs.QueryID] = append(ds.Spans[qs.QueryID], qs)
			return nil
		}()
		if err != nil {
			return fmt.Errorf("beir: %s:%d: %w", QuerySpansFile, rec.line, err)
		}
	}
	return nil
}

func fileExists(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && !st.IsDir()
}
