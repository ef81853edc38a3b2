// Package reader turns document bytes into plain text with its structure kept: the
// outline (headings with their level and byte span) and, for paged formats, page
// boundaries. Chunkers work on Document.Text; the Heading chunker takes Document.Outline,
// so no chunker needs to know a file format.
//
// The media type is sniffed from the content (see Sniff), never taken from a file name.
// Every format reader writes text in one layout (see Builder): one block (heading,
// paragraph, list item, table row) per line, blocks separated by a blank line, the rows
// of one table separated by a single newline and their cells by a tab, footnote markers
// written as "[n]" and footnote bodies appended after the body text as "[n] text"
// paragraphs. Readers of different formats thus give the same text for the same document,
// modulo whitespace.
//
// A document that cannot be read is reported with a *SkipError whose Reason (Encrypted,
// Corrupt, Empty, NoTextLayer, TooLarge, Unsupported, OCRFailed) lets a build skip it, count
// it by reason and name it in the logs instead of stopping.
//
// Readers also return what the format states about the document in Document.Metadata,
// under fixed keys (see docs/metadata.md):
//
//	title     PDF Title; DOCX and ODT dc:title; HTML <title>; Markdown front matter
//	          "title"; BEIR "title" (white space collapsed where the text's is)
//	author    PDF Author; DOCX dc:creator; ODT meta:initial-creator, else dc:creator;
//	          Markdown front matter "author"
//	created   PDF CreationDate; DOCX dcterms:created; ODT meta:creation-date
//	modified  PDF ModDate; DOCX dcterms:modified; ODT dc:date
//	meta.<n>  HTML <meta name="n" content> (n lower-cased, first one wins); BEIR
//	          "metadata" object's key n, its JSON value as stored
//	frontmatter.<k>  each top-level key k of a Markdown YAML front matter, its value as
//	          YAML gives it (the front matter itself is not text)
//
// Dates are RFC 3339 where they parse (PDF dates and ISO 8601; no zone is read as UTC),
// else kept as written. Empty values set no key; a document whose format states nothing
// has nil Metadata. Metadata never makes a document unreadable: a malformed properties
// part is ignored.
//
// Format readers live in subpackages (reader/markup for text, Markdown and HTML,
// reader/office for DOCX and ODT, reader/pdf for PDF, reader/beir for BEIR corpus.jsonl,
// reader/imagedoc for scanned pages stored as images); reader/ocr recognises scanned pages
// with Tesseract for reader/pdf and reader/imagedoc; reader/formats wires them all into one
// Mux.
package reader
