package formats_test

import "github.com/ragops/ragops/reader/pdf"

func pdfOptions() pdf.Options { return pdf.Options{Workers: 2} }
