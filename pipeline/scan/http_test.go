package scan

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// tarGz packs files into a gzip-compressed tar.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// archiveServer serves one archive with an ETag (its version) through http.ServeContent,
// which answers conditional requests; it counts the full downloads.
type archiveServer struct {
	mu        sync.Mutex
	body      []byte
	version   int
	downloads int
}

func (a *archiveServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	body, version := a.body, a.version
	a.mu.Unlock()
	w.Header().Set("ETag", `"v`+string(rune('0'+version))+`"`)
	if r.Header.Get("If-None-Match") != w.Header().Get("ETag") {
		a.mu.Lock()
		a.downloads++
		a.mu.Unlock()
	}
	http.ServeContent(w, r, "archief.tar.gz", time.Time{}, bytes.NewReader(body))
}

func (a *archiveServer) set(body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.body = body
	a.version++
}

func (a *archiveServer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.downloads
}

// Issue 51: the scan of an HTTP Corpus whose archive has not changed since the last scan
// (its ETag, sent as If-None-Match) downloads nothing and reports the last scan's figures; a
// changed archive, or the same archive under another selection, is downloaded and listed.
func TestScanOfAnUnchangedHTTPArchiveDownloadsNothing(t *testing.T) {
	a := &archiveServer{}
	a.set(tarGz(t, map[string]string{"archief/a.md": "# A\n", "archief/b.md": "# B\n", "archief/c.txt": "C\n"}))
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	src := plan.Source{HTTP: &ragopsv1alpha1.HTTPSource{URL: srv.URL + "/archief.tar.gz"}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()

	first, err := RunAfter(ctx, log, src, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if first.Documents != 3 || first.HTTP == nil || first.HTTP.ETag != `"v1"` || first.HTTP.Selection != src.Selection() || a.count() != 1 {
		t.Fatalf("first scan %+v (validators %+v) after %d downloads; want 3 documents, ETag \"v1\", 1 download", first, first.HTTP, a.count())
	}
	again, err := RunAfter(ctx, log, src, &first, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a.count() != 1 {
		t.Errorf("a scan of the unchanged archive downloaded it (%d downloads in all, want 1)", a.count())
	}
	if again.Revision != first.Revision || again.Documents != 3 || again.Bytes != first.Bytes || again.HTTP == nil || *again.HTTP != *first.HTTP {
		t.Errorf("scan of the unchanged archive %+v, want the first scan's figures %+v", again, first)
	}

	// Another selection of the same archive is listed again.
	md := src
	md.Include = []string{"**/*.md"}
	sel, err := RunAfter(ctx, log, md, &first, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a.count() != 2 || sel.Documents != 2 {
		t.Errorf("scan under another selection: %d documents after %d downloads; want 2 documents from a second download", sel.Documents, a.count())
	}

	// A changed archive is downloaded and gets a new revision and ETag.
	a.set(tarGz(t, map[string]string{"archief/a.md": "# A, gewijzigd\n", "archief/b.md": "# B\n", "archief/c.txt": "C\n"}))
	changed, err := RunAfter(ctx, log, src, &first, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a.count() != 3 || changed.Revision == first.Revision || changed.HTTP == nil || changed.HTTP.ETag != `"v2"` {
		t.Errorf("scan of a changed archive: %+v (validators %+v) after %d downloads; want a new revision, ETag \"v2\"", changed, changed.HTTP, a.count())
	}
}
