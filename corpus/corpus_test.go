package corpus

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

func TestSelectedGlobs(t *testing.T) {
	cases := []struct {
		path             string
		include, exclude []string
		want             bool
	}{
		{"a/b/c.pdf", []string{"**/*.pdf"}, nil, true},
		{"c.pdf", []string{"**/*.pdf"}, nil, true},
		{"a/b/c.docx", []string{"**/*.pdf"}, nil, false},
		{"concept/x.pdf", []string{"**/*.pdf"}, []string{"concept/**"}, false},
		{"final/x.pdf", []string{"**/*.pdf"}, []string{"concept/**"}, true},
		{"corpus.jsonl", nil, nil, true},
	}
	for _, c := range cases {
		got, err := Selected(c.path, c.include, c.exclude)
		if err != nil || got != c.want {
			t.Errorf("Selected(%q, %v, %v) = %v, %v; want %v", c.path, c.include, c.exclude, got, err, c.want)
		}
	}
	if _, err := Selected("x", []string{"[a-"}, nil); err == nil || !strings.Contains(err.Error(), `"[a-"`) {
		t.Errorf("bad glob: err %v, want one naming the pattern", err)
	}
}

func TestWalkBEIRCountsBadLinesAndShards(t *testing.T) {
	dir := t.TempDir()
	lines := []string{
		`{"_id":"d1","title":"Aspirin","text":"Aspirin lowers the risk of stroke."}`,
		`{"_id":"d2","title":"","text":"Statins lower cholesterol."}`,
		`not json`,
		`{"_id":"d3","title":"No text"}`,
		`{"_id":"d4","text":"Vitamin D and bone density."}`,
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), plan.Source{Dir: dir, Format: ragopsv1alpha1.FormatBEIR}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	skipped := map[string]int{}
	err = s.Walk(context.Background(), false, nil, func(d Document) error {
		ids = append(ids, d.ID)
		if d.Hash == "" || d.Doc.Text == "" {
			t.Errorf("%s: empty hash or text", d.ID)
		}
		return nil
	}, func(sk Skipped) { skipped[sk.Reason]++ })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "d1,d2,d4" {
		t.Errorf("documents %v, want d1,d2,d4", ids)
	}
	if skipped["Corrupt"] != 2 {
		t.Errorf("skipped %v, want 2 Corrupt (bad JSON, missing text)", skipped)
	}
	// Shards partition the documents.
	seen := map[string]int{}
	for shard := 0; shard < 3; shard++ {
		_ = s.Walk(context.Background(), true, func(id string) bool { return Shard(id, shard, 3) }, func(d Document) error {
			seen[d.ID]++
			return nil
		}, func(Skipped) {})
	}
	if len(seen) != 3 || seen["d1"] != 1 || seen["d2"] != 1 || seen["d4"] != 1 {
		t.Errorf("shards cover %v, want each document once", seen)
	}
}

func TestWalkFilesSkipsWithReasonsAndRevisionTracksContent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("besluiten/2024-01.md", "# Beslispunt\nDe raad besluit.\n")
	write("besluiten/leeg.md", "   \n")
	write("besluiten/groot.md", strings.Repeat("woord ", 100))
	write("concept/ontwerp.md", "# Ontwerp\n")
	src := plan.Source{Dir: dir, Include: []string{"**/*.md"}, Exclude: []string{"concept/**"}, MaxDocumentBytes: 200}
	mux := reader.NewMux(0, markup.Text{}, markup.Markdown{})
	walk := func() (string, map[string]int) {
		s, err := Open(context.Background(), src, t.TempDir(), mux)
		if err != nil {
			t.Fatal(err)
		}
		var docs []Document
		skipped := map[string]int{}
		if err := s.Walk(context.Background(), false, nil, func(d Document) error { docs = append(docs, d); return nil },
			func(sk Skipped) { skipped[sk.Reason]++ }); err != nil {
			t.Fatal(err)
		}
		if len(docs) != 1 || docs[0].ID != "besluiten/2024-01.md" || len(docs[0].Doc.Outline) != 1 {
			t.Fatalf("documents %+v", docs)
		}
		return Revision(docs), skipped
	}
	rev1, skipped := walk()
	if skipped[string(reader.TooLarge)] != 1 || skipped[string(reader.Empty)] != 1 {
		t.Errorf("skipped %v, want one TooLarge and one Empty", skipped)
	}
	if again, _ := walk(); again != rev1 {
		t.Errorf("revision changed without a change: %s -> %s", rev1, again)
	}
	write("besluiten/2024-01.md", "# Beslispunt\nDe raad besluit anders.\n")
	if rev2, _ := walk(); rev2 == rev1 {
		t.Errorf("revision %s did not change with the content", rev1)
	}
}

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
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

func TestFetchChecksArchiveAndRefusesEscapes(t *testing.T) {
	good := tarGz(t, map[string]string{"docs/a.md": "# A\ntext\n", "docs/b.md": "# B\n"})
	evil := tarGz(t, map[string]string{"../../etc/evil": "x"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/good.tar.gz":
			_, _ = w.Write(good)
		case "/evil.tar.gz":
			_, _ = w.Write(evil)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	sum := sha256.Sum256(good)
	hdr := http.Header{"Authorization": {"Bearer s3cret"}}
	ctx := context.Background()

	dir := t.TempDir()
	if _, err := Fetch(ctx, srv.URL+"/good.tar.gz", hex.EncodeToString(sum[:]), hdr, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "docs", "a.md")); err != nil || string(b) != "# A\ntext\n" {
		t.Fatalf("unpacked a.md = %q, %v", b, err)
	}
	_, err := Fetch(ctx, srv.URL+"/good.tar.gz", strings.Repeat("0", 64), hdr, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), hex.EncodeToString(sum[:])) {
		t.Errorf("checksum mismatch: err %v, want one naming both digests", err)
	}
	if _, err := Fetch(ctx, srv.URL+"/good.tar.gz", "", nil, t.TempDir()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without the header: err %v, want HTTP 401", err)
	}
	if _, err := Fetch(ctx, srv.URL+"/evil.tar.gz", "", hdr, t.TempDir()); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("path traversal: err %v, want a refusal", err)
	}
}

// Defect 4 of issue 32: a corpus.jsonl truncated while it is read (here by the visit of its
// first record; the file is larger than the scanner's 1 MiB buffer, so the rest is read
// after the truncation) ends early. The walk reports the file, after the records it read, as
// a Container skipped ChangedWhileRead: the records it did not reach are not removed ones.
func TestWalkReportsAContainerTruncatedWhileRead(t *testing.T) {
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "corpus.jsonl")
	const n = 4000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"_id":"d%04d","text":"%s"}`+"\n", i, strings.Repeat("woord ", 60))
	}
	if err := os.WriteFile(jsonl, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if b.Len() < 1<<20+1<<18 {
		t.Fatalf("corpus of %d bytes: make it larger than the scanner's buffer", b.Len())
	}
	s, err := Open(context.Background(), plan.Source{Dir: dir}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	visited := 0
	var skips []Skipped
	err = s.Walk(context.Background(), false, nil, func(d Document) error {
		visited++
		if visited == 1 {
			return os.Truncate(jsonl, 1000)
		}
		return nil
	}, func(sk Skipped) { skips = append(skips, sk) })
	if err != nil {
		t.Fatal(err)
	}
	if visited == 0 || visited >= n {
		t.Fatalf("visited %d records of %d: the truncation did not cut the read", visited, n)
	}
	var container *Skipped
	for i := range skips {
		if skips[i].ID == "corpus.jsonl" {
			container = &skips[i]
		}
	}
	if container == nil || !container.Container || container.Reason != ReasonChangedWhileRead ||
		!strings.Contains(container.Err.Error(), "changed while it was read") {
		t.Fatalf("visited %d of %d records; skips %+v: want corpus.jsonl skipped as a Container, ChangedWhileRead", visited, n, skips)
	}

	// Read again whole (now 1000 bytes, as listed by a new Open): no skip of the file.
	s, err = Open(context.Background(), plan.Source{Dir: dir}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	skips = nil
	if err := s.Walk(context.Background(), true, nil, func(Document) error { return nil }, func(sk Skipped) { skips = append(skips, sk) }); err != nil {
		t.Fatal(err)
	}
	for _, sk := range skips {
		if sk.Container {
			t.Errorf("unchanged file reported %+v", sk)
		}
	}
}

// The same files listed from memory (a ConfigMap's keys) and from a folder (a PVC) give the
// same documents, skips and revision: a BEIR corpus.jsonl counts one document per record in
// both, not one per file.
func TestListInMemoryMatchesAScanOfTheSameFolder(t *testing.T) {
	big := strings.Repeat("x", 300)
	files := map[string][]byte{
		"corpus.jsonl": []byte(`{"_id":"d1","title":"Beslispunt","text":"De raad besluit."}
{"_id":"d2","text":"Motivering van het besluit."}

not json
{"_id":"d3","text":"` + big + `"}
{"_id":"d4","text":"Stemverhouding: 21 voor, 8 tegen."}
`),
		"notulen.md":  []byte("# Notulen\n\nDe vergadering opent om 19.30 uur.\n"),
		"concept.txt": []byte("excluded by the glob"),
		"bijlage.md":  []byte("# Bijlage\n\n" + big),
	}
	src := plan.Source{Format: ragopsv1alpha1.FormatAuto, Exclude: []string{"*.txt"}, MaxDocumentBytes: 200}

	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	folder := src
	folder.Dir = dir
	s, err := Open(context.Background(), folder, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var scanned []Document
	var scanSkips []string
	if err := s.Walk(context.Background(), true, nil, func(d Document) error { scanned = append(scanned, d); return nil },
		func(sk Skipped) { scanSkips = append(scanSkips, sk.ID+" "+sk.Reason) }); err != nil {
		t.Fatal(err)
	}

	listed, skipped, err := List(context.Background(), files, src)
	if err != nil {
		t.Fatal(err)
	}
	var listSkips []string
	for _, sk := range skipped {
		listSkips = append(listSkips, sk.ID+" "+sk.Reason)
	}
	ids := func(docs []Document) string {
		var out []string
		for _, d := range docs {
			out = append(out, fmt.Sprintf("%s/%s/%d", d.ID, d.Hash, d.Size))
		}
		return strings.Join(out, " ")
	}
	if ids(listed) != ids(scanned) {
		t.Errorf("listed from memory %s\nscanned from a folder %s", ids(listed), ids(scanned))
	}
	if len(listed) != 4 {
		t.Errorf("%d documents (%s), want 4: three records of corpus.jsonl and notulen.md", len(listed), ids(listed))
	}
	if strings.Join(listSkips, ",") != strings.Join(scanSkips, ",") || len(listSkips) != 3 {
		t.Errorf("skipped from memory %v, from a folder %v; want corpus.jsonl:4 Corrupt, d3 and bijlage.md TooLarge", listSkips, scanSkips)
	}
	if a, b := Revision(listed), Revision(scanned); a != b {
		t.Errorf("revision from memory %s, from a folder %s", a, b)
	}
}

// countReader counts its calls.
type countReader struct {
	calls int
	next  DocumentReader
}

func (c *countReader) Read(ctx context.Context, data []byte) (reader.Document, error) {
	c.calls++
	return c.next.Read(ctx, data)
}

// Issue 51, hash before read: WalkChanged decides from the raw hash whether a document is
// needed before the reader runs; the ones not needed are visited unread, with their hash.
func TestWalkChangedReadsOnlyNeededDocuments(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%02d.md", i)), fmt.Appendf(nil, "# D %d\n\nTekst %d.", i, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cr := &countReader{next: reader.NewMux(0, markup.Markdown{})}
	s, err := Open(context.Background(), plan.Source{Dir: dir}, t.TempDir(), cr)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	if err := s.Walk(context.Background(), true, nil, func(d Document) error { stored[d.ID] = d.Hash; return nil }, func(Skipped) {}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d03.md", "d11.md"} {
		if err := os.WriteFile(filepath.Join(dir, id), []byte("# Gewijzigd\n\nNieuwe tekst."), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var read, unread []string
	err = s.WalkChanged(context.Background(), nil, func(d Document) bool { return stored[d.ID] != d.Hash }, func(d Document) error {
		if d.Read {
			read = append(read, d.ID)
			if d.Doc.Text == "" || d.Doc.Source == nil || d.Doc.Source.ID != d.ID || d.Doc.Source.Hash != d.Hash {
				t.Errorf("%s: read without text or source: %+v", d.ID, d.Doc.Source)
			}
		} else {
			unread = append(unread, d.ID)
			if d.Doc.Text != "" || d.Hash != stored[d.ID] {
				t.Errorf("%s: unread with text %q or hash %s (stored %s)", d.ID, d.Doc.Text, d.Hash, stored[d.ID])
			}
		}
		return nil
	}, func(sk Skipped) { t.Errorf("skipped %+v", sk) })
	if err != nil {
		t.Fatal(err)
	}
	if cr.calls != 2 || strings.Join(read, ",") != "d03.md,d11.md" || len(unread) != 18 {
		t.Errorf("reader calls %d, read %v, %d unread; want 2 calls for the 2 changed documents, 18 unread", cr.calls, read, len(unread))
	}
}
