package corpus

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
)

const (
	testAccessKey = "ragops-test-access"
	testSecretKey = "ragops-test-secret"
)

// fakeS3 is an S3-protocol server (gofakes3, in-memory) behind httptest. gofakes3 does not
// check request signatures, so a wrapper refuses requests whose SigV4 Authorization header
// does not carry testAccessKey (the secret key is not verified) and records object GETs.
type fakeS3 struct {
	backend *s3mem.Backend
	server  *httptest.Server
	mu      sync.Mutex
	gets    []string // object paths fetched, "/bucket/key"
	tokens  []string // X-Amz-Security-Token of each accepted request ("" for static keys)
}

func newFakeS3(t *testing.T, bucket string, objects map[string]string) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	if err := f.backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	for key, body := range objects {
		if _, err := f.backend.PutObject(bucket, key, map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}, strings.NewReader(body), int64(len(body)), nil); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	s3 := gofakes3.New(f.backend).Server()
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+testAccessKey+"/") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`))
			return
		}
		f.mu.Lock()
		f.tokens = append(f.tokens, r.Header.Get("X-Amz-Security-Token"))
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			f.gets = append(f.gets, r.URL.Path)
		}
		f.mu.Unlock()
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(f.server.Close)
	return f
}

func (f *fakeS3) endpoint(t *testing.T) string {
	u, err := url.Parse(f.server.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestS3ListsPrefixSelectsAndWalks(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	big := strings.Repeat("large document ", 100) // 1500 bytes
	objects := map[string]string{
		"corpus/a.md":         "# Aspirin\n\nAspirin lowers the risk of stroke.\n",
		"corpus/sub/b.txt":    "Statins lower cholesterol.\n",
		"corpus/sub/c.log":    "not included\n",
		"corpus/drafts/d.md":  "excluded draft\n",
		"corpus/big.md":       big,
		"corpus/empty-dir/":   "",
		"other/outside.md":    "outside the prefix\n",
		"corpusx/neighbor.md": "shares the prefix string only\n",
	}
	f := newFakeS3(t, "docs", objects)
	work := t.TempDir()
	src := plan.Source{
		S3:               &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Prefix: "corpus/", Insecure: true, Region: "us-east-1"},
		Include:          []string{"**/*.md", "**/*.txt"},
		Exclude:          []string{"drafts/**"},
		MaxDocumentBytes: 1000,
	}
	s, err := Open(context.Background(), src, work, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(work, "s3"); s.Root() != want {
		t.Errorf("root %s, want %s", s.Root(), want)
	}
	for rel, key := range map[string]string{"a.md": "corpus/a.md", "sub/b.txt": "corpus/sub/b.txt"} {
		got, err := os.ReadFile(filepath.Join(s.Root(), filepath.FromSlash(rel)))
		if err != nil || string(got) != objects[key] {
			t.Errorf("%s: %q, %v; want the bytes of %s", rel, got, err, key)
		}
	}
	for _, rel := range []string{"sub/c.log", "drafts/d.md", "outside.md", "neighbor.md", "other/outside.md", "x/neighbor.md"} {
		if _, err := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(rel))); !os.IsNotExist(err) {
			t.Errorf("%s exists (err %v), want it not selected", rel, err)
		}
	}
	// Only the selected objects within the size limit were downloaded.
	sort.Strings(f.gets)
	if got := strings.Join(f.gets, ","); got != "/docs/corpus/a.md,/docs/corpus/sub/b.txt" {
		t.Errorf("objects downloaded: %s; want a.md and sub/b.txt only", got)
	}

	var docs []Document
	var skipped []Skipped
	err = s.Walk(context.Background(), true, nil, func(d Document) error {
		docs = append(docs, d)
		return nil
	}, func(sk Skipped) { skipped = append(skipped, sk) })
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].ID != "a.md" || docs[1].ID != "sub/b.txt" {
		t.Fatalf("documents %+v, want a.md and sub/b.txt", docs)
	}
	if docs[0].Hash != hashOf([]byte(objects["corpus/a.md"])) || docs[1].Size != int64(len(objects["corpus/sub/b.txt"])) {
		t.Errorf("documents %+v: hash or size differs from the objects", docs)
	}
	if len(skipped) != 1 || skipped[0].ID != "big.md" || skipped[0].Reason != string(reader.TooLarge) || !strings.Contains(skipped[0].Err.Error(), "1500 bytes") {
		t.Errorf("skipped %+v, want big.md TooLarge at 1500 bytes", skipped)
	}

	// The same files as a folder give the same content revision.
	dir := t.TempDir()
	for key, body := range objects {
		if rel, ok := strings.CutPrefix(key, "corpus/"); ok && !strings.HasSuffix(key, "/") {
			if err := writeFile(filepath.Join(dir, filepath.FromSlash(rel)), strings.NewReader(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	local := src
	local.S3, local.Dir = nil, dir
	ls, err := Open(context.Background(), local, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var localDocs []Document
	if err := ls.Walk(context.Background(), true, nil, func(d Document) error { localDocs = append(localDocs, d); return nil }, func(Skipped) {}); err != nil {
		t.Fatal(err)
	}
	if a, b := Revision(docs), Revision(localDocs); a != b {
		t.Errorf("revision %s from S3, %s from the same files in a folder", a, b)
	}

	// A second Open replaces the folder: an object deleted in between is gone.
	if _, err := f.backend.DeleteObject("docs", "corpus/sub/b.txt"); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(context.Background(), src, work, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s2.Root(), "sub", "b.txt")); !os.IsNotExist(err) {
		t.Errorf("sub/b.txt still there after it was deleted from the bucket (err %v)", err)
	}
}

func TestS3RefusesWrongCredentialsAndMissingBucket(t *testing.T) {
	f := newFakeS3(t, "docs", map[string]string{"a.md": "text"})
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Insecure: true}}

	t.Setenv(plan.EnvS3AccessKey, "someone-else")
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	_, err := Open(context.Background(), src, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "s3://docs/") || !strings.Contains(err.Error(), "Access Key Id") {
		t.Errorf("wrong access key: err %v, want a refusal naming the bucket", err)
	}

	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, "")
	_, err = Open(context.Background(), src, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), plan.EnvS3SecretKey) {
		t.Errorf("secret key unset: err %v, want one naming %s", err, plan.EnvS3SecretKey)
	}

	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	missing := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "nope", Insecure: true}}
	_, err = Open(context.Background(), missing, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "s3://nope/") || !strings.Contains(strings.ToLower(err.Error()), "bucket") {
		t.Errorf("missing bucket: err %v, want one naming it", err)
	}

	bad := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: "http://" + f.endpoint(t), Bucket: "docs"}}
	_, err = Open(context.Background(), bad, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Errorf("endpoint with a scheme: err %v, want one naming the endpoint", err)
	}
}

func TestS3RefusesKeysEscapingThePrefix(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	f := newFakeS3(t, "docs", map[string]string{"corpus/ok.md": "fine", "corpus/../../escape.md": "climbs out"})
	work := t.TempDir()
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Prefix: "corpus/", Insecure: true}}
	_, err := Open(context.Background(), src, work, nil)
	if err == nil || !strings.Contains(err.Error(), `"corpus/../../escape.md"`) || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("err %v, want one naming the escaping key", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(work), "escape.md")); !os.IsNotExist(err) {
		t.Errorf("escape.md written outside the work folder (err %v)", err)
	}
	if len(f.gets) != 0 {
		t.Errorf("downloaded %v before refusing the listing", f.gets)
	}
}

func TestS3BEIRFileIsNotSkippedWhole(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	var b bytes.Buffer
	for _, id := range []string{"d1", "d2", "d3"} {
		b.WriteString(`{"_id":"` + id + `","title":"","text":"A sentence about vitamin D and bone density."}` + "\n")
	}
	f := newFakeS3(t, "beir", map[string]string{"scifact/corpus.jsonl": b.String()})
	src := plan.Source{
		S3:               &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "beir", Prefix: "scifact", Insecure: true},
		Format:           ragopsv1alpha1.FormatBEIR,
		MaxDocumentBytes: 100, // per line for BEIR; the file is larger
	}
	s, err := Open(context.Background(), src, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := s.Walk(context.Background(), false, nil, func(d Document) error { ids = append(ids, d.ID); return nil }, func(sk Skipped) { t.Errorf("skipped %+v", sk) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "d1,d2,d3" {
		t.Errorf("documents %v, want d1,d2,d3", ids)
	}
}
