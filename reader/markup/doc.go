// Package markup reads plain text, Markdown and HTML documents into reader.Document.
//
// Markdown is parsed with github.com/yuin/goldmark (CommonMark plus the GFM and footnote
// extensions); ATX and setext headings give the outline. HTML is parsed with
// golang.org/x/net/html: h1-h6 give the outline, tables become rows, and boilerplate
// (nav, script, style, aside, noscript, template, and header/footer outside article,
// main and section) is dropped. Plain text keeps its bytes (decoded to UTF-8) and has no
// outline.
package markup
