package markup_test

import (
	"context"
	"testing"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

func TestHTMLStructure(t *testing.T) {
	in := `<html><head><meta charset="windows-1252"><title>t</title></head><body>
<header><h1>Gemeente</h1></header>
<article><header><h1>Financi` + "\xeb" + `le gevolgen</h1></header>
<p>Kosten <b>` + "\x80" + ` 38.000</b>.<br>Tweede regel</p>
<ol start="3"><li>drie</li><li><p>vier</p><p>meer</p></li></ol>
<h2>Tabel</h2><table><tr><th>Fractie</th><th>Voor</th></tr><tr><td>VVD</td><td>6</td></tr></table>
<footer><p>Bron: raadsinformatie</p></footer></article>
<footer>site footer</footer></body></html>`
	doc, err := markup.HTML{}.Read(context.Background(), []byte(in), reader.MediaTypeHTML)
	if err != nil {
		t.Fatal(err)
	}
	want := "Financiële gevolgen\n\nKosten € 38.000. Tweede regel\n\n3. drie\n\n4. vier\n\nmeer\n\nTabel\n\nFractie\tVoor\nVVD\t6\n\nBron: raadsinformatie"
	if doc.Text != want {
		t.Errorf("text\n%q\nwant\n%q", doc.Text, want)
	}
	if len(doc.Outline) != 2 || doc.Outline[0].Title != "Financiële gevolgen" || doc.Outline[1].Level != 2 {
		t.Errorf("outline %+v", doc.Outline)
	}
}

func TestMarkdownStructure(t *testing.T) {
	in := "Titel\n=====\n\nZie *[de bijlage](b.pdf)* en `code \\*`.\n\n7. zeven\n8. acht\n   - genest\n\n## Kop *met* nadruk ##\n\n<div>raw</div>\n\n&amp; \\# klaar\n"
	doc, err := markup.Markdown{}.Read(context.Background(), []byte(in), reader.MediaTypeMarkdown)
	if err != nil {
		t.Fatal(err)
	}
	want := "Titel\n\nZie de bijlage en code \\*.\n\n7. zeven\n\n8. acht\n\ngenest\n\nKop met nadruk\n\n& # klaar"
	if doc.Text != want {
		t.Errorf("text\n%q\nwant\n%q", doc.Text, want)
	}
	if len(doc.Outline) != 2 || doc.Outline[0] != (reader.Heading{Level: 1, Title: "Titel", Start: 0, End: len(want)}) ||
		doc.Outline[1].Title != "Kop met nadruk" || doc.Outline[1].Level != 2 {
		t.Errorf("outline %+v", doc.Outline)
	}
}

// TestMarkdownCodeBlocks: fenced and indented code blocks keep their lines byte for byte
// (indentation, tabs, inner blank lines, a "#" comment that is no heading) inside a fence
// long enough for the backticks they hold; a list item's number stands before its code.
func TestMarkdownCodeBlocks(t *testing.T) {
	py := "def f(x):\n    if x:\n\treturn 1  \n\n    # not a heading\n    return 2"
	in := "# Code\n\nText.\n\n```python\n" + py + "\n```\n\n    indented  code\n      more\n\n" +
		"1. item\n\n   ```\n   a ``` b\n     c\n   ```\n\n~~~\n\n~~~\n"
	doc, err := markup.Markdown{}.Read(context.Background(), []byte(in), reader.MediaTypeMarkdown)
	if err != nil {
		t.Fatal(err)
	}
	want := "Code\n\nText.\n\n```python\n" + py + "\n```\n\n```\nindented  code\n  more\n```\n\n1. item\n\n````\na ``` b\n  c\n````"
	if doc.Text != want {
		t.Errorf("text\n%q\nwant\n%q", doc.Text, want)
	}
	if len(doc.Outline) != 1 || doc.Outline[0].Title != "Code" {
		t.Errorf("outline %+v, want only Code", doc.Outline)
	}
}
