package corpus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
	"github.com/ragops/ragops/vectorstore"
)

// readAll walks s reading every document and returns them by ID; a skip fails the test.
func readAll(t *testing.T, s *Source) map[string]Document {
	t.Helper()
	docs := map[string]Document{}
	err := s.Walk(context.Background(), false, nil, func(d Document) error { docs[d.ID] = d; return nil },
		func(sk Skipped) { t.Errorf("skipped %+v", sk) })
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func wantMeta(t *testing.T, id string, got, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s metadata\n got %v\nwant %v", id, got, want)
	}
}

// Issue 52, each source adds its own: a folder (PVC, ConfigMap) gives each document its
// path, size and modification time beside the reader's fields; a BEIR record gets its
// file's path and time and its line's size. Text, ID and hash stay what they were.
func TestSourceFieldsOfAFolder(t *testing.T) {
	dir := t.TempDir()
	md := "---\ntitle: Windenergie\n---\n# Motie\n\nAangenomen.\n"
	line := `{"_id":"r1","title":"Record","text":"Een record."}`
	write := func(rel, body string, at time.Time) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := writeFile(p, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("moties/2019/a.md", md, time.Date(2019, 5, 6, 7, 8, 9, 0, time.FixedZone("CEST", 2*3600)))
	write("beir/corpus.jsonl", line+"\n", time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(context.Background(), plan.Source{Dir: dir}, t.TempDir(), reader.NewMux(0, markup.Markdown{}))
	if err != nil {
		t.Fatal(err)
	}
	docs := readAll(t, s)
	a := docs["moties/2019/a.md"]
	wantMeta(t, a.ID, a.Doc.Metadata, map[string]any{
		reader.MetaTitle:                       "Windenergie",
		reader.MetaFrontMatterPrefix + "title": "Windenergie",
		MetaSourcePath:                         "moties/2019/a.md",
		MetaSourceSize:                         "48",
		MetaSourceModified:                     "2019-05-06T05:08:09Z",
	})
	if a.Hash != hashOf([]byte(md)) || a.Size != int64(len(md)) || strings.Contains(a.Doc.Text, "source.") || strings.Contains(a.Doc.Text, "2019-05-06") {
		t.Errorf("a.md hash %s size %d text %q: source fields changed the document", a.Hash, a.Size, a.Doc.Text)
	}
	r := docs["r1"]
	wantMeta(t, r.ID, r.Doc.Metadata, map[string]any{
		reader.MetaTitle:   "Record",
		MetaSourcePath:     "beir/corpus.jsonl",
		MetaSourceSize:     "50",
		MetaSourceModified: "2020-01-02T03:04:05Z",
	})
}

// Issue 52: an S3 object's fields are its path below the prefix, size, LastModified and user
// metadata, the last taken from the download's own response: one GET per object, no HEAD.
func TestSourceFieldsOfS3(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	at := time.Date(2022, 3, 1, 12, 30, 0, 0, time.UTC)
	backend := s3mem.New(s3mem.WithTimeSource(gofakes3.FixedTimeSource(at)))
	if err := backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	put := func(key, body string, meta map[string]string) {
		t.Helper()
		meta["Last-Modified"] = at.Format(http.TimeFormat)
		if _, err := backend.PutObject("docs", key, meta, strings.NewReader(body), int64(len(body)), nil); err != nil {
			t.Fatal(err)
		}
	}
	put("archief/moties/a.md", "# Motie\n\nWindenergie.\n", map[string]string{"X-Amz-Meta-Dossier-Type": "motie", "X-Amz-Meta-Vertrouwelijk": "nee"})
	put("archief/b.md", "# B\n", map[string]string{})
	var (
		mu       sync.Mutex
		requests []string
	)
	fake := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path)
		mu.Unlock()
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "docs", Prefix: "archief/", Insecure: true, Region: "us-east-1"}}
	s, err := Open(context.Background(), src, t.TempDir(), reader.NewMux(0, markup.Markdown{}))
	if err != nil {
		t.Fatal(err)
	}
	docs := readAll(t, s)
	wantMeta(t, "moties/a.md", docs["moties/a.md"].Doc.Metadata, map[string]any{
		MetaSourcePath:                       "moties/a.md",
		MetaSourceSize:                       "22",
		MetaSourceModified:                   "2022-03-01T12:30:00Z",
		MetaSourceS3Prefix + "dossier-type":  "motie",
		MetaSourceS3Prefix + "vertrouwelijk": "nee",
	})
	wantMeta(t, "b.md", docs["b.md"].Doc.Metadata, map[string]any{
		MetaSourcePath:     "b.md",
		MetaSourceSize:     "4",
		MetaSourceModified: "2022-03-01T12:30:00Z",
	})
	objectRequests := map[string]int{}
	for _, r := range requests {
		if strings.Count(strings.Trim(strings.SplitN(r, " ", 2)[1], "/"), "/") >= 1 {
			objectRequests[r]++
		}
	}
	if want := map[string]int{"GET /docs/archief/moties/a.md": 1, "GET /docs/archief/b.md": 1}; !reflect.DeepEqual(objectRequests, want) {
		t.Errorf("object requests %v, want one GET each (%v)", objectRequests, requests)
	}
}

// Issue 52: a Git source's fields are the checked-out commit and its committer time.
func TestSourceFieldsOfGit(t *testing.T) {
	requireGit(t)
	r := makeRepo(t)
	src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: "file://" + r.dir, Ref: "main", Path: "docs"}, Include: []string{"**/*.md"}}
	s, err := Open(context.Background(), src, t.TempDir(), reader.NewMux(0, markup.Markdown{}))
	if err != nil {
		t.Fatal(err)
	}
	docs := readAll(t, s)
	wantMeta(t, "c.md", docs["c.md"].Doc.Metadata, map[string]any{
		MetaSourcePath:      "c.md",
		MetaSourceSize:      "31",
		MetaSourceModified:  "2026-01-02T03:06:05Z", // commit2: makeRepo's second minute
		MetaSourceGitCommit: r.commit2.String(),
	})
}

// memCache is an in-memory extractcache.Store.
type memCache struct{ m map[string]vectorstore.Blob }

func (c *memCache) Get(_ context.Context, key string) (vectorstore.Blob, bool, error) {
	e, ok := c.m[key]
	return e, ok, nil
}
func (c *memCache) Put(_ context.Context, e vectorstore.Blob) error         { c.m[e.Key] = e; return nil }
func (c *memCache) Collect(context.Context, func(string) bool) (int, error) { return 0, nil }

// Issue 52: the extraction cache keys by the raw bytes, so two files with the same bytes
// share one entry; the one served from the cache still gets its own path and time, and the
// entry holds no source field.
func TestSourceFieldsAfterAnExtractionCacheHit(t *testing.T) {
	dir := t.TempDir()
	body := "# Zelfde\n\nDezelfde bytes.\n"
	for rel, at := range map[string]time.Time{
		"a/een.md":  time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC),
		"b/twee.md": time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC),
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := writeFile(p, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	store := &memCache{m: map[string]vectorstore.Blob{}}
	cache := extractcache.NewReader(reader.NewMux(0, markup.Markdown{}), store, "test", nil)
	s, err := Open(context.Background(), plan.Source{Dir: dir}, t.TempDir(), cache)
	if err != nil {
		t.Fatal(err)
	}
	docs := readAll(t, s)
	if st := cache.Stats(); st.Hits != 1 || st.Extracted != 1 || len(store.m) != 1 {
		t.Fatalf("cache stats %+v with %d entries, want one extraction and one hit", st, len(store.m))
	}
	for id, modified := range map[string]string{"a/een.md": "2021-01-01T00:00:00Z", "b/twee.md": "2023-06-01T00:00:00Z"} {
		wantMeta(t, id, docs[id].Doc.Metadata, map[string]any{MetaSourcePath: id, MetaSourceSize: "26", MetaSourceModified: modified})
	}
	for _, e := range store.m {
		if strings.Contains(string(e.Payload), "source.") {
			t.Errorf("cache entry holds source fields")
		}
	}
}
