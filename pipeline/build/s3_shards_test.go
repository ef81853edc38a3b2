package build

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// Issue 51, each pod fetches its own part: the 4 shards of a build of an S3 Corpus each
// download exactly their own objects (GET-object requests counted at an S3-protocol server,
// gofakes3), each object once in all, and together write every document. A sync with
// nothing changed and an extraction cache downloads nothing: each shard knows its own
// objects unchanged by their listing identity, and shard 0, which hashes the whole listing
// to collect the cache, knows the others' by their manifest records.
func TestS3ShardsDownloadOnlyTheirOwnObjects(t *testing.T) {
	f := newFixture(t, 24)
	t.Setenv(plan.EnvS3AccessKey, "build-test")
	t.Setenv(plan.EnvS3SecretKey, "build-test-secret")
	backend := s3mem.New()
	if err := backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join(f.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := backend.PutObject("docs", "besluiten/"+e.Name(), map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)},
			strings.NewReader(string(body)), int64(len(body)), nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var gets []string
	s3 := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			mu.Lock()
			gets = append(gets, strings.TrimPrefix(r.URL.Path, "/docs/besluiten/"))
			mu.Unlock()
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := gets
		gets = nil
		sort.Strings(out)
		return out
	}
	p := f.plan
	p.Shards = 4
	p.Source = plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "docs", Prefix: "besluiten/", Insecure: true, Region: "us-east-1"}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var total, written int64
	for shard := range p.Shards {
		res, err := Run(context.Background(), log, p, Options{Shard: shard})
		if err != nil {
			t.Fatalf("shard %d: %v", shard, err)
		}
		var want []string
		for _, e := range entries {
			if corpus.Shard(e.Name(), shard, p.Shards) {
				want = append(want, e.Name())
			}
		}
		got := take()
		if len(want) == 0 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("shard %d downloaded %v, want its own objects %v", shard, got, want)
		}
		total += int64(len(got))
		written += res.Documents
	}
	if total != int64(len(entries)) || written != int64(len(entries)) {
		t.Errorf("the shards downloaded %d objects and wrote %d documents, want each of the %d once", total, written, len(entries))
	}

	cache, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	p.ExtractionCache, p.Incremental = cache, true
	for shard := range p.Shards {
		if _, err := Run(context.Background(), log, p, Options{Shard: shard}); err != nil {
			t.Fatalf("sync shard %d: %v", shard, err)
		}
		// Nothing changed: a shard downloads none of its own objects (unchanged by their
		// listing identity, held in the manifest), and shard 0, which hashes the whole
		// listing to collect the extraction cache, none of the others' (their records).
		if got := take(); len(got) != 0 {
			t.Errorf("sync shard %d with an extraction cache downloaded %v of %d objects", shard, got, len(entries))
		}
	}
}
