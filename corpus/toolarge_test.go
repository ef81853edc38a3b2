package corpus

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
)

// crdMaxDocumentBytes returns the default the installed Corpus CRD gives spec.maxDocumentBytes
// (what the API server writes into a Corpus that leaves it out).
func crdMaxDocumentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "ragops.dev_corpora.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	prop := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["maxDocumentBytes"]
	if prop.Default == nil {
		t.Fatal("spec.maxDocumentBytes has no default")
	}
	var def int64
	if err := json.Unmarshal(prop.Default.Raw, &def); err != nil {
		t.Fatal(err)
	}
	return def
}

// scanPageBytes returns the largest bytes a page of the repository's scan fixtures takes,
// scaled from their 200 DPI to the 300 DPI archive scans use (JPEG size grows with pixels).
func scanPageBytes(t *testing.T) int64 {
	t.Helper()
	var most int64
	for _, name := range []string{"raadsbesluit-scan.pdf", "scifact-scan.pdf"} {
		b, err := os.ReadFile(filepath.Join("..", "reader", "testdata", "ocr", name))
		if err != nil {
			t.Fatal(err)
		}
		pages := int64(len(regexp.MustCompile(`/Type\s*/Page[^s]`).FindAll(b, -1)))
		if pages == 0 {
			t.Fatalf("%s: no pages found", name)
		}
		most = max(most, int64(len(b))/pages*9/4)
	}
	return most
}

// Issue 56, "Long scans are skipped": the default spec.maxDocumentBytes admits a 300-page
// scanned PDF, so a (sparse) file above the old 64 MiB default is listed, not TooLarge; a
// file over a limit is skipped with a reason that names its size, the limit and the field.
func TestDefaultMaxDocumentBytesAdmitsLongScans(t *testing.T) {
	def := crdMaxDocumentBytes(t)
	page := scanPageBytes(t)
	if def < 300*page {
		t.Fatalf("default maxDocumentBytes %d is under 300 scanned pages of %d bytes (%d)", def, page, 300*page)
	}
	dir := t.TempDir()
	const size = 64<<20 + 1 // one byte over the old default
	f, err := os.Create(filepath.Join(dir, "dossier.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()

	walk := func(limit int64) ([]Document, []Skipped) {
		s, err := Open(context.Background(), plan.Source{Dir: dir, MaxDocumentBytes: limit}, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var docs []Document
		var skips []Skipped
		if err := s.Walk(context.Background(), true, nil, func(d Document) error { docs = append(docs, d); return nil },
			func(sk Skipped) { skips = append(skips, sk) }); err != nil {
			t.Fatal(err)
		}
		return docs, skips
	}
	docs, skips := walk(def)
	if len(docs) != 1 || docs[0].Size != size || len(skips) != 0 {
		t.Fatalf("default limit %d: listed %+v, skipped %+v; want dossier.pdf of %d bytes listed", def, docs, skips, size)
	}

	const old = 64 << 20
	docs, skips = walk(old)
	if len(docs) != 0 || len(skips) != 1 || skips[0].Reason != string(reader.TooLarge) {
		t.Fatalf("limit %d: listed %+v, skipped %+v; want dossier.pdf TooLarge", old, docs, skips)
	}
	msg := skips[0].Err.Error()
	for _, want := range []string{strconv.Itoa(size) + " bytes", "64.0 MiB", strconv.Itoa(old) + " bytes", "spec.maxDocumentBytes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("skip reason %q does not name %q", msg, want)
		}
	}
}
