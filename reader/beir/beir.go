// Package beir reads BEIR corpus.jsonl files (Thakur et al. 2021, "BEIR: A Heterogeneous
// Benchmark for Zero-shot Evaluation of Information Retrieval Models"): one JSON object per
// line with "_id", "text" and an optional "title" and "metadata" object.
//
// Each line becomes one reader.Document: the title, whitespace-collapsed, as a level-1
// heading, then a blank line, then the text exactly as stored, so byte offsets into the
// corpus text (QMSum's annotated spans, for instance) stay valid after adding BodyStart.
// Markdown headings in the text (as in legalqa-nl, whose laws are "# title", "## Hoofdstuk
// 1", "### Artikel 1") join the outline after the title, found by a CommonMark parse so
// that code-block lines never count. Document.Metadata holds the title as
// reader.MetaTitle and each key k of "metadata" as reader.MetaNamedPrefix + k, its JSON
// value as stored.
//
// Tests read the real SciFact and QMSum corpora from ../shared/datasets (relative to the
// repository root); when they are missing the tests skip, or fail if RAGOPS_REQUIRE_ALL=1.
// evaluator/beir loads whole data sets (queries, qrels, spans) for evaluation; this package
// only turns corpus lines into reader.Documents for indexing.
package beir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

// MaxLineBytes is the longest corpus line Scan accepts: 64 MiB.
const MaxLineBytes = 64 << 20

// Entry is one corpus line read by Scan.
type Entry struct {
	// Line is the 1-based line number in the file.
	Line int
	// ID is the document's "_id" (a JSON string or number).
	ID string
	// Doc is the document; its Outline holds the title as a level-1 heading when there is one.
	Doc reader.Document
	// BodyStart is the byte offset of the corpus "text" field in Doc.Text.
	BodyStart int
	// Err is a *reader.SkipError for a line that cannot be used (Corrupt JSON, missing
	// "_id" or "text", Empty text); the other fields are then unset except Line.
	Err error
}

// BodyStart returns the byte offset at which a record's "text" field starts in the document
// FromFields builds from it: 0 without a title, else the whitespace-collapsed title's length
// plus 2 (the blank line). Chunk offsets are offsets into that document, so a byte offset b
// into the corpus text (an annotated span) is BodyStart(title) + b there.
func BodyStart(title string) int {
	if t := reader.CollapseSpace(title); t != "" {
		return len(t) + 2
	}
	return 0
}

// FromFields builds the document for one corpus record: its outline is the title (level 1)
// followed by the text's Markdown headings at their own levels, each section ending where
// reader.SetSectionEnds puts it.
func FromFields(title, text string) (doc reader.Document, bodyStart int) {
	doc.MediaType = reader.MediaTypeBEIR
	title = reader.CollapseSpace(title)
	if title == "" {
		doc.Text = text
	} else {
		doc.Text = title + "\n\n" + text
		bodyStart = BodyStart(title)
		doc.Outline = []reader.Heading{{Level: 1, Title: title}}
	}
	for _, h := range markup.Headings(text) {
		h.Start += bodyStart
		doc.Outline = append(doc.Outline, h)
	}
	reader.SetSectionEnds(doc.Outline, len(doc.Text))
	if len(doc.Outline) == 0 {
		doc.Outline = nil
	}
	return doc, bodyStart
}

// ParseLine parses one corpus line.
func ParseLine(line []byte) (id string, doc reader.Document, bodyStart int, err error) {
	var rec struct {
		ID    json.RawMessage `json:"_id"`
		Title *string         `json:"title"`
		Text  *string         `json:"text"`
		Meta  json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		return "", doc, 0, reader.Skip(reader.Corrupt, reader.MediaTypeBEIR, err, "line is not a JSON object")
	}
	switch {
	case len(rec.ID) == 0:
		return "", doc, 0, reader.Skip(reader.Corrupt, reader.MediaTypeBEIR, nil, `no "_id" field`)
	case rec.ID[0] == '"':
		if err := json.Unmarshal(rec.ID, &id); err != nil {
			return "", doc, 0, reader.Skip(reader.Corrupt, reader.MediaTypeBEIR, err, `bad "_id"`)
		}
	default:
		var n json.Number
		if err := json.Unmarshal(rec.ID, &n); err != nil {
			return "", doc, 0, reader.Skip(reader.Corrupt, reader.MediaTypeBEIR, err, `"_id" is neither a string nor a number`)
		}
		id = n.String()
	}
	if rec.Text == nil {
		return id, doc, 0, reader.Skip(reader.Corrupt, reader.MediaTypeBEIR, nil, `document %q has no "text" field`, id)
	}
	title := ""
	if rec.Title != nil {
		title = *rec.Title
	}
	doc, bodyStart = FromFields(title, *rec.Text)
	if len(bytes.TrimSpace([]byte(doc.Text))) == 0 {
		return id, reader.Document{}, 0, reader.Skip(reader.Empty, reader.MediaTypeBEIR, nil, "document %q has no title and no text", id)
	}
	doc.SetMeta(reader.MetaTitle, reader.CollapseSpace(title))
	// "metadata" is an object in BEIR's format (often empty); anything else carries no
	// named fields and is ignored, as the record is still a document.
	var fields map[string]any
	if len(rec.Meta) > 0 && json.Unmarshal(rec.Meta, &fields) == nil {
		for k, v := range fields {
			if doc.Metadata == nil {
				doc.Metadata = map[string]any{}
			}
			doc.Metadata[reader.MetaNamedPrefix+k] = v
		}
	}
	return id, doc, bodyStart, nil
}

// Scan calls fn for every non-blank line of a corpus.jsonl stream, in order. Bad lines
// reach fn with Entry.Err set; Scan itself fails only on read errors, on lines longer than
// MaxLineBytes, or when fn returns an error.
func Scan(r io.Reader, fn func(Entry) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		e := Entry{Line: n}
		e.ID, e.Doc, e.BodyStart, e.Err = ParseLine(line)
		if e.Err != nil {
			e.Err = fmt.Errorf("corpus line %d: %w", n, e.Err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("corpus line %d: %w", n+1, err)
	}
	return nil
}

// Reader is a reader.FormatReader for a corpus.jsonl of exactly one document; a file with
// more lines is reader.Unsupported there (a corpus is many documents: use Scan).
type Reader struct{}

// MediaTypes implements reader.FormatReader.
func (Reader) MediaTypes() []string { return []string{reader.MediaTypeBEIR} }

// Read implements reader.FormatReader.
func (Reader) Read(_ context.Context, data []byte, mediaType string) (reader.Document, error) {
	data = bytes.TrimSpace(data)
	if n := bytes.Count(data, []byte("\n")); n > 0 {
		return reader.Document{}, reader.Skip(reader.Unsupported, mediaType, nil,
			"a BEIR corpus of %d lines holds many documents; read it with beir.Scan", n+1)
	}
	_, doc, _, err := ParseLine(data)
	return doc, err
}
