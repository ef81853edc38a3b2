package vectorstore

import (
	"context"
	"testing"
)

// DocumentStates tells complete documents from partial and mixed ones: a is whole (3 chunks of
// hash h1), b lacks its middle chunk, c was being replaced (hashes h1 and h2), d is another
// shard's (filtered out).
func TestDocumentStatesTellCompleteFromPartial(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	const name = "ResumeStatesT"
	if err := s.EnsureCollection(ctx, CollectionSpec{Name: name, Revision: "r1", Dimensions: 2}); err != nil {
		t.Fatal(err)
	}
	var chunks []Chunk
	add := func(doc, hash string, ords ...int) {
		for _, o := range ords {
			chunks = append(chunks, Chunk{DocID: doc, Ordinal: o, End: 1, Text: doc, DocHash: hash, Vector: []float32{1, 0}})
		}
	}
	add("a.md", "h1", 0, 1, 2)
	add("b.md", "h1", 0, 2)
	add("c.md", "h2", 0)
	add("c.md", "h1", 1)
	add("d.md", "h1", 0)
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	got, err := s.DocumentStates(ctx, name, 2, func(id string) bool { return id != "d.md" })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]DocumentState{
		"a.md": {Hash: "h1", Chunks: 3, MaxOrdinal: 2},
		"b.md": {Hash: "h1", Chunks: 2, MaxOrdinal: 2},
		"c.md": {Chunks: 2, MaxOrdinal: 1, Mixed: true},
	}
	if len(got) != len(want) {
		t.Fatalf("states %+v, want %+v", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %+v, want %+v", id, got[id], w)
		}
	}
	if !got["a.md"].Complete("h1", 3) || got["a.md"].Complete("h2", 3) || got["a.md"].Complete("h1", 4) {
		t.Error("a.md: complete only as 3 chunks of h1")
	}
	if got["b.md"].Complete("h1", 3) || got["b.md"].Consistent() {
		t.Error("b.md lacks ordinal 1: neither complete nor consistent")
	}
	if got["c.md"].Complete("h1", 2) || got["c.md"].Consistent() {
		t.Error("c.md has mixed hashes: neither complete nor consistent")
	}
}
