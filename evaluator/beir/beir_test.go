package beir

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ragops/ragops/evaluator/internal/datasets"
	readerbeir "github.com/ragops/ragops/reader/beir"
)

func TestLoadSciFact(t *testing.T) {
	dir := datasets.Dir(t, "scifact")
	ds, err := Load(os.DirFS(dir), Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// Figures from the data set's SOURCE.md / BEIR paper: 5,183 abstracts, 300 test queries, 339 qrels.
	if len(ds.Corpus) != 5183 || len(ds.Queries) != 300 || ds.Judgements != 339 {
		t.Fatalf("got %d docs, %d queries, %d judgements; want 5183, 300, 339", len(ds.Corpus), len(ds.Queries), ds.Judgements)
	}
	if ds.Dropped.Total() != 0 {
		t.Fatalf("dropped %+v, want none", ds.Dropped)
	}
	if ds.Spans != nil {
		t.Fatal("SciFact has no query_spans.jsonl but Spans is set")
	}
	d, ok := ds.Doc("4983")
	if !ok || !strings.HasPrefix(d.Title, "Microstructural development") {
		t.Fatalf("doc 4983 = %+v, %v", d, ok)
	}
}

func TestLoadQMSumSpans(t *testing.T) {
	dir := datasets.Dir(t, "qmsum")
	ds, err := Load(os.DirFS(dir), Options{Split: "val"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Spans) == 0 {
		t.Fatal("no spans loaded")
	}
	for qid, list := range ds.Spans {
		if _, ok := ds.Qrels[qid]; !ok {
			t.Fatalf("spans of query %s, which has no val judgement", qid)
		}
		for _, qs := range list {
			if ds.Qrels[qid][qs.DocID] <= 0 {
				t.Fatalf("span document %s of %s is not judged relevant", qs.DocID, qid)
			}
		}
	}
	// Every val query in QMSum is a specific query with an annotated span.
	if len(ds.Spans) != len(ds.Queries) {
		t.Fatalf("%d queries with spans, %d queries", len(ds.Spans), len(ds.Queries))
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	good := fstest.MapFS{
		"corpus.jsonl":   {Data: []byte(`{"_id":"d1","title":"","text":"alpha"}` + "\n" + `{"_id":"d2","text":"beta"}` + "\n")},
		"queries.jsonl":  {Data: []byte(`{"_id":"q1","text":"alpha?"}` + "\n")},
		"qrels/test.tsv": {Data: []byte("query-id\tcorpus-id\tscore\nq1\td1\t1\n")},
	}
	if _, err := Load(good, Options{Split: "test"}); err != nil {
		t.Fatalf("good data set: %v", err)
	}
	cases := []struct {
		file, data, want string
	}{
		{"corpus.jsonl", `{"_id":"d1","text":"a"}` + "\n\n" + `{"_id":"d1","text":"b"}`, `corpus.jsonl:3: duplicate _id "d1"`},
		{"corpus.jsonl", `{"_id":"d1","text":"a"}` + "\n{not json", "corpus.jsonl:2:"},
		{"corpus.jsonl", `{"_id":"d1"}`, `corpus.jsonl:1: no "text" field`},
		{"corpus.jsonl", `{"_id":["x"],"text":"a"}`, `corpus.jsonl:1: "_id" is ["x"]`},
		{"queries.jsonl", `{"_id":"q1","text":"  "}`, `queries.jsonl:1: query "q1" has empty text`},
		{"qrels/test.tsv", "q1\td1\n", "qrels/test.tsv:1: want 3 tab-separated fields"},
		{"qrels/test.tsv", "q1\td1\tyes\n", `qrels/test.tsv:1: score "yes" is not an integer`},
		{"qrels/test.tsv", "q1\td1\t1\nq1\td1\t2\n", `qrels/test.tsv:2: duplicate judgement for query "q1", document "d1" (first on line 1)`},
	}
	for _, c := range cases {
		fsys := fstest.MapFS{}
		for k, v := range good {
			fsys[k] = v
		}
		fsys[c.file] = &fstest.MapFile{Data: []byte(c.data)}
		_, err := Load(fsys, Options{Split: "test"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %q: error %v, want it to contain %q", c.file, c.data, err, c.want)
		}
	}
	if _, err := Load(good, Options{Split: "dev"}); err == nil || !strings.Contains(err.Error(), "qrels/dev.tsv") {
		t.Errorf("missing split: error %v", err)
	}
}

func TestUnknownJudgementsAreCountedNotUsed(t *testing.T) {
	fsys := fstest.MapFS{
		"corpus.jsonl":   {Data: []byte(`{"_id":"d1","text":"alpha"}` + "\n")},
		"queries.jsonl":  {Data: []byte(`{"_id":"q1","text":"alpha?"}` + "\n" + `{"_id":"q2","text":"beta?"}` + "\n")},
		"qrels/test.tsv": {Data: []byte("q1\td1\t1\nq1\tgone\t1\nq9\td1\t2\nq2\tgone\t1\n")},
	}
	ds, err := Load(fsys, Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Dropped.UnknownDocuments != 2 || ds.Dropped.UnknownQueries != 1 || ds.Judgements != 1 {
		t.Fatalf("dropped %+v, judgements %d", ds.Dropped, ds.Judgements)
	}
	if len(ds.Queries) != 1 || ds.Queries[0].ID != "q1" {
		t.Fatalf("queries %+v: q2 has no usable judgement and must not be evaluated", ds.Queries)
	}
	if _, ok := ds.Qrels["q1"]["gone"]; ok {
		t.Fatal("judgement of an unknown document used")
	}
	if len(ds.Dropped.Examples) != 3 || !strings.Contains(ds.Dropped.Examples[0], "qrels/test.tsv:2") {
		t.Fatalf("examples %q", ds.Dropped.Examples)
	}
}

// sciFactSubset returns the real SciFact files cut down to the documents judged in the test
// split, small enough for a ConfigMap (1 MiB).
func sciFactSubset(t *testing.T) map[string]string {
	t.Helper()
	dir := datasets.Dir(t, "scifact")
	ds, err := Load(os.DirFS(dir), Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, m := range ds.Qrels {
		for d := range m {
			judged[d] = true
		}
	}
	corpus, err := os.ReadFile(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	for _, line := range strings.Split(string(corpus), "\n") {
		for d := range judged {
			if strings.HasPrefix(line, `{"_id": "`+d+`"`) {
				kept.WriteString(line + "\n")
				break
			}
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return map[string]string{
		"corpus.jsonl":            kept.String(),
		"queries.jsonl":           read("queries.jsonl"),
		ConfigMapQrelsKey("test"): read("qrels/test.tsv"),
	}
}

func TestConfigMapFS(t *testing.T) {
	data := sciFactSubset(t)
	size := 0
	for _, v := range data {
		size += len(v)
	}
	if size > 1<<20 {
		t.Fatalf("subset is %d bytes, over a ConfigMap's 1 MiB", size)
	}
	fsys, err := ConfigMapFS(data)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Load(fsys, Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Queries) != 300 || ds.Judgements != 339 || ds.Dropped.Total() != 0 {
		t.Fatalf("%d queries, %d judgements, dropped %+v", len(ds.Queries), ds.Judgements, ds.Dropped)
	}
	// Drop one judged document: its judgement is counted, not used.
	lines := strings.SplitN(data["corpus.jsonl"], "\n", 2)
	data["corpus.jsonl"] = lines[1]
	fsys, _ = ConfigMapFS(data)
	ds, err = Load(fsys, Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Dropped.UnknownDocuments < 1 || ds.Judgements != 339-ds.Dropped.UnknownDocuments {
		t.Fatalf("after removing a judged doc: dropped %+v, judgements %d", ds.Dropped, ds.Judgements)
	}
	if _, err := ConfigMapFS(map[string]string{"corpus.json": "x"}); err == nil || !strings.Contains(err.Error(), `"corpus.json"`) {
		t.Fatalf("misspelt key: %v", err)
	}
}

// TestConfigMapMountedAsAFolder: an Evaluation or sampled build Job mounts a ConfigMap data
// set as a folder, laid out as the kubelet writes a ConfigMap volume (each key a symlink
// into ..data, a link to a timestamped folder), so the judgements are qrels-<split>.tsv at
// the root rather than qrels/<split>.tsv; Load reads them there.
func TestConfigMapMountedAsAFolder(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "..2026_12_05_16_00_00.000000001")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for key, val := range sciFactSubset(t) {
		if err := os.WriteFile(filepath.Join(ts, key), []byte(val), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := Load(os.DirFS(dir), Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Queries) != 300 || ds.Judgements != 339 {
		t.Fatalf("%d queries, %d judgements, want 300 and 339", len(ds.Queries), ds.Judgements)
	}
	if _, err := Load(os.DirFS(dir), Options{Split: "dev"}); err == nil || !strings.Contains(err.Error(), "qrels/dev.tsv") {
		t.Fatalf("a split the folder lacks: %v, want an error naming qrels/dev.tsv", err)
	}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, data)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func zipOf(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, data)
	}
	zw.Close()
	return buf.Bytes()
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func TestFetchArchives(t *testing.T) {
	data := sciFactSubset(t)
	files := map[string]string{}
	for k, v := range data {
		if k == ConfigMapQrelsKey("test") {
			k = "qrels/test.tsv"
		}
		files["scifact/"+k] = v
	}
	archives := map[string][]byte{
		"/scifact.tar.gz": tarGz(t, files),
		"/scifact.zip":    zipOf(t, files),
		"/flat.zip":       zipOf(t, map[string]string{"corpus.jsonl": data["corpus.jsonl"], "queries.jsonl": data["queries.jsonl"], "qrels/test.tsv": data[ConfigMapQrelsKey("test")]}),
		"/slip.tar.gz":    tarGz(t, map[string]string{"../evil.txt": "x"}),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := archives[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, name := range []string{"/scifact.tar.gz", "/scifact.zip", "/flat.zip"} {
		root, err := Fetch(ctx, srv.URL+name, t.TempDir(), FetchOptions{SHA256: sum(archives[name])})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ds, err := Load(os.DirFS(root), Options{Split: "test"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ds.Queries) != 300 || ds.Judgements != 339 {
			t.Fatalf("%s: %d queries, %d judgements", name, len(ds.Queries), ds.Judgements)
		}
	}
	bad := strings.Repeat("0", 64)
	if _, err := Fetch(ctx, srv.URL+"/scifact.zip", t.TempDir(), FetchOptions{SHA256: bad}); err == nil ||
		!strings.Contains(err.Error(), "sha256 mismatch: got "+sum(archives["/scifact.zip"])) {
		t.Fatalf("bad checksum: %v", err)
	}
	if _, err := Fetch(ctx, srv.URL+"/scifact.zip", t.TempDir(), FetchOptions{}); err == nil || !strings.Contains(err.Error(), "checksum is required") {
		t.Fatalf("no checksum: %v", err)
	}
	dir := t.TempDir()
	if _, err := Fetch(ctx, srv.URL+"/slip.tar.gz", filepath.Join(dir, "in"), FetchOptions{SHA256: sum(archives["/slip.tar.gz"])}); err == nil || !strings.Contains(err.Error(), "outside the destination") {
		t.Fatalf("path escape: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.txt")); err == nil {
		t.Fatal("archive entry written outside the destination")
	}
	if _, err := Fetch(ctx, srv.URL+"/missing.zip", t.TempDir(), FetchOptions{SHA256: bad}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("404: %v", err)
	}
	if _, err := Fetch(ctx, srv.URL+"/scifact.zip", t.TempDir(), FetchOptions{SHA256: sum(archives["/scifact.zip"]), MaxBytes: 1000}); err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
		t.Fatalf("size limit: %v", err)
	}
}

// TestSpansFollowTheTitle: chunks are cut from reader/beir's document (title, blank line,
// text), so a loaded span must slice that document where byte_spans slice the text. Before
// the shift, legalqa-nl's spans (every law has a title) pointed len(title)+2 bytes early:
// the article before the gold one overlapped it and the gold article's tail did not.
func TestSpansFollowTheTitle(t *testing.T) {
	text := "# Wet X\n\n## Artikel 1\n\nEen.\n\n## Artikel 2\n\nTwee.\n"
	s := strings.Index(text, "## Artikel 2")
	fsys := fstest.MapFS{
		"corpus.jsonl":      {Data: []byte(`{"_id":"w1","title":"Wet  X","text":` + strconv.Quote(text) + `}` + "\n" + `{"_id":"w2","text":"zonder titel"}` + "\n")},
		"queries.jsonl":     {Data: []byte(`{"_id":"q1","text":"twee?"}` + "\n" + `{"_id":"q2","text":"titel?"}` + "\n")},
		"qrels/dev.tsv":     {Data: []byte("query-id\tcorpus-id\tscore\nq1\tw1\t1\nq2\tw2\t1\n")},
		"query_spans.jsonl": {Data: []byte(fmt.Sprintf(`{"query-id":"q1","corpus-id":"w1","byte_spans":[[%d,%d]]}`+"\n"+`{"query-id":"q2","corpus-id":"w2","byte_spans":[[0,6]]}`+"\n", s, len(text)))},
	}
	ds, err := Load(fsys, Options{Split: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := readerbeir.FromFields("Wet  X", text)
	got := ds.Spans["q1"][0].Spans[0]
	// "Wet X" (collapsed) + "\n\n" = 7 bytes in front of the text.
	if got.Start != s+7 || got.End != len(text)+7 || doc.Text[got.Start:got.End] != text[s:] {
		t.Fatalf("span %+v slices %q of the indexed document, want [%d, %d) = %q", got, doc.Text[got.Start:got.End], s+7, len(text)+7, text[s:])
	}
	if got := ds.Spans["q2"][0].Spans[0]; got != (Span{0, 6}) {
		t.Fatalf("untitled document's span moved: %+v", got)
	}
}

// TestLegalQANLSpansSliceTheirArticles: every gold span of legalqa-nl, loaded, slices the
// indexed document at its "Artikel N" heading line (the data set's own check, SOURCE.md).
func TestLegalQANLSpansSliceTheirArticles(t *testing.T) {
	dir := datasets.Dir(t, "legalqa-nl")
	ds, err := Load(os.DirFS(dir), Options{Split: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, list := range ds.Spans {
		for _, qs := range list {
			d, _ := ds.Doc(qs.DocID)
			doc, _ := readerbeir.FromFields(d.Title, d.Text)
			for _, sp := range qs.Spans {
				head := strings.TrimLeft(doc.Text[sp.Start:sp.End], "#")
				if !strings.HasPrefix(head, " Artikel ") {
					t.Fatalf("%s span %+v starts %q, want a heading \"# Artikel N\"", qs.DocID, sp, doc.Text[sp.Start:min(sp.End, sp.Start+30)])
				}
				n++
			}
		}
	}
	// 51 questions with their gold articles (SOURCE.md: most one, a few 2-5).
	if len(ds.Spans) != 51 || n < 51 {
		t.Fatalf("%d questions with spans, %d spans; want 51 questions", len(ds.Spans), n)
	}
	t.Logf("%d spans of %d questions start at their article heading", n, len(ds.Spans))
}

// Issue 56: a data set without corpus.jsonl loads from queries and judgements alone, every
// judgement used; spans, whose offsets follow their document's title, still need the corpus.
func TestLoadWithoutCorpus(t *testing.T) {
	fsys := fstest.MapFS{
		"queries.jsonl":  {Data: []byte(`{"_id":"q1","text":"alpha?"}` + "\n" + `{"_id":"q2","text":"beta?"}` + "\n")},
		"qrels/test.tsv": {Data: []byte("q1\td1\t1\nq1\tscan-7.pdf\t2\nq2\td2\t0\n")},
	}
	ds, err := Load(fsys, Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Corpus) != 0 || ds.Judgements != 3 || ds.Dropped.Total() != 0 || len(ds.Queries) != 2 {
		t.Fatalf("corpus %d, judgements %d, dropped %+v, queries %+v", len(ds.Corpus), ds.Judgements, ds.Dropped, ds.Queries)
	}
	if ds.Qrels["q1"]["scan-7.pdf"] != 2 {
		t.Fatalf("qrels %v", ds.Qrels)
	}
	fsys[QuerySpansFile] = &fstest.MapFile{Data: []byte(`{"query-id":"q1","corpus-id":"d1","byte_spans":[[0,3]]}` + "\n")}
	if _, err := Load(fsys, Options{Split: "test"}); err == nil || !strings.Contains(err.Error(), "query_spans.jsonl:1") || !strings.Contains(err.Error(), CorpusFile) {
		t.Fatalf("spans without a corpus: error %v", err)
	}
}

// Issue 56: with TextsSpans a corpus.jsonl lists every document (judgements of unlisted ones
// are still dropped) but keeps only the text of those query_spans.jsonl names.
func TestLoadTextsSpansKeepsSpanDocumentsOnly(t *testing.T) {
	fsys := fstest.MapFS{
		"queries.jsonl":  {Data: []byte(`{"_id":"q1","text":"alpha?"}` + "\n" + `{"_id":"q2","text":"beta?"}` + "\n")},
		"qrels/test.tsv": {Data: []byte("q1\td1\t1\nq1\tscan-7.pdf\t2\nq2\td2\t0\n")},
		QuerySpansFile:   {Data: []byte(`{"query-id":"q1","corpus-id":"d1","byte_spans":[[0,3]]}` + "\n")},
	}
	fsys[CorpusFile] = &fstest.MapFile{Data: []byte(`{"_id":"d1","title":"T","text":"alpha"}` + "\n" + `{"_id":"d2","text":"beta"}` + "\n")}
	ds, err := Load(fsys, Options{Split: "test", Texts: TextsSpans})
	if err != nil {
		t.Fatal(err)
	}
	if !ds.HasCorpus() || len(ds.Corpus) != 1 || ds.Corpus[0].ID != "d1" || ds.Judgements != 2 || ds.Dropped.UnknownDocuments != 1 {
		t.Fatalf("corpus %+v, judgements %d, dropped %+v", ds.Corpus, ds.Judgements, ds.Dropped)
	}
	if _, ok := ds.Doc("d2"); ok {
		t.Fatal("d2's text kept although no span names it")
	}
	if s := ds.Spans["q1"]; len(s) != 1 || s[0].Spans[0] != (Span{Start: readerbeir.BodyStart("T"), End: readerbeir.BodyStart("T") + 3}) {
		t.Fatalf("spans %+v", s)
	}
}
