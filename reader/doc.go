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
// Format readers live in subpackages (reader/markup for text, Markdown and HTML,
// reader/office for DOCX and ODT, reader/pdf for PDF, reader/beir for BEIR corpus.jsonl,
// reader/imagedoc for scanned pages stored as images); reader/ocr recognises scanned pages
// with Tesseract for reader/pdf and reader/imagedoc; reader/formats wires them all into one
// Mux.
package reader
