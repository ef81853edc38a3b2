package formats_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/reader/pdf"
)

// BenchmarkRead measures reader throughput per format on the council resolution fixture,
// through the Mux (sniffing included); MB/s is of input bytes. The PDFium pool is warm
// (started once in TestMain), as in a build. "x50" variants repeat the Markdown and HTML
// body 50 times to show steady-state speed on a larger document.
func BenchmarkRead(b *testing.B) {
	md := fixture(b, "raadsbesluit.md")
	html := fixture(b, "raadsbesluit.html")
	cases := []struct {
		name string
		data []byte
	}{
		{"txt", fixture(b, "raadsbesluit.txt")},
		{"md", md},
		{"md-x50", bytes.Repeat(append(md, '\n'), 50)},
		{"html", html},
		{"html-x50", append(append([]byte("<html><body>"), bytes.Repeat(bytes.TrimSuffix(bytes.SplitN(html, []byte("<main>"), 2)[1], []byte("</html>\n")), 50)...), "</body></html>"...)},
		{"docx", fixture(b, "raadsbesluit.docx")},
		{"odt", fixture(b, "raadsbesluit.odt")},
		{"pdf-bookmarks", fixture(b, "raadsbesluit.pdf")},
		{"pdf-fonts", fixture(b, "raadsbesluit-nobookmarks.pdf")},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			doc, err := readers.Read(ctx, c.data)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.data)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := readers.Read(ctx, c.data); err != nil {
					b.Fatal(err)
				}
			}
			if n := len(doc.Pages); n > 0 {
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pages/s")
			}
			b.ReportMetric(float64(len(doc.Text)*b.N)/b.Elapsed().Seconds()/1e6, "textMB/s")
		})
	}
}

// BenchmarkBEIRScan reads the real SciFact corpus.jsonl (8.1 MB, 5,183 documents).
func BenchmarkBEIRScan(b *testing.B) {
	dir := os.Getenv("RAGOPS_DATASETS")
	if dir == "" {
		dir = "../../../shared/datasets"
	}
	data, err := os.ReadFile(dir + "/scifact/corpus.jsonl")
	if err != nil {
		b.Skipf("SciFact corpus missing (../shared/datasets/scifact): %v", err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		n := 0
		if err := beir.Scan(bytes.NewReader(data), func(e beir.Entry) error {
			if e.Err != nil {
				return e.Err
			}
			n++
			return nil
		}); err != nil || n != 5183 {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkPDFStartup measures what the pool saves: compiling PDFium's WebAssembly module
// and instantiating it, plus one read, per iteration (run with -benchtime=3x). "cold"
// compiles every time; "compilation-cache" keeps wazero's machine code in a folder
// (Options.CacheDir), filled before the timer starts, as a restarted pod with a cache
// volume would find it.
func BenchmarkPDFStartup(b *testing.B) {
	data := fixture(b, "raadsbesluit.pdf")
	ctx := context.Background()
	start := func(b *testing.B, opts pdf.Options) {
		r, err := pdf.New(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Read(ctx, data, "application/pdf"); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			start(b, pdf.Options{})
		}
	})
	b.Run("compilation-cache", func(b *testing.B) {
		opts := pdf.Options{CacheDir: b.TempDir()}
		start(b, opts)
		b.ResetTimer()
		for b.Loop() {
			start(b, opts)
		}
	})
}
