package controllers_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/pipeline/scan"
)

// Issue 30, one owner of a Corpus's listing: 40 SciFact records in a corpus.jsonl and a
// Markdown note, served from a ConfigMap, give the Corpus the document count, bytes and
// revision that the scan worker (what a PVC or any other source runs) reports for the same
// two files on a volume: 41 documents, not 2.
func TestConfigMapCorpusCountsAsAScanOfTheSameFiles(t *testing.T) {
	datasets := testenv.Need(t, "RAGOPS_DATASETS", "export RAGOPS_DATASETS=$(hack/datasets.sh)")
	f, err := os.Open(filepath.Join(datasets, "scifact", "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var records bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 0; n < 40 && sc.Scan(); n++ {
		records.Write(sc.Bytes())
		records.WriteByte('\n')
	}
	files := map[string]string{
		"corpus.jsonl": records.String(),
		"notes.md":     "# Notulen\n\nDe vergadering opent om 19.30 uur.\n",
	}

	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := scan.Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)),
		plan.Source{Dir: dir, Format: ragopsv1alpha1.FormatAuto}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want.Documents != 41 {
		t.Fatalf("the scan worker counted %d documents, want 40 records and a note", want.Documents)
	}

	ns := newNamespace(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scifact"}, Data: files}
	c := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scifact"},
		Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "scifact"}, Format: ragopsv1alpha1.FormatAuto}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	var got ragopsv1alpha1.Corpus
	eventually(t, 30*time.Second, "the Corpus synced", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), &got)
		return err == nil && conditions.IsReady(&got), err
	})
	if got.Status.Documents != want.Documents || got.Status.Revision != want.Revision || got.Status.Bytes != want.Bytes {
		t.Errorf("ConfigMap corpus: %d documents, %d bytes, revision %s; the scan of the same files: %d, %d, %s",
			got.Status.Documents, got.Status.Bytes, got.Status.Revision, want.Documents, want.Bytes, want.Revision)
	}
}
