package reader

import (
	"strings"
	"time"
)

// Keys of Document.Metadata set by the format readers (see the package doc for which
// format sets which). Values are JSON values: strings for the fixed keys, dates as RFC 3339.
const (
	// MetaTitle is the document's own title (PDF Title, DOCX/ODT dc:title, HTML <title>,
	// Markdown front matter "title", BEIR "title").
	MetaTitle = "title"
	// MetaAuthor is its author (PDF Author, DOCX dc:creator, ODT meta:initial-creator or
	// else dc:creator, Markdown front matter "author" when a string).
	MetaAuthor = "author"
	// MetaCreated is when it was created (PDF CreationDate, DOCX dcterms:created, ODT
	// meta:creation-date), RFC 3339 when it parses (see NormalizeDate).
	MetaCreated = "created"
	// MetaModified is when it was last modified (PDF ModDate, DOCX dcterms:modified, ODT
	// dc:date), RFC 3339 when it parses.
	MetaModified = "modified"
	// MetaNamedPrefix prefixes a named field the document declares: HTML
	// <meta name="n" content="v"> gives "meta.n" (name lower-cased), a BEIR record's
	// "metadata" object's key k gives "meta.k" (value as stored).
	MetaNamedPrefix = "meta."
	// MetaFrontMatterPrefix prefixes each top-level key of a Markdown YAML front matter,
	// with its value as YAML gives it (string, number, boolean, list, object).
	MetaFrontMatterPrefix = "frontmatter."
)

// SetMeta sets d.Metadata[key] to v with surrounding white space trimmed; an empty value
// sets nothing.
func (d *Document) SetMeta(key, v string) {
	if v = strings.TrimSpace(v); v == "" {
		return
	}
	if d.Metadata == nil {
		d.Metadata = map[string]any{}
	}
	d.Metadata[key] = v
}

// dateLayouts are the ISO 8601 forms NormalizeDate accepts, most specific first; those
// without a zone are read as UTC.
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02",
}

// NormalizeDate returns s (an ISO 8601 date or date-time, as W3CDTF in DOCX and ODF
// metadata) as RFC 3339 (time.RFC3339Nano, so without a zero fraction); a value without a
// zone is read as UTC. A value that does not parse is returned trimmed, as written.
func NormalizeDate(s string) string {
	s = strings.TrimSpace(s)
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.Format(time.RFC3339Nano)
		}
	}
	return s
}
