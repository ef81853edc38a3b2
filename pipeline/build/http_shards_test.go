package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/pipeline/stage"
	"github.com/ragops/ragops/vectorstore"
)

// tarGz packs the files of dir (flat) into a gzip-compressed tar.
func tarGz(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: "besluiten/" + e.Name(), Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Issue 51: an HTTP archive is fetched once per build, not once per pod. Of the 4 shards of
// a build of an HTTP Corpus the archive's server sees one download (shard 0's),
// the other shards write their documents from the build's stage, and together the shards
// write every document once. The stage is collected after use: no shard's parts are left.
// A second build (another Job) downloads it once more, not 4 times.
func TestHTTPShardsShareOneDownload(t *testing.T) {
	f := newFixture(t, 24)
	archive := tarGz(t, f.dir)
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		_, _ = w.Write(archive)
	}))
	t.Cleanup(srv.Close)
	cache, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	p := f.plan
	p.Shards, p.ExtractionCache = 4, cache
	p.Source = plan.Source{HTTP: &ragopsv1alpha1.HTTPSource{URL: srv.URL + "/besluiten.tar.gz"}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var unchanged, deleted, followerBytes atomic.Int64
	build := func(job string, incremental bool) int64 {
		t.Helper()
		t.Setenv(plan.EnvJobUID, job)
		p := p
		p.Incremental = incremental
		// One after the other, shard 0 first: the shards of this process share one temp
		// folder, where pods have their own (pipeline/stage tests followers that wait).
		var written atomic.Int64
		for shard := range p.Shards {
			res, err := Run(context.Background(), log, p, Options{Shard: shard, stageWait: 5 * time.Minute})
			if err != nil {
				t.Errorf("job %s shard %d: %v", job, shard, err)
			}
			written.Add(res.Documents)
			unchanged.Add(res.Unchanged)
			deleted.Add(res.Deleted)
			if shard > 0 && res.Reads != nil {
				followerBytes.Add(res.Reads.BytesFetched)
			}
		}
		return written.Load()
	}
	if written := build("job-1", false); written != 24 {
		t.Errorf("the shards wrote %d documents, want 24", written)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("a build of 4 shards downloaded the archive %d times, want once", n)
	}
	docs := map[string]bool{}
	for key := range f.objects(t) {
		docs[strings.SplitN(key, "#", 2)[0]] = true
	}
	if len(docs) != 24 {
		t.Errorf("the collection holds chunks of %d documents, want 24", len(docs))
	}
	// Only the run's root and the lead's bookkeeping may remain; every shard's parts are gone.
	var left []string
	if _, err := extractcache.Weaviate(f.store, cache).Collect(context.Background(), func(g string) bool {
		if stage.IsStage(g) {
			left = append(left, g)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	for _, g := range left {
		if filepath.Base(g) != "all" {
			t.Errorf("stage group %s left after the build", g)
		}
	}

	// A sync after one document changed: one download; the shards list the unchanged
	// documents from the stage without their bytes, keep them, and re-embed the changed one.
	changed := "# Besluit 5\n\nDe raad herziet het besluit over voorstel 5."
	writeDoc(t, f.dir, 5, changed)
	archive = tarGz(t, f.dir)
	gets.Store(0)
	unchanged.Store(0)
	deleted.Store(0)
	followerBytes.Store(0)
	build("job-2", true)
	// The lead staged the changed document's bytes only (the others' records say unchanged).
	want := int64(len(changed))
	if corpus.Shard(docName(5), 0, p.Shards) {
		want = 0 // shard 0's own document: nothing to stage
	}
	if followerBytes.Load() != want {
		t.Errorf("the followers read %d bytes from the sync's stage, want %d (the changed document's only)", followerBytes.Load(), want)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("a sync of 4 shards downloaded the archive %d times, want once", n)
	}
	if unchanged.Load() != 23 || deleted.Load() != 0 {
		t.Errorf("sync: %d unchanged, %d deleted; want 23 unchanged and none deleted", unchanged.Load(), deleted.Load())
	}
	docs = map[string]bool{}
	for key := range f.objects(t) {
		docs[strings.SplitN(key, "#", 2)[0]] = true
	}
	if len(docs) != 24 {
		t.Errorf("after the sync the collection holds chunks of %d documents, want 24", len(docs))
	}
}
