package vectorstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"
	"testing"

	"github.com/weaviate/weaviate/entities/models"
)

// shardOf is corpus.Shard (FNV-1a of the ID mod n), which vectorstore cannot import.
func shardOf(id string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// Issue 51, one state read per sync: a shard reads only its own manifest records, paged
// with the docId cursor (page size 7 over 2,000 documents crosses many pages), and reads
// one object per document of its shard, where the chunk walk (DocumentStates) of the same
// revision reads every chunk: 2,000 documents of 10 chunks, 4 shards. Records written under
// another shard count are found and handed back to be stamped again; the totals the
// completeness check compares with the collection sum the complete records; a copy carries
// the records and the mark; deleting the collection drops its manifest.
func TestManifestShardReadsOnlyItsOwnRecords(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	const name, docs, per, shards = "Rag_ManifestReadT", 2000, 10, 4
	if err := s.EnsureCollection(ctx, CollectionSpec{Name: name, Revision: "r1", Dimensions: 2}); err != nil {
		t.Fatal(err)
	}
	if covers, err := s.ManifestCovers(ctx, name); err != nil || covers {
		t.Fatalf("a revision without a manifest: covers %v, %v", covers, err)
	}
	if err := s.EnsureManifest(ctx, name); err != nil {
		t.Fatal(err)
	}
	var chunks []Chunk
	var recs []ManifestRecord
	want := map[string]bool{}
	for i := range docs {
		id := fmt.Sprintf("doc-%04d.md", i)
		for o := range per {
			chunks = append(chunks, Chunk{DocID: id, Ordinal: o, End: 1, Text: id, DocHash: "h", Vector: []float32{1, 0}})
		}
		r := ManifestRecord{DocID: id, Hash: "h", Chunks: per, Complete: true, Shard: shardOf(id, shards), Shards: shards}
		if i == 5 {
			r.Complete = false // an interrupted write
		}
		if i == 6 {
			r.Shard, r.Shards = 0, 1 // written when the Index had one shard
		}
		if i == 7 {
			r.Sum = strings.Repeat("ab", 32) // the raw SHA-256, for the extraction cache
		}
		if shardOf(id, shards) == 1 {
			want[id] = true
		}
		recs = append(recs, r)
	}
	for lo := 0; lo < len(chunks); lo += 2000 {
		if err := s.Upsert(ctx, name, chunks[lo:min(lo+2000, len(chunks))]); err != nil {
			t.Fatal(err)
		}
	}
	for lo := 0; lo < len(recs); lo += 500 {
		if err := s.PutManifest(ctx, name, recs[lo:min(lo+500, len(recs))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkManifestCovers(ctx, name); err != nil {
		t.Fatal(err)
	}
	if covers, err := s.ManifestCovers(ctx, name); err != nil || !covers {
		t.Fatalf("after the mark: covers %v, %v", covers, err)
	}
	mine := func(id string) bool { return shardOf(id, shards) == 1 }
	read, err := s.ManifestRecords(ctx, name, 1, shards, 7, mine)
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Records) != len(want) {
		t.Fatalf("shard 1 read %d records, it has %d documents", len(read.Records), len(want))
	}
	for id := range want {
		if _, ok := read.Records[id]; !ok {
			t.Errorf("shard 1 did not read its document %s", id)
		}
	}
	restamped := shardOf("doc-0006.md", shards) == 1
	if restamped != (len(read.Restamp) == 1) {
		t.Errorf("records to stamp again: %v (doc-0006.md is shard 1's: %v)", read.Restamp, restamped)
	}
	if r := read.Records["doc-0005.md"]; mine("doc-0005.md") && (r.State().Consistent() || r.Complete) {
		t.Errorf("an incomplete record reads as %+v", r)
	}
	// Side by side: the chunk walk every shard used to run.
	states, err := s.DocumentStates(ctx, name, 0, mine)
	if err != nil {
		t.Fatal(err)
	}
	walked, err := s.Count(ctx, name) // the walk pages every chunk object
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != len(want) || walked != docs*per {
		t.Fatalf("chunk walk: %d documents of %d chunks", len(states), walked)
	}
	if read.Objects > len(want)+1 {
		t.Errorf("the manifest read returned %d objects for a shard of %d documents", read.Objects, len(want))
	}
	t.Logf("state read of shard 1 of %d (%d documents, %d chunks in all): manifest %d objects, chunk walk %d objects",
		shards, docs, docs*per, read.Objects, walked)

	// By document, whatever the shard: 600 IDs (two filtered reads), one without a record.
	ids := []string{"doc-9999.md"}
	for i := range 600 {
		ids = append(ids, fmt.Sprintf("doc-%04d.md", 3*i))
	}
	byID, err := s.ManifestRecordsOf(ctx, name, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != 600 || byID["doc-0006.md"] != recs[6] || byID["doc-0000.md"] != recs[0] {
		t.Errorf("records of 600 documents: %d read, doc-0006.md %+v, want %+v", len(byID), byID["doc-0006.md"], recs[6])
	}
	if byID, err := s.ManifestRecordsOf(ctx, name, []string{"doc-0007.md"}); err != nil || byID["doc-0007.md"] != recs[7] {
		t.Errorf("record of doc-0007.md: %+v (%v), want %+v", byID, err, recs[7])
	}

	tot, err := s.ManifestTotals(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ManifestTotals{Covers: true, Documents: docs, Chunks: (docs - 1) * per, Incomplete: 1}); tot != want {
		t.Errorf("totals %+v, want %+v", tot, want)
	}
	if err := s.DeleteManifestRecords(ctx, name, []string{"doc-0000.md", "doc-0001.md"}); err != nil {
		t.Fatal(err)
	}
	if tot, err = s.ManifestTotals(ctx, name); err != nil || tot.Documents != docs-2 {
		t.Errorf("after deleting 2 records: %+v, %v", tot, err)
	}

	const to = "Rag_ManifestReadTCopy"
	if err := s.EnsureCollection(ctx, CollectionSpec{Name: to, Revision: "r2", Dimensions: 2}); err != nil {
		t.Fatal(err)
	}
	n, err := s.CopyManifest(ctx, name, to, 300)
	if err != nil || n != docs-2 {
		t.Fatalf("copied %d records (%v), want %d", n, err, docs-2)
	}
	if got, err := s.ManifestTotals(ctx, to); err != nil || got != tot {
		t.Errorf("the copy sums %+v (%v), the source %+v", got, err, tot)
	}
	for _, c := range []string{name, to} {
		if err := s.DeleteCollection(ctx, c); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.CollectionExists(ctx, ManifestName(c)); err != nil || ok {
			t.Errorf("manifest of deleted %s: exists %v (%v)", c, ok, err)
		}
	}
}

// ManifestName keeps within Weaviate's name limit and never starts with "Rag_".
func TestManifestName(t *testing.T) {
	long := "Rag_" + string(make([]byte, 0))
	for len(long) < MaxNameLength {
		long += "x"
	}
	for _, c := range []string{"Rag_t_besluiten_0a1b2c3d_r1", long} {
		n := ManifestName(c)
		if err := ValidateName(n); err != nil || len(n) > MaxNameLength || n[:4] == "Rag_" {
			t.Errorf("ManifestName(%q) = %q (%v)", c, n, err)
		}
	}
	if ManifestName(long) == ManifestName(long[:len(long)-1]+"y") {
		t.Error("two long names share a manifest")
	}
}

// Issue 51: a manifest made before records carried the raw SHA-256 (its collection lacks the
// property) gets it from EnsureManifest: its old records read back without a Sum, and a
// record written with one reads back with it.
func TestEnsureManifestAddsTheRawSumToAnOlderManifest(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	const name = "Rag_ManifestOldT"
	text := func(n string) *models.Property {
		return &models.Property{Name: n, DataType: []string{"text"}, Tokenization: "field", IndexFilterable: boolp(true)}
	}
	num := func(n string) *models.Property {
		return &models.Property{Name: n, DataType: []string{"int"}, IndexFilterable: boolp(true)}
	}
	old := &models.Class{Class: ManifestName(name), Description: manifestDescription, Vectorizer: "none", VectorIndexType: IndexFlat,
		Properties: []*models.Property{text(PropManifestDocID), text(PropManifestHash), num(PropManifestChunks),
			{Name: PropManifestComplete, DataType: []string{"boolean"}, IndexFilterable: boolp(true)},
			text(PropManifestListing), num(PropManifestShard), num(PropManifestShards), text(PropManifestMetaHash), text(PropManifestAccess)}}
	if err := s.Client().Schema().ClassCreator().WithClass(old).Do(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Data().Creator().WithClassName(old.Class).WithID(ManifestRecordID("a.md").String()).WithProperties(map[string]any{
		PropManifestDocID: "a.md", PropManifestHash: "h", PropManifestChunks: 2, PropManifestComplete: true, PropManifestShard: 0, PropManifestShards: 1,
	}).Do(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureManifest(ctx, name); err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("0f", 32)
	if err := s.PutManifest(ctx, name, []ManifestRecord{{DocID: "b.md", Hash: "g", Chunks: 1, Complete: true, Shards: 1, Sum: sum}}); err != nil {
		t.Fatal(err)
	}
	read, err := s.ManifestRecords(ctx, name, 0, 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ManifestRecord{
		"a.md": {DocID: "a.md", Hash: "h", Chunks: 2, Complete: true, Shards: 1},
		"b.md": {DocID: "b.md", Hash: "g", Chunks: 1, Complete: true, Shards: 1, Sum: sum},
	}
	if !maps.Equal(read.Records, want) {
		t.Errorf("records %+v, want %+v", read.Records, want)
	}
}
