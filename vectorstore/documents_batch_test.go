package vectorstore

import (
	"context"
	"fmt"
	"testing"
)

// Issue 56, syncs write one document at a time: ReplaceDocuments and DeleteDocuments write
// many documents in few requests and touch only the documents they name, whole ids (field
// tokenization: "d-1" is not "d-1-x" nor "d-10").
func TestReplaceAndDeleteManyDocumentsInBatches(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	name := newCollection(t, s, "replace-many", "r1", VectorIndex{Type: IndexFlat})
	const docs = 2*DeleteBatchDocuments + 10
	doc := func(i, n int, tag string) []Chunk {
		var cs []Chunk
		for o := range n {
			txt := fmt.Sprintf("%s document %d chunk %d", tag, i, o)
			cs = append(cs, Chunk{DocID: fmt.Sprintf("d-%d", i), Ordinal: o, Start: 0, End: len(txt), Text: txt, Vector: unitVector(txt, dims)})
		}
		return cs
	}
	var all []Chunk
	for i := range docs {
		all = append(all, doc(i, 3, "old")...)
	}
	all = append(all, Chunk{DocID: "d-1-x", Ordinal: 0, End: 1, Text: "x", Vector: unitVector("x", dims)})
	if err := s.Upsert(ctx, name, all); err != nil {
		t.Fatal(err)
	}
	// Documents 0..299 change: even ones shrink to 1 chunk, odd ones grow to 4.
	replace := map[string][]Chunk{}
	for i := range 300 {
		replace[fmt.Sprintf("d-%d", i)] = doc(i, 1+3*(i%2), "new")
	}
	before := s.Requests()
	if err := s.ReplaceDocuments(ctx, name, replace); err != nil {
		t.Fatal(err)
	}
	// Documents 300..509 go.
	var gone []string
	for i := 300; i < docs; i++ {
		gone = append(gone, fmt.Sprintf("d-%d", i))
	}
	n, err := s.DeleteDocuments(ctx, name, gone)
	if err != nil || n != 3*len(gone) {
		t.Fatalf("DeleteDocuments: %d chunks, %v; want %d", n, err, 3*len(gone))
	}
	after := s.Requests()
	if d := after.Deletes - before.Deletes; d != 2+1 {
		t.Errorf("%d delete requests for 300 replaced and 210 deleted documents, want 3 (per %d documents)", d, DeleteBatchDocuments)
	}
	if got, want := mustCount(t, s, name), 150*1+150*4+1; got != want {
		t.Errorf("count %d, want %d", got, want)
	}
	for id, want := range map[string]int{"d-0": 1, "d-1": 4, "d-1-x": 1, "d-10": 1, "d-300": 0, "d-509": 0} {
		if got, err := s.CountDocument(ctx, name, id); err != nil || got != want {
			t.Errorf("document %s: %d chunks (%v), want %d", id, got, err, want)
		}
	}
}
