package pdf

import (
	"io"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// reopenBytes is how much PDFium may read through a file-backed document before the next
// page is read from the document opened again. PDFium copies every stream object it parses
// (a scanned page's image, when the page is loaded) into the instance's memory and keeps it
// until the document is closed, so a long scan read from one open document would hold all of
// its images; reopened, it holds at most about this much plus one page's objects.
var reopenBytes int64 = 8 << 20

// document is a PDFium document open in inst. One read from a file (FileReader) is reopened
// by refresh once PDFium has read reopenBytes through it; one in memory (File) is not, as
// the whole file is in the instance's memory anyway.
type document struct {
	inst pdfium.Pdfium
	open *requests.OpenDocument
	file *countingReader // nil for a document in memory
	doc  references.FPDF_DOCUMENT
	ok   bool
}

// openDocument opens the document open describes in inst; a FileReader is counted.
func openDocument(inst pdfium.Pdfium, open *requests.OpenDocument) (*document, error) {
	d := &document{inst: inst, open: open}
	if open.FileReader != nil {
		d.file = &countingReader{r: open.FileReader}
		cp := *open
		cp.FileReader = d.file
		d.open = &cp
	}
	return d, d.reopen()
}

func (d *document) reopen() error {
	d.close()
	if d.file != nil {
		d.file.n = 0
	}
	od, err := d.inst.OpenDocument(d.open)
	if err != nil {
		return err
	}
	d.doc, d.ok = od.Document, true
	return nil
}

// refresh reopens a file-backed document once PDFium has read reopenBytes through it since
// it was opened, releasing the objects it parsed.
func (d *document) refresh() error {
	if d.file == nil || d.file.n < reopenBytes {
		return nil
	}
	return d.reopen()
}

func (d *document) close() {
	if d.ok {
		_, _ = d.inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: d.doc})
		d.ok = false
	}
}

// countingReader counts the bytes read through r.
type countingReader struct {
	r io.ReadSeeker
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Seek(off int64, whence int) (int64, error) { return c.r.Seek(off, whence) }
