package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// checkManifest fails unless the collection's manifest covers it, with no incomplete record,
// docs documents and chunk counts summing to the collection's count.
func checkManifest(t *testing.T, f *fixture, collection string, docs int64) {
	t.Helper()
	ctx := context.Background()
	tot, err := f.store.ManifestTotals(ctx, collection)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.store.Count(ctx, collection)
	if err != nil {
		t.Fatal(err)
	}
	if want := (vectorstore.ManifestTotals{Covers: true, Documents: docs, Chunks: int64(n)}); tot != want {
		t.Fatalf("manifest of %s: %+v, want %+v (the collection holds %d chunks)", collection, tot, want, n)
	}
}

// Issue 51, one state read per sync: each of 2 shards of a sync reads its own manifest
// records (one object per document of the shard), not the collection's chunks; a revision
// without a manifest (built before manifests) is walked once by each shard, which records
// its own documents, and the next sync reads the manifest. The manifest sums to
// the collection after the build and after each sync. A folder source reports the bytes of
// the files each shard read.
func TestSyncReadsOnlyItsShardsManifest(t *testing.T) {
	const n = 40
	f := newFixture(t, n)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := f.plan
	p.Shards = 2
	shardBytes := map[int]int64{}
	shardDocs := map[int]int64{}
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		for s := range p.Shards {
			if corpus.Shard(e.Name(), s, p.Shards) {
				shardBytes[s] += info.Size()
				shardDocs[s]++
			}
		}
	}
	run := func(incremental bool, shard int) plan.BuildResult {
		t.Helper()
		q := p
		q.Incremental = incremental
		res, err := Run(ctx, quiet, q, Options{Shard: shard})
		if err != nil {
			t.Fatalf("shard %d: %v", shard, err)
		}
		return res
	}
	for s := range p.Shards {
		res := run(false, s)
		if res.Reads == nil || res.Reads.BytesFetched != shardBytes[s] {
			t.Errorf("build shard %d: reads %+v, want %d bytes fetched (its files, each once)", s, res.Reads, shardBytes[s])
		}
	}
	checkManifest(t, f, p.Collection, n)
	chunks, err := f.store.Count(ctx, p.Collection)
	if err != nil {
		t.Fatal(err)
	}
	for s := range p.Shards {
		res := run(true, s)
		if res.Unchanged != shardDocs[s] || res.ManifestReads != shardDocs[s] {
			t.Errorf("sync shard %d: %d unchanged, state read %d objects; want its %d documents each (the collection holds %d chunks)",
				s, res.Unchanged, res.ManifestReads, shardDocs[s], chunks)
		}
	}
	checkManifest(t, f, p.Collection, n)

	// A revision built before manifests: each shard walks the chunks once and records its
	// own documents; the next sync reads the manifest.
	if err := f.store.DeleteManifest(ctx, p.Collection); err != nil {
		t.Fatal(err)
	}
	for s := range p.Shards {
		if res := run(true, s); res.ManifestReads != int64(chunks) || res.Unchanged != shardDocs[s] {
			t.Errorf("shard %d's sync of a revision without a manifest: state read %d objects, %d unchanged; want the walk of all %d chunks, %d unchanged",
				s, res.ManifestReads, res.Unchanged, chunks, shardDocs[s])
		}
	}
	checkManifest(t, f, p.Collection, n)
	for s := range p.Shards {
		if res := run(true, s); res.ManifestReads != shardDocs[s] || res.Unchanged != shardDocs[s] {
			t.Errorf("shard %d's sync after the migration: state read %d objects, %d unchanged; want %d each", s, res.ManifestReads, res.Unchanged, shardDocs[s])
		}
	}

	// A changed and a removed document: the manifest follows.
	writeDoc(t, f.dir, 2, "# Besluit 2\n\nGewijzigd: de raad besluit anders over de haven en de begroting.")
	if err := os.Remove(filepath.Join(f.dir, docName(5))); err != nil {
		t.Fatal(err)
	}
	for s := range p.Shards {
		run(true, s)
	}
	checkManifest(t, f, p.Collection, n-1)
}

// checkRecords fails unless collection's manifest holds exactly one record per document of
// the collection, of shards shards, each complete with the document's hash and chunk count as
// its chunks hold them.
func checkRecords(t *testing.T, f *fixture, collection string, shards int) {
	t.Helper()
	ctx := context.Background()
	states, err := f.store.DocumentStates(ctx, collection, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]vectorstore.ManifestRecord{}
	for k := range shards {
		read, err := f.store.ManifestRecords(ctx, collection, k, shards, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		for id, r := range read.Records {
			recs[id] = r
		}
	}
	for id, st := range states {
		if r, ok := recs[id]; !ok || !r.Complete || r.Hash != st.Hash || r.Chunks != st.Chunks {
			t.Errorf("document %s: record %+v (found %v), its chunks hold hash %s, %d chunks", id, r, ok, st.Hash, st.Chunks)
		}
	}
	for id := range recs {
		if _, ok := states[id]; !ok {
			t.Errorf("record of %s, a document with no chunks", id)
		}
	}
}

// Issue 51, the migration race: two shards sync a revision whose manifest is gone (built
// before manifests) at once. Shard 1 walks the collection first and writes what it found only
// after shard 0 has migrated, changed one of its documents and removed another: shard 1's
// stale view of shard 0's documents must not reach the manifest. Each shard migrates its own
// documents, so the manifest ends with one record per document, with the counts and hashes
// the chunks hold, and covers the collection. A migration retried after it stopped between
// the records and the marks (marks deleted) walks again and duplicates nothing.
func TestConcurrentMigrationsRecordEachDocumentOnce(t *testing.T) {
	const n = 24
	f := newFixture(t, n)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := f.plan
	p.Shards = 2
	for s := range p.Shards {
		if _, err := Run(ctx, quiet, p, Options{Shard: s}); err != nil {
			t.Fatal(err)
		}
	}
	var mine []int // shard 0's documents
	for i := range n {
		if corpus.Shard(docName(i), 0, p.Shards) {
			mine = append(mine, i)
		}
	}
	if len(mine) < 2 || len(mine) == n {
		t.Fatalf("shard 0 holds %d of %d documents", len(mine), n)
	}
	if err := f.store.DeleteManifest(ctx, p.Collection); err != nil {
		t.Fatal(err)
	}
	writeDoc(t, f.dir, mine[0], "# Besluit\n\nGewijzigd: de raad besluit anders over de haven, de begroting en de motie van het jaar.")
	if err := os.Remove(filepath.Join(f.dir, docName(mine[1]))); err != nil {
		t.Fatal(err)
	}
	p.Incremental = true
	walked, release := make(chan struct{}), make(chan struct{})
	var late plan.BuildResult
	lateErr := make(chan error, 1)
	go func() {
		var err error
		late, err = Run(ctx, quiet, p, Options{Shard: 1, migrating: func() { close(walked); <-release }})
		lateErr <- err
	}()
	select {
	case <-walked:
	case err := <-lateErr:
		t.Fatalf("shard 1 ended (%v) without migrating", err)
	}
	first, err := Run(ctx, quiet, p, Options{Shard: 0})
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-lateErr; err != nil {
		t.Fatal(err)
	}
	if first.Documents != 1 || first.Deleted != 1 || late.Documents != 0 {
		t.Errorf("shard 0 wrote %d and removed %d documents, shard 1 wrote %d; want 1, 1 and 0", first.Documents, first.Deleted, late.Documents)
	}
	checkRecords(t, f, p.Collection, p.Shards)
	checkManifest(t, f, p.Collection, n-1)

	// A retried migration: the records are there, the marks are not.
	name := vectorstore.ManifestName(p.Collection)
	if _, err := f.store.Client().Batch().ObjectsBatchDeleter().WithClassName(name).WithWhere(filters.Where().
		WithPath([]string{vectorstore.PropManifestShards}).WithOperator(filters.Equal).WithValueInt(0)).Do(ctx); err != nil {
		t.Fatal(err)
	}
	if covers, err := f.store.ManifestCovers(ctx, p.Collection); err != nil || covers {
		t.Fatalf("manifest covers %v (%v) with its marks deleted", covers, err)
	}
	chunks, err := f.store.Count(ctx, p.Collection)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]plan.BuildResult, p.Shards)
	errs := make([]error, p.Shards)
	for s := range p.Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[s], errs[s] = Run(ctx, quiet, p, Options{Shard: s})
		}()
	}
	wg.Wait()
	for s, res := range results {
		if errs[s] != nil {
			t.Fatalf("shard %d: %v", s, errs[s])
		}
		if res.ManifestReads != int64(chunks) || res.Documents != 0 {
			t.Errorf("retried migration, shard %d: state read %d objects, %d documents written; want the walk of %d chunks, 0", s, res.ManifestReads, res.Documents, chunks)
		}
	}
	checkRecords(t, f, p.Collection, p.Shards)
	checkManifest(t, f, p.Collection, n-1)
	objects, err := f.store.Count(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if want := n - 1 + 1 + p.Shards; objects != want {
		t.Errorf("manifest holds %d objects after a retried migration, want %d (one record per document, the mark and one mark per shard)", objects, want)
	}
}

// s3Corpus serves f's documents from an S3-protocol server (gofakes3) under docs/besluiten/
// and counts the GET-object requests.
type s3Corpus struct {
	backend *s3mem.Backend
	mu      sync.Mutex
	gets    []string
	source  plan.Source
}

func newS3Corpus(t *testing.T, dir string) *s3Corpus {
	t.Helper()
	t.Setenv(plan.EnvS3AccessKey, "build-test")
	t.Setenv(plan.EnvS3SecretKey, "build-test-secret")
	c := &s3Corpus{backend: s3mem.New()}
	if err := c.backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		c.put(t, e.Name(), string(body))
	}
	s3 := gofakes3.New(c.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			c.mu.Lock()
			c.gets = append(c.gets, strings.TrimPrefix(r.URL.Path, "/docs/besluiten/"))
			c.mu.Unlock()
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.source = plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "docs",
		Prefix: "besluiten/", Insecure: true, Region: "us-east-1"}}
	return c
}

func (c *s3Corpus) put(t *testing.T, name, body string) {
	t.Helper()
	if _, err := c.backend.PutObject("docs", "besluiten/"+name, map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)},
		strings.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatal(err)
	}
}

// take returns the objects downloaded since the last take, sorted.
func (c *s3Corpus) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.gets
	c.gets = nil
	sort.Strings(out)
	return out
}

// Issue 51, S3 syncs decide unchanged from listing metadata: after a build of 12 objects, a
// sync after 3 of them changed issues exactly 3 GETs (the changed objects) and fetches
// their bytes only; the 9 others are unchanged by their listing identity (key, ETag, size)
// held in the manifest, never downloaded. A sync with nothing changed downloads nothing.
func TestS3SyncDownloadsOnlyTheChangedObjects(t *testing.T) {
	const n = 12
	f := newFixture(t, n)
	s3 := newS3Corpus(t, f.dir)
	p := f.plan
	p.Source = s3.source
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	res, err := Run(context.Background(), log, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i := range n {
		info, err := os.Stat(filepath.Join(f.dir, docName(i)))
		if err != nil {
			t.Fatal(err)
		}
		total += info.Size()
	}
	if got := s3.take(); len(got) != n || res.Reads == nil || res.Reads.BytesFetched != total {
		t.Fatalf("build downloaded %d objects, reads %+v; want %d objects, %d bytes", len(got), res.Reads, n, total)
	}
	changed := []string{docName(1), docName(4), docName(9)}
	var changedBytes int64
	for i, name := range changed {
		body := "# Gewijzigd\n\nDe raad besluit opnieuw over voorstel " + strings.Repeat("x", i+1) + "."
		s3.put(t, name, body)
		changedBytes += int64(len(body))
	}
	p.Incremental = true
	res, err = Run(context.Background(), log, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := s3.take()
	if strings.Join(got, ",") != strings.Join(changed, ",") {
		t.Errorf("sync after 3 of %d objects changed downloaded %v, want exactly %v", n, got, changed)
	}
	if res.Documents != 3 || res.Unchanged != n-3 || res.Reads == nil || res.Reads.BytesFetched != changedBytes {
		t.Errorf("sync: %d written, %d unchanged, reads %+v; want 3, %d, %d bytes fetched", res.Documents, res.Unchanged, res.Reads, n-3, changedBytes)
	}
	if res, err = Run(context.Background(), log, p, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := s3.take(); len(got) != 0 || res.Unchanged != n || res.Reads.BytesFetched != 0 {
		t.Errorf("sync with nothing changed downloaded %v (%d unchanged, %d bytes)", got, res.Unchanged, res.Reads.BytesFetched)
	}
	checkManifest(t, f, p.Collection, n)
}

// chunkFields returns each document's values of the properties props as its chunks hold
// them ("docId" -> props joined by "|"), failing when a document's chunks disagree.
func chunkFields(t *testing.T, f *fixture, collection string, props ...string) map[string]string {
	t.Helper()
	res, err := f.store.Client().Experimental().Search().WithCollection(collection).WithLimit(10000).
		WithProperties(append([]string{vectorstore.PropDocID}, props...)...).Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range res {
		vals := make([]string, len(props))
		for i, p := range props {
			vals[i] = fmt.Sprint(r.Properties[p])
		}
		id, v := fmt.Sprint(r.Properties[vectorstore.PropDocID]), strings.Join(vals, "|")
		if old, ok := out[id]; ok && old != v {
			t.Fatalf("chunks of %s disagree: %q and %q", id, old, v)
		}
		out[id] = v
	}
	return out
}

// Issue 51, S3 syncs with a field the reader gives (a front-matter title): the reader's value
// of an unchanged object comes with its chunks, or from the extraction cache by the raw
// SHA-256 its manifest record holds, never from a download. After a build of 12 objects, a
// sync after 3 changed issues exactly the 3 GETs of the changed objects, and every
// document's chunks hold its title. Then a new field declaration (a metadata-only change of
// every document) downloads nothing: the 12 titles come from the cache, each chunk gets the
// new field, and no document is embedded again. With the cache dropped, the next
// metadata-only change downloads and reads each object (a cache miss downloads).
func TestS3SyncWithReaderFieldsDownloadsOnlyTheChangedObjects(t *testing.T) {
	const n = 12
	f := newFixture(t, 0)
	titles, sizes := map[string]string{}, map[string]int{}
	doc := func(i int, title string) string {
		body := fmt.Sprintf("---\ntitle: %s\n---\n# %s\n\nDe raad besluit over voorstel %d en de begroting.\n", title, title, i)
		titles[docName(i)], sizes[docName(i)] = title, len(body)
		return body
	}
	for i := range n {
		writeDoc(t, f.dir, i, doc(i, fmt.Sprintf("Besluit %d", i)))
	}
	s3 := newS3Corpus(t, f.dir)
	cache, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	title := ragopsv1alpha1.MetadataField{Name: "title", Type: ragopsv1alpha1.MetadataText, From: ragopsv1alpha1.MetadataSource{Reader: "title"}}
	p := f.plan
	p.Source = s3.source
	p.Source.Metadata = &ragopsv1alpha1.MetadataSpec{Fields: []ragopsv1alpha1.MetadataField{title}}
	p.ExtractionCache = cache
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := Run(context.Background(), log, p, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := s3.take(); len(got) != n {
		t.Fatalf("build downloaded %d objects, want %d", len(got), n)
	}
	changed := []string{docName(2), docName(5), docName(11)}
	for _, i := range []int{2, 5, 11} {
		s3.put(t, docName(i), doc(i, fmt.Sprintf("Gewijzigd besluit %d", i)))
	}
	p.Incremental = true
	res, err := Run(context.Background(), log, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s3.take(); strings.Join(got, ",") != strings.Join(changed, ",") {
		t.Errorf("sync after 3 of %d objects changed downloaded %v, want exactly %v", n, got, changed)
	}
	if res.Documents != 3 || res.Unchanged != n-3 || res.MetadataUpdated != 0 {
		t.Errorf("sync: %d written, %d unchanged, %d metadata updated; want 3, %d, 0", res.Documents, res.Unchanged, res.MetadataUpdated, n-3)
	}
	got := chunkFields(t, f, p.Collection, "title")
	if len(got) != n {
		t.Errorf("%d documents have chunks, want %d", len(got), n)
	}
	for id, tt := range titles {
		if got[id] != tt {
			t.Errorf("%s: chunks hold title %q, want %q", id, got[id], tt)
		}
	}

	// A field added: every document's metadata changes; the titles come from the cache.
	p.Source.Metadata = &ragopsv1alpha1.MetadataSpec{Fields: []ragopsv1alpha1.MetadataField{title,
		{Name: "bytes", Type: ragopsv1alpha1.MetadataInt, From: ragopsv1alpha1.MetadataSource{Source: corpus.MetaSourceSize}}}}
	if res, err = Run(context.Background(), log, p, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := s3.take(); len(got) != 0 {
		t.Errorf("metadata-only sync downloaded %v, want nothing", got)
	}
	if res.MetadataUpdated != n || res.Documents != 0 || res.Tokens != 0 || res.Reads == nil || res.Reads.CacheHits != n || res.Reads.Extracted != 0 {
		t.Errorf("metadata-only sync: %d metadata updated, %d written, %d tokens, reads %+v; want %d, 0, 0 and %d cache hits, 0 extracted",
			res.MetadataUpdated, res.Documents, res.Tokens, res.Reads, n, n)
	}
	got = chunkFields(t, f, p.Collection, "title", "bytes")
	for id, tt := range titles {
		if want := fmt.Sprintf("%s|%d", tt, sizes[id]); got[id] != want {
			t.Errorf("%s: chunks hold title|bytes %q, want %q", id, got[id], want)
		}
	}

	// The cache gone: a metadata-only change downloads each object it needs the title of.
	if err := f.store.Client().Schema().ClassDeleter().WithClassName(cache).Do(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Source.Metadata = &ragopsv1alpha1.MetadataSpec{Fields: []ragopsv1alpha1.MetadataField{title}}
	if res, err = Run(context.Background(), log, p, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := s3.take(); len(got) != n || res.MetadataUpdated != n || res.Documents != 0 || res.Reads.Extracted != n {
		t.Errorf("metadata-only sync without the cache: downloaded %v, %d metadata updated, %d written, reads %+v; want all %d downloaded, extracted and updated",
			got, res.MetadataUpdated, res.Documents, res.Reads, n)
	}
	got = chunkFields(t, f, p.Collection, "title")
	for id, tt := range titles {
		if got[id] != tt {
			t.Errorf("%s: chunks hold title %q after the cache was dropped, want %q", id, got[id], tt)
		}
	}
	checkManifest(t, f, p.Collection, n)
}

// startWorker runs shard 0 of p in a child process, the way a Job's pod runs `ragops embed`
// (see TestMain), writing its result to the returned path.
func startWorker(t *testing.T, p plan.Build) (*exec.Cmd, string) {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, plan.File)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join(dir, "result.json")
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "RAGOPS_TEST_EMBED_PLAN="+path, "RAGOPS_TEST_EMBED_RESULT="+result)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, result
}

// Issue 51, a pod kill during a cached build: with the extraction cache warm (an earlier
// revision read the same corpus), a build's worker is SIGKILLed mid-way and run again. The
// retry reads no document (every one from the cache, or resumed), the collection holds
// exactly the chunks of a clean build, each once, and the manifest is complete: one record
// per document, none incomplete, chunk counts summing to the collection's count.
func TestKilledCachedBuildResumesExact(t *testing.T) {
	const n = 160
	f := newFixture(t, n)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	p := f.plan
	p.ExtractionCache = cache
	warm := p
	warm.Collection, warm.Revision = warm.Collection+"_warm", "r0"
	if res, err := Run(ctx, quiet, warm, Options{}); err != nil || res.Reads == nil || res.Reads.Extracted != n {
		t.Fatalf("warming build: %v, reads %+v", err, res.Reads)
	}
	clean := p
	clean.Collection += "_clean"
	if _, err := Run(ctx, quiet, clean, Options{}); err != nil {
		t.Fatal(err)
	}
	want := f.objectsOf(t, clean.Collection)

	first, _ := startWorker(t, p)
	ended := make(chan error, 1)
	go func() { ended <- first.Wait() }()
	for at := 0; at == 0; {
		select {
		case err := <-ended:
			t.Fatalf("the worker ended (%v) before it could be killed", err)
		case <-time.After(20 * time.Millisecond):
		}
		// Killed once some documents are recorded complete (a flush finished) and some
		// chunks beyond them may be in.
		read, err := f.store.ManifestRecords(ctx, p.Collection, 0, 1, 0, nil)
		if err != nil {
			continue
		}
		for _, r := range read.Records {
			if r.Complete {
				at++
			}
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ended
	if ws, ok := first.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the worker was not killed (%v)", first.ProcessState)
	}
	killed, _ := f.store.Count(ctx, p.Collection)
	if killed >= len(want) {
		t.Fatalf("the worker had written %d of %d chunks when killed: no fault mid-build", killed, len(want))
	}
	complete := completeRecords(t, f)
	retry, resultPath := startWorker(t, p)
	if err := retry.Wait(); err != nil {
		t.Fatalf("retried shard: %v", err)
	}
	var res plan.BuildResult
	raw, err := os.ReadFile(resultPath)
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil {
		t.Fatalf("result of the retry: %v", err)
	}
	if res.Reads == nil || res.Reads.Extracted != 0 || res.Reads.CacheHits != n || res.Resumed != int64(complete) || res.Documents != n {
		t.Errorf("retry: reads %+v, %d resumed, %d documents; want 0 extracted, %d cache hits, %d resumed (complete at the kill), %d documents",
			res.Reads, res.Resumed, res.Documents, n, complete, n)
	}
	got := f.objectsOf(t, p.Collection)
	assertSame(t, "after a kill during a cached build", got, want)
	count, err := f.store.Count(ctx, p.Collection)
	if err != nil || count != len(want) || res.ShardChunks == nil || *res.ShardChunks != int64(count) {
		t.Fatalf("collection holds %d chunks (%v), the retry reported %v, a clean build %d", count, err, res.ShardChunks, len(want))
	}
	checkManifest(t, f, p.Collection, n)
	t.Logf("killed with %d of %d chunks written and %d documents recorded complete; the retry read 0 documents (%d cache hits) and left %d chunks, each once",
		killed, len(want), complete, res.Reads.CacheHits, count)
}
