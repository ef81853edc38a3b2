package corpus

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

// sidecarMetadata declares one field read from sidecars.
var sidecarMetadata = &ragopsv1alpha1.MetadataSpec{SidecarSuffix: ".meta.json", Fields: []ragopsv1alpha1.MetadataField{
	{Name: "type", Type: ragopsv1alpha1.MetadataText, From: ragopsv1alpha1.MetadataSource{Sidecar: "type"}}}}

func listing(t *testing.T, s *Source) (ids []string, rev string) {
	t.Helper()
	var docs []Document
	if err := s.Walk(context.Background(), true, nil, func(d Document) error { docs = append(docs, d); return nil },
		func(sk Skipped) { t.Errorf("skipped %+v", sk) }); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		ids = append(ids, d.ID)
	}
	sort.Strings(ids)
	return ids, Revision(docs)
}

// Issue 52: with a field read from sidecars, a sidecar file is no document (it is selected
// with its document, whatever the include globs say), Sidecar returns it, and editing it is
// a new corpus revision (a sync) while the document's hash stays. Without such a field the
// same file is an ordinary document.
func TestSidecarFilesBelongToTheirDocument(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("moties/a.md", "# Motie A\n")
	write("moties/a.md.meta.json", `{"type": "motie"}`)
	write("moties/b.md", "# Motie B\n")
	src := plan.Source{Dir: dir, Include: []string{"**/*.md"}, Metadata: sidecarMetadata}
	open := func(src plan.Source) *Source {
		t.Helper()
		s, err := Open(context.Background(), src, t.TempDir(), reader.NewMux(0, markup.Markdown{}))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(src)
	ids, rev := listing(t, s)
	if strings.Join(ids, ",") != "moties/a.md,moties/b.md" {
		t.Errorf("documents %v, want the two Markdown files", ids)
	}
	if side, err := s.Sidecar("moties/a.md"); err != nil || string(side) != `{"type": "motie"}` {
		t.Errorf("sidecar of a.md = %q, %v", side, err)
	}
	if side, err := s.Sidecar("moties/b.md"); err != nil || side != nil {
		t.Errorf("sidecar of b.md = %q, %v; want none", side, err)
	}
	if f := s.SourceFields("moties/a.md"); f[MetaSourcePath] != "moties/a.md" || f[MetaSourceSize] != "10" || f[MetaSourceModified] == nil {
		t.Errorf("source fields of a.md = %v", f)
	}
	hashA := readAll(t, s)["moties/a.md"].Hash
	write("moties/a.md.meta.json", `{"type": "amendement"}`)
	s = open(src)
	ids2, rev2 := listing(t, s)
	if rev2 == rev || strings.Join(ids2, ",") != strings.Join(ids, ",") || readAll(t, s)["moties/a.md"].Hash != hashA {
		t.Errorf("after a sidecar edit: revision %s (was %s), documents %v, a.md hash kept: want a new revision, same documents and hash", rev2, rev, ids2)
	}
	// A declaration change is a new revision too (the Indexes sync their properties); no
	// declarations keep the listing's revision.
	more := sidecarMetadata.DeepCopy()
	more.Fields = append(more.Fields, ragopsv1alpha1.MetadataField{Name: "title", Type: ragopsv1alpha1.MetadataText,
		From: ragopsv1alpha1.MetadataSource{Reader: "title"}})
	if WithMetadata(rev2, nil) != rev2 || WithMetadata(rev2, sidecarMetadata) == rev2 || WithMetadata(rev2, more) == WithMetadata(rev2, sidecarMetadata) {
		t.Error("WithMetadata: want the listing's revision without declarations, another one per declaration set")
	}
	src.Include, src.Metadata = nil, nil
	ids, _ = listing(t, open(src))
	if len(ids) != 3 {
		t.Errorf("without sidecar fields: documents %v, want the sidecar file too", ids)
	}
}

// Issue 52: an S3 shard fetching only its own documents fetches their sidecars too.
func TestS3ShardFetchesItsDocumentsSidecars(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string]string{"a.md": "# A\n", "a.md.meta.json": `{"type": "motie"}`, "b.md": "# B\n"} {
		if _, err := backend.PutObject("docs", key, map[string]string{"Last-Modified": "Mon, 07 Dec 2026 12:00:00 GMT"}, strings.NewReader(body), int64(len(body)), nil); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "docs", Insecure: true, Region: "us-east-1"},
		Metadata: sidecarMetadata}
	t.Setenv(plan.EnvS3AccessKey, testAccessKey)
	t.Setenv(plan.EnvS3SecretKey, testSecretKey)
	s, err := OpenWith(context.Background(), src, t.TempDir(), reader.NewMux(0, markup.Markdown{}),
		OpenOptions{Keep: func(id string) bool { return id == "a.md" }})
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := listing(t, s)
	side, err := s.Sidecar("a.md")
	if strings.Join(ids, ",") != "a.md" || err != nil || string(side) != `{"type": "motie"}` {
		t.Errorf("documents %v, sidecar %q (%v): want a.md with its sidecar", ids, side, err)
	}
}
