package fetch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type entry struct {
	name, body string
	typ        byte
}

func tarOf(t *testing.T, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var zw *gzip.Writer
	tw := tar.NewWriter(&buf)
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	}
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: typ}
		if typ == tar.TypeSymlink {
			hdr.Size, hdr.Linkname = 0, "/etc/passwd"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		_ = zw.Close()
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	_ = zw.Close()
	return buf.Bytes()
}

func gzOf(body string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(body))
	_ = zw.Close()
	return buf.Bytes()
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// Every form a corpus, a data set or a model folder comes in unpacks to the same files, told
// apart by content; what could write outside the folder, or more than the limit, is refused
// naming it; the checksum is checked when given and required when asked.
func TestFetchUnpacksByContentAndRefusesWhatItMust(t *testing.T) {
	bomb := strings.Repeat("0", 1<<20)
	files := map[string][]byte{
		"/docs.tar.gz":     tarOf(t, true, entry{name: "docs/", typ: tar.TypeDir}, entry{name: "docs/a.md", body: "# A\n"}, entry{name: "./docs/b.md", body: "# B\n"}),
		"/docs.tar":        tarOf(t, false, entry{name: "docs/a.md", body: "# A\n"}, entry{name: "docs/b.md", body: "# B\n"}),
		"/docs.zip":        zipOf(t, map[string]string{"docs/a.md": "# A\n", "docs/b.md": "# B\n"}),
		"/archive.bin":     zipOf(t, map[string]string{"docs/a.md": "# A\n", "docs/b.md": "# B\n"}), // a zip by content, whatever its name
		"/corpus.jsonl.gz": gzOf(`{"_id":"1","text":"x"}` + "\n"),
		"/notes.md":        []byte("# Notes\n"),
		"/slip.tar.gz":     tarOf(t, true, entry{name: "../evil.txt", body: "x"}),
		"/slip.zip":        zipOf(t, map[string]string{"/abs/evil.txt": "x"}),
		"/link.tar.gz":     tarOf(t, true, entry{name: "passwd", typ: tar.TypeSymlink}),
		"/bomb.tar.gz":     tarOf(t, true, entry{name: "big.txt", body: bomb}),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	ctx := context.Background()
	auth := http.Header{"Authorization": {"Bearer s3cret"}}

	for _, name := range []string{"/docs.tar.gz", "/docs.tar", "/docs.zip", "/archive.bin"} {
		dir := t.TempDir()
		if err := Fetch(ctx, srv.URL+name, dir, Options{Header: auth, SHA256: sum(files[name])}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for f, want := range map[string]string{"docs/a.md": "# A\n", "docs/b.md": "# B\n"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
				t.Errorf("%s: %s = %q (%v), want %q", name, f, b, err, want)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".download-*")); len(left) > 0 {
			t.Errorf("%s: the download was left behind: %v", name, left)
		}
	}
	for name, want := range map[string]string{"/corpus.jsonl.gz": "corpus.jsonl", "/notes.md": "notes.md"} {
		dir := t.TempDir()
		if err := Fetch(ctx, srv.URL+name, dir, Options{Header: auth}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("%s: %v, want the file %s", name, err, want)
		}
	}

	outside := t.TempDir()
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"/docs.zip", Options{Header: auth, SHA256: strings.Repeat("0", 64)}, "sha256 mismatch: got " + sum(files["/docs.zip"]) + ", want " + strings.Repeat("0", 64)},
		{"/docs.zip", Options{Header: auth, RequireSHA256: true}, "checksum is required"},
		{"/docs.zip", Options{Header: auth, SHA256: "abc"}, "not 64 hex digits"},
		{"/docs.zip", Options{}, "HTTP 401"},
		{"/missing.zip", Options{Header: auth}, "HTTP 404"},
		{"/slip.tar.gz", Options{Header: auth}, `entry "../evil.txt" escapes the destination`},
		{"/slip.zip", Options{Header: auth}, `entry "/abs/evil.txt" escapes`},
		{"/link.tar.gz", Options{Header: auth}, `entry "passwd": type '2' is not a file or folder`},
		{"/docs.zip", Options{Header: auth, MaxBytes: 100}, "larger than 100 bytes"},
		{"/bomb.tar.gz", Options{Header: auth, MaxBytes: 64 << 10}, `entry "big.txt": the unpacked data exceeds the size limit`},
	} {
		dir := filepath.Join(outside, "in")
		err := Fetch(ctx, srv.URL+tc.name, dir, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: err %v, want %q", tc.name, tc.o, err, tc.want)
		}
		os.RemoveAll(dir)
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.txt")); err == nil {
		t.Error("an entry was written outside the destination")
	}

	// A password in the URL never reaches an error.
	err := Fetch(ctx, "http://user:hunter2@"+strings.TrimPrefix(srv.URL, "http://")+"/missing", t.TempDir(), Options{Header: auth})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err %v, want one without the password", err)
	}
}

// Space bounds the download and its unpacked files together, naming the volume: a download
// over it stops at its size, an archive whose download fits but not with its files fails
// while unpacking.
func TestFetchWithinTheSpaceOfItsVolume(t *testing.T) {
	body := strings.Repeat("x", 5000)
	archive := tarOf(t, false, entry{name: "docs/a.md", body: body})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain.txt" {
			_, _ = w.Write([]byte(body))
			return
		}
		_, _ = w.Write(archive)
	}))
	defer srv.Close()
	const name = `scratch volume "tmp" (sizeLimit 1 GiB)`
	dir := t.TempDir()
	err := Fetch(context.Background(), srv.URL+"/plain.txt", dir, Options{Space: 1000, SpaceName: name})
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Errorf("5000 bytes into 1000: err %v, want one naming the volume", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %d files after the refusal", len(entries))
	}
	err = Fetch(context.Background(), srv.URL+"/a.tar", t.TempDir(), Options{Space: int64(len(archive)) + 1000, SpaceName: name})
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "unpacked") {
		t.Errorf("archive of %d bytes unpacking 5000 into %d: err %v, want one naming the volume", len(archive), len(archive)+1000, err)
	}
	if err := Fetch(context.Background(), srv.URL+"/a.tar", t.TempDir(), Options{Space: int64(len(archive)) + 5000, SpaceName: name}); err != nil {
		t.Errorf("archive and its files fit: %v", err)
	}
}

// Issue 51: a conditional fetch of an unchanged file (If-None-Match with its ETag, or
// If-Modified-Since with its Last-Modified) is ErrNotModified with nothing downloaded or
// written; a changed file is downloaded with its new validators.
func TestConditionalFetchOfAnUnchangedFile(t *testing.T) {
	body := tarOf(t, true, entry{name: "a.md", body: "# A\n"})
	etag := `"v1"`
	modified := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var full atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		rec := &statusRecorder{ResponseWriter: w}
		http.ServeContent(rec, r, "archief.tar.gz", modified, bytes.NewReader(body))
		if rec.status == http.StatusOK {
			full.Add(1)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	v, err := FetchValidated(context.Background(), srv.URL+"/archief.tar.gz", dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.ETag != etag || v.LastModified != modified.Format(http.TimeFormat) {
		t.Errorf("validators %+v, want ETag %s and Last-Modified %s", v, etag, modified.Format(http.TimeFormat))
	}
	for _, o := range []Options{{IfNoneMatch: v.ETag}, {IfModifiedSince: v.LastModified}} {
		again := filepath.Join(t.TempDir(), "again")
		_, err := FetchValidated(context.Background(), srv.URL+"/archief.tar.gz", again, o)
		if !errors.Is(err, ErrNotModified) {
			t.Errorf("conditional fetch %+v of an unchanged file: err %v, want ErrNotModified", o, err)
		}
		if entries, _ := os.ReadDir(again); len(entries) != 0 {
			t.Errorf("conditional fetch %+v wrote %d entries", o, len(entries))
		}
	}
	if n := full.Load(); n != 1 {
		t.Errorf("%d full downloads, want 1", n)
	}
	etag = `"v2"`
	v2, err := FetchValidated(context.Background(), srv.URL+"/archief.tar.gz", t.TempDir(), Options{IfNoneMatch: v.ETag})
	if err != nil || v2.ETag != `"v2"` || full.Load() != 2 {
		t.Errorf("conditional fetch of a changed file: %+v, err %v, %d downloads; want it downloaded with ETag \"v2\"", v2, err, full.Load())
	}
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}
