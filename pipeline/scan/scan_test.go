package scan

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// TestScanOfS3ListsWithoutDownloading: the scan of an S3 Corpus takes its documents, bytes and
// revision from the bucket listing and makes no GET-object request (counted at an S3-protocol
// server, gofakes3); a rewritten object changes the revision.
func TestScanOfS3ListsWithoutDownloading(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, "scan-test")
	t.Setenv(plan.EnvS3SecretKey, "scan-test-secret")
	backend := s3mem.New()
	if err := backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) {
		t.Helper()
		meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}
		if _, err := backend.PutObject("docs", key, meta, strings.NewReader(body), int64(len(body)), nil); err != nil {
			t.Fatal(err)
		}
	}
	bodies := map[string]string{"archive/a.md": "# A\n\nEerste notulen.\n", "archive/b.md": "# B\n\nTweede notulen.\n", "archive/c/d.txt": "Derde.\n"}
	var bytes int64
	for k, v := range bodies {
		put(k, v)
		bytes += int64(len(v))
	}
	var gets, requests atomic.Int64
	s3 := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 { // /bucket/key
			gets.Add(1)
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "docs", Prefix: "archive/", Insecure: true, Region: "us-east-1"}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	res, err := Run(context.Background(), log, src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if requests.Load() == 0 {
		t.Fatal("the scan made no request: the server was not used")
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("the scan made %d GET-object requests, want 0 (listing metadata only)", n)
	}
	if res.Documents != 3 || res.Bytes != bytes || res.Revision == "" {
		t.Errorf("scan %+v, want 3 documents of %d bytes and a revision", res, bytes)
	}
	put("archive/b.md", "# B\n\nTweede notulen, gewijzigd.\n")
	res2, err := Run(context.Background(), log, src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res2.Revision == res.Revision {
		t.Errorf("revision %s unchanged after b.md was rewritten", res.Revision)
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("the scans made %d GET-object requests, want 0", n)
	}
}
