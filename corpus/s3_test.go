package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// TestS3ShardsFetchOnlyTheirOwnObjects: with 4 shards, each shard downloads exactly the
// objects whose documents it owns (Shard of the path), and the shards together download each
// object once (counted at the server). A BEIR file is every shard's.
func TestS3ShardsFetchOnlyTheirOwnObjects(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	objects := map[string]string{}
	for i := range 40 {
		objects[fmt.Sprintf("corpus/dir%d/doc%02d.md", i%3, i)] = fmt.Sprintf("# Document %d\n\nText of document %d.\n", i, i)
	}
	f := newFakeS3(t, "docs", objects)
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Prefix: "corpus/", Insecure: true, Region: "us-east-1"}}
	const shards = 4
	total := 0
	for shard := range shards {
		f.mu.Lock()
		f.gets = nil
		f.mu.Unlock()
		mine := func(id string) bool { return Shard(id, shard, shards) }
		s, err := OpenWith(context.Background(), src, t.TempDir(), nil, OpenOptions{Keep: mine})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for key := range objects {
			if mine(strings.TrimPrefix(key, "corpus/")) {
				want = append(want, "/docs/"+key)
			}
		}
		sort.Strings(want)
		f.mu.Lock()
		got := append([]string(nil), f.gets...)
		f.mu.Unlock()
		sort.Strings(got)
		if len(want) == 0 || len(want) == len(objects) {
			t.Fatalf("shard %d owns %d of %d objects: the test needs a spread", shard, len(want), len(objects))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("shard %d downloaded %v, want its own objects %v", shard, got, want)
		}
		total += len(got)
		// Its documents walk with the hashes of their bytes.
		n := 0
		if err := s.Walk(context.Background(), true, mine, func(d Document) error {
			n++
			if d.Hash != hashOf([]byte(objects["corpus/"+d.ID])) {
				t.Errorf("shard %d: %s hash %s, not the hash of its bytes", shard, d.ID, d.Hash)
			}
			return nil
		}, func(sk Skipped) { t.Errorf("shard %d skipped %+v", shard, sk) }); err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Errorf("shard %d walked %d documents, want %d", shard, n, len(want))
		}
	}
	if total != len(objects) {
		t.Errorf("the %d shards downloaded %d objects in all, want each of the %d once", shards, total, len(objects))
	}

	// A BEIR file holds documents of every shard: each shard downloads it.
	g := newFakeS3(t, "beir", map[string]string{"corpus.jsonl": `{"_id":"d1","text":"one"}` + "\n", "notes.md": "a note\n"})
	beir := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: g.endpoint(t), Bucket: "beir", Insecure: true, Region: "us-east-1"}}
	if _, err := OpenWith(context.Background(), beir, t.TempDir(), nil, OpenOptions{Keep: func(string) bool { return false }}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.gets, ","); got != "/beir/corpus.jsonl" {
		t.Errorf("a shard owning no file downloaded %q, want the BEIR file only", got)
	}
}

// TestS3ListingDownloadsNothing: a listing Open (a scan) makes no object GET; its documents'
// hashes come from the listing and change when an object's bytes do, and list-mode walks only.
func TestS3ListingDownloadsNothing(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	f := newFakeS3(t, "docs", map[string]string{"a.md": "# A\n\nfirst\n", "b.md": "# B\n\nsecond\n", "big.md": strings.Repeat("x", 2000)})
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Insecure: true, Region: "us-east-1"}, MaxDocumentBytes: 1000}
	list := func() ([]Document, []Skipped, *Source) {
		s, err := OpenWith(context.Background(), src, t.TempDir(), nil, OpenOptions{Listing: true})
		if err != nil {
			t.Fatal(err)
		}
		var docs []Document
		var skipped []Skipped
		if err := s.Walk(context.Background(), true, nil, func(d Document) error { docs = append(docs, d); return nil },
			func(sk Skipped) { skipped = append(skipped, sk) }); err != nil {
			t.Fatal(err)
		}
		return docs, skipped, s
	}
	docs, skipped, s := list()
	if len(f.gets) != 0 {
		t.Errorf("a listing downloaded %v", f.gets)
	}
	if len(docs) != 2 || docs[0].ID != "a.md" || docs[1].ID != "b.md" || docs[0].Size != int64(len("# A\n\nfirst\n")) {
		t.Errorf("documents %+v, want a.md and b.md with their listed sizes", docs)
	}
	if len(skipped) != 1 || skipped[0].ID != "big.md" || skipped[0].Reason != string(reader.TooLarge) {
		t.Errorf("skipped %+v, want big.md TooLarge from its listed size", skipped)
	}
	if err := s.Walk(context.Background(), false, nil, func(Document) error { return nil }, func(Skipped) {}); err == nil || !strings.Contains(err.Error(), "only listed") {
		t.Errorf("reading a listed-only document: err %v, want one saying it was only listed", err)
	}
	again, _, _ := list()
	if Revision(again) != Revision(docs) {
		t.Errorf("revision %s, then %s of the same bucket", Revision(docs), Revision(again))
	}
	if _, err := f.backend.PutObject("docs", "b.md", map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}, strings.NewReader("# B\n\nchanged\n"), int64(len("# B\n\nchanged\n")), nil); err != nil {
		t.Fatal(err)
	}
	changed, _, _ := list()
	if Revision(changed) == Revision(docs) || changed[1].Hash == docs[1].Hash || changed[0].Hash != docs[0].Hash {
		t.Errorf("after b.md changed: hashes %+v, before %+v; want only b.md's (and the revision) changed", changed, docs)
	}
	if len(f.gets) != 0 {
		t.Errorf("listings downloaded %v", f.gets)
	}
}

// TestFetchOverTheScratchVolumeNamesIt: a worker whose scratch volume (plan.EnvScratchBytes)
// cannot hold a fetch refuses it with an error naming the volume and its limit: an S3
// selection before any download, an HTTP archive whose download and unpacked files do not fit
// together, and a write that runs out of space (ENOSPC).
func TestFetchOverTheScratchVolumeNamesIt(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	t.Setenv(plan.EnvScratchBytes, "1000")
	named := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), `scratch volume "tmp"`) && strings.Contains(err.Error(), "sizeLimit 1000 bytes")
	}
	f := newFakeS3(t, "docs", map[string]string{"a.md": strings.Repeat("a", 600), "b.md": strings.Repeat("b", 600)})
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Insecure: true, Region: "us-east-1"}}
	if _, err := Open(context.Background(), src, t.TempDir(), nil); !named(err) {
		t.Errorf("S3 selection of 1200 bytes: err %v, want one naming the scratch volume and its limit", err)
	}
	if len(f.gets) != 0 {
		t.Errorf("downloaded %v before refusing", f.gets)
	}
	// One shard's part fits.
	if _, err := OpenWith(context.Background(), src, t.TempDir(), nil, OpenOptions{Keep: func(id string) bool { return id == "a.md" }}); err != nil {
		t.Errorf("a shard's 600 bytes: %v", err)
	}

	// An archive unpacking 600 bytes, on a volume with room for it and 500 bytes more: the
	// download fits, the download and its unpacked files together do not.
	archive := tarGz(t, map[string]string{"docs/a.md": strings.Repeat("x", 600)})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(archive) }))
	defer srv.Close()
	t.Setenv(plan.EnvScratchBytes, strconv.Itoa(len(archive)+500))
	_, err := Fetch(context.Background(), srv.URL+"/a.tar.gz", "", nil, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `scratch volume "tmp"`) || !strings.Contains(err.Error(), fmt.Sprintf("sizeLimit %d bytes", len(archive)+500)) {
		t.Errorf("archive of %d bytes unpacking 600: err %v, want one naming the scratch volume and its limit", len(archive), err)
	}
	t.Setenv(plan.EnvScratchBytes, "1000")

	// Out of space while writing.
	err = scratchError(fmt.Errorf("object %q: %w", "a.md", &os.PathError{Op: "write", Path: "/tmp/s3/a.md", Err: syscall.ENOSPC}))
	if !named(err) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("ENOSPC: err %v, want it wrapped naming the scratch volume and its limit", err)
	}
}
