package build

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

// beirRecords is a BEIR corpus.jsonl of n short records, d00 to d<n-1>.
func beirRecords(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"_id":"d%02d","title":"Besluit %d","text":"De raad besluit over voorstel %d en de begroting van jaar %d."}`+"\n", i, i, i, 2000+i)
	}
	return b.String()
}

// containerFixture is newFixture's Weaviate and model with a corpus of one Markdown note,
// a.md, and a BEIR corpus.jsonl of n records (read after a.md), built once. It returns the
// corpus.jsonl path and what the build wrote: its chunks and their count in Weaviate.
func containerFixture(t *testing.T, n int) (f *fixture, jsonl string, clean map[string][]string, count int) {
	t.Helper()
	f = newFixture(t, 0)
	if err := os.WriteFile(filepath.Join(f.dir, "a.md"), []byte("# Notitie\n\nDe besluiten staan in corpus.jsonl."), 0o644); err != nil {
		t.Fatal(err)
	}
	jsonl = filepath.Join(f.dir, "corpus.jsonl")
	if err := os.WriteFile(jsonl, []byte(beirRecords(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := f.runWith(t, false, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != int64(n)+1 {
		t.Fatalf("clean build: %+v, want %d documents", res, n+1)
	}
	clean = f.objects(t)
	if count, err = f.store.Count(context.Background(), f.plan.Collection); err != nil || count != len(clean) {
		t.Fatalf("clean build: Weaviate counts %d chunks (%v), the listing %d", count, err, len(clean))
	}
	return f, jsonl, clean, count
}

// runWith runs the plan with Markdown and text readers, calling fault between the listing
// and the read of corpus.jsonl (after planning the shard, before syncing its documents: a
// sync's unchanged a.md is not read, so no reader call marks that moment).
func (f *fixture) runWith(t *testing.T, incremental bool, fault func()) (plan.BuildResult, error) {
	t.Helper()
	p := f.plan
	p.Incremental = incremental
	readers := reader.NewMux(0, markup.Text{}, markup.Markdown{})
	return Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, Options{Readers: readers, beforeSync: fault})
}

// assertUntouched fails unless the sync deleted nothing, kept all n records and left the
// collection exactly as the clean build wrote it.
func assertUntouched(t *testing.T, f *fixture, n int, res plan.BuildResult, reason string, before int, clean map[string][]string) {
	t.Helper()
	if res.Deleted != 0 || res.Kept != int64(n) || res.Skipped[reason] != 1 || res.Unchanged != 1 || res.Documents != 0 {
		t.Errorf("sync result: deleted %d, kept %d, unchanged %d, documents %d, skipped %v; want deleted 0, kept %d, unchanged 1 (a.md), documents 0, skipped %s 1",
			res.Deleted, res.Kept, res.Unchanged, res.Documents, res.Skipped, n, reason)
	}
	after, err := f.store.Count(context.Background(), f.plan.Collection)
	if err != nil {
		t.Fatal(err)
	}
	var reported int64 = -1
	if res.ShardChunks != nil {
		reported = *res.ShardChunks
	}
	if after != before || reported != int64(before) {
		t.Errorf("collection holds %d chunks after the sync, %d before; the shard reported %d", after, before, reported)
	}
	assertSame(t, "after the sync", f.objects(t), clean)
}

// Defect 4 of issue 32: a BEIR corpus.jsonl that cannot be opened when the sync reads it
// (here: it becomes a dangling symbolic link after the listing, as a path on a volume that
// goes away does; chmod 000 does not stop root) is skipped under its path, which matches no
// record. Its records stay: none is deleted, all are counted kept, the collection is
// unchanged.
func TestSyncKeepsRecordsOfAContainerThatCannotBeOpened(t *testing.T) {
	const n = 30
	f, jsonl, clean, before := containerFixture(t, n)
	res, err := f.runWith(t, true, func() {
		if err := os.Remove(jsonl); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), jsonl); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	assertUntouched(t, f, n, res, "Unreadable", before, clean)
}

// Defect 4 of issue 32: a corpus.jsonl rewritten shorter between the listing and its read
// (here: truncated to its first 10 records in place) is a partial view, not 20 removed
// records: the sync reports it ChangedWhileRead and keeps every record.
func TestSyncKeepsRecordsOfAContainerTruncatedBeforeItsRead(t *testing.T) {
	const n = 30
	f, jsonl, clean, before := containerFixture(t, n)
	res, err := f.runWith(t, true, func() {
		if err := os.WriteFile(jsonl, []byte(beirRecords(10)), 0o644); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	assertUntouched(t, f, n, res, "ChangedWhileRead", before, clean) // a stable skip reason (a status and metric key)

	// Read whole on the next sync, the shorter file's missing records are removed.
	res, err = f.runWith(t, true, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != n-10 || res.Kept != 0 || res.Unchanged != 11 {
		t.Errorf("sync of the shorter file: deleted %d, kept %d, unchanged %d; want %d, 0, 11", res.Deleted, res.Kept, res.Unchanged, n-10)
	}
}
