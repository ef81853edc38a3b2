package corpus

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr"
)

// imagePDF writes a PDF of pages pages, each with one line of text ("Pagina i van het
// dossier") and a side x side grey image of seeded noise (stored uncompressed, so the file is
// about pages*side*side bytes: a scan's bulk is its images).
func imagePDF(pages, side int) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(body string, stream []byte) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s", len(offs), body)
		if stream != nil {
			b.WriteString("\nstream\n")
			b.Write(stream)
			b.WriteString("\nendstream")
		}
		b.WriteString("\nendobj\n")
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	// 1 catalog, 2 pages, 3 font; page i: 4+3i page, 5+3i content, 6+3i image.
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	kids := make([]string, pages)
	for i := range kids {
		kids[i] = fmt.Sprintf("%d 0 R", 4+3*i)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), pages), nil)
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", nil)
	rng := rand.New(rand.NewPCG(56, 1))
	img := make([]byte, side*side)
	for i := 0; i < pages; i++ {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> /XObject << /Im0 %d 0 R >> >> /Contents %d 0 R >>", 6+3*i, 5+3*i), nil)
		content := fmt.Sprintf("BT /F1 14 Tf 72 760 Td (Pagina %d van het dossier) Tj ET q 400 0 0 400 100 200 cm /Im0 Do Q", i+1)
		obj(fmt.Sprintf("<< /Length %d >>", len(content)), []byte(content))
		for k := 0; k < len(img); k += 8 {
			v := rng.Uint64()
			for j := 0; j < 8 && k+j < len(img); j++ {
				img[k+j] = byte(v >> (8 * j))
			}
		}
		obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d >>", side, side, len(img)), img)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}

// peakHeap runs f while sampling the Go heap (live and not yet collected objects) every
// millisecond and returns the largest sample.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	var peak uint64
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			v := read()
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return max(peak, read())
}

// TestWalkReadsLargePDFWithoutCopy walks a folder holding a 128 MiB PDF (32 pages of text
// with a 4 MiB image each) through the format readers and checks that the Go heap (which
// holds PDFium's WebAssembly memory too) never grows by a quarter of the file: the walk
// hashes the file as it streams it and PDFium reads it from the file, page by page, instead
// of a copy of the whole file in memory (issue 56). The document is the one read from the
// bytes.
func TestWalkReadsLargePDFWithoutCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 128 MiB PDF")
	}
	ctx := context.Background()
	dir := t.TempDir()
	big := imagePDF(32, 2048)
	if err := os.WriteFile(filepath.Join(dir, "dossier.pdf"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	size := len(big)
	small := imagePDF(1, 64)
	warm := t.TempDir()
	if err := os.WriteFile(filepath.Join(warm, "small.pdf"), small, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := formats.New(ctx, formats.Options{OCR: ocr.Options{Mode: ocr.Never}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	walk := func(dir string) Document {
		t.Helper()
		s, err := Open(ctx, plan.Source{Dir: dir}, t.TempDir(), r)
		if err != nil {
			t.Fatal(err)
		}
		var docs []Document
		if err := s.Walk(ctx, false, nil, func(d Document) error { docs = append(docs, d); return nil },
			func(sk Skipped) { t.Fatalf("skipped %s: %s: %v", sk.ID, sk.Reason, sk.Err) }); err != nil {
			t.Fatal(err)
		}
		if len(docs) != 1 || !docs[0].Read {
			t.Fatalf("walk gave %+v, want one document read", docs)
		}
		return docs[0]
	}
	walk(warm) // starts the PDFium instance: its memory is part of the baseline
	big = nil
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	base := peakHeap(func() {})
	var got Document
	peak := peakHeap(func() { got = walk(dir) })
	grew := int64(peak) - int64(base)
	t.Logf("file %d MiB; Go heap %d MiB before the walk, peak %d MiB (+%d MiB)", size>>20, base>>20, peak>>20, grew>>20)
	if grew > int64(size)/4 {
		t.Errorf("the Go heap grew by %d MiB while reading a %d MiB PDF; want under a quarter of the file (no whole-file copy)", grew>>20, size>>20)
	}
	for _, want := range []string{"Pagina 1 van het dossier", "Pagina 32 van het dossier"} {
		if !strings.Contains(got.Doc.Text, want) {
			t.Errorf("text lacks %q: %q", want, got.Doc.Text)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "dossier.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != hashOf(data) || got.Size != int64(len(data)) {
		t.Errorf("hash %s size %d, want %s %d", got.Hash, got.Size, hashOf(data), len(data))
	}
	want, err := r.Read(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	got.Doc.Source, got.Doc.Metadata, want.Metadata = nil, nil, nil
	if got.Doc.Text != want.Text || len(got.Doc.Pages) != len(want.Pages) || len(got.Doc.Pages) != 32 {
		t.Errorf("read from the file: %d pages %q; from the bytes: %d pages %q", len(got.Doc.Pages), got.Doc.Text, len(want.Pages), want.Text)
	}
}
