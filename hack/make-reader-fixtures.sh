#!/usr/bin/env bash
# Renders the reader test fixtures from reader/testdata/raadsbesluit.md (a Dutch council
# resolution written for this project) into the other formats, plus the broken PDFs the
# skip tests need. The outputs are committed, so tests never need these tools; rerun this
# only when the source changes.
#
# Needs Debian 12 packages: pandoc (2.17), libreoffice-writer-nogui (7.4), qpdf,
# poppler-utils (pdftoppm), ghostscript:
#   apt-get install -y --no-install-recommends pandoc libreoffice-writer-nogui qpdf poppler-utils ghostscript
set -euo pipefail
cd "$(dirname "$0")/../reader/testdata"
for t in pandoc soffice qpdf pdftoppm gs; do
  command -v "$t" >/dev/null || { echo "missing $t: see the apt-get line at the top of $0" >&2; exit 1; }
done
src=raadsbesluit.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp # LibreOffice writes its profile there

# Pandoc's "smart" extension would turn ' into ’ in some outputs only.
pandoc -f markdown-smart -t docx -o raadsbesluit.docx "$src"
pandoc -f markdown-smart -t odt -o raadsbesluit.odt "$src"
# Plain text: pandoc's plain writer uses the same footnote layout as the readers
# ("[1]" marker, "[1] body" at the end); drop the table's dashed rule line.
pandoc -f markdown-smart -t plain --wrap=none "$src" | grep -v '^ *-[- ]*$' > raadsbesluit.txt
# HTML: pandoc's body inside a page with the boilerplate the reader must drop.
body=$(pandoc -f markdown-smart -t html5 "$src")
cat > raadsbesluit.html <<HTML
<!DOCTYPE html>
<html lang="nl">
<head>
<meta charset="utf-8">
<title>Raadsbesluit 2026-041</title>
<style>body { font-family: serif; } nav { display: none; }</style>
<script>window.dataLayer = [{page: "raadsbesluit"}];</script>
</head>
<body>
<header><p>Gemeente Zuiderveen - Raadsinformatie</p></header>
<nav><ul><li><a href="/">Home</a></li><li><a href="/besluiten">Besluiten</a></li></ul></nav>
<main>
<article>
$body
</article>
</main>
<aside><p>Bekijk ook: de agenda van de volgende raadsvergadering.</p></aside>
<footer><p>Copyright Gemeente Zuiderveen. Privacyverklaring.</p></footer>
<script>console.log("loaded")</script>
</body>
</html>
HTML

# PDF from the DOCX (pandoc's DOCX template has no page-number footer), with and
# without the document outline (bookmarks).
soffice --headless --convert-to pdf --outdir "$tmp/bm" raadsbesluit.docx >/dev/null 2>&1
cp "$tmp/bm/raadsbesluit.pdf" raadsbesluit.pdf
soffice --headless --convert-to 'pdf:writer_pdf_Export:{"ExportBookmarks":{"type":"boolean","value":"false"}}' \
  --outdir "$tmp/nb" raadsbesluit.docx >/dev/null 2>&1
cp "$tmp/nb/raadsbesluit.pdf" raadsbesluit-nobookmarks.pdf

# Encrypted: AES-256 with a user password.
qpdf --encrypt geheim eigenaar 256 -- raadsbesluit.pdf encrypted.pdf
# Corrupt: a PDF header followed by bytes that are no PDF syntax.
{ printf '%%PDF-1.7\n'; head -c 3000 raadsbesluit.docx; } > corrupt.pdf
# Corrupt DOCX: the first half of the file (no ZIP central directory).
head -c "$(( $(stat -c %s raadsbesluit.docx) / 2 ))" raadsbesluit.docx > corrupt.docx
# Empty: one blank page, no text and no images.
gs -q -sDEVICE=pdfwrite -o empty.pdf -c showpage
# Scanned without text layer: page 1 rendered to a grey JPEG and wrapped as an image-only PDF.
pdftoppm -r 50 -gray -jpeg -f 1 -l 1 -singlefile raadsbesluit.pdf "$tmp/scan"
viewjpeg=$(ls /usr/share/ghostscript/*/lib/viewjpeg.ps | head -n 1)
gs -q -sDEVICE=pdfwrite -o scanned.pdf "$viewjpeg" \
  -c "($tmp/scan.jpg) << /PageSize 2 index viewJPEGgetsize 2 array astore >> setpagedevice viewJPEG showpage"
ls -l
