package authz

import (
	"fmt"
	"testing"

	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, direct reads bypass the filter: on a real Weaviate with RBAC, the key
// EnsureReader provisions for one Index reads that Index's collection through its alias and
// directly, and nothing else: not another Index's collection, no write, no delete. A new
// revision moves the role (the old collection is no longer readable, the key unchanged);
// a lost key is rotated (the old one stops working); after DeleteReader the key reads
// nothing. A Weaviate without RBAC is reported as not enforcing it.
func TestReaderKeyReadsOnlyItsIndex(t *testing.T) {
	const rootKey = "root-key-for-tests"
	wv := weaviatetest.StartWith(t, weaviatetest.Options{ExtraEnv: weaviatetest.RBACEnv(rootKey)})
	ctx := t.Context()
	open := func(key string) *vectorstore.Store {
		t.Helper()
		s, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	root := open(rootKey)
	const dims = 4
	alias, _ := vectorstore.AliasName("archief", "besluiten")
	r1, _ := vectorstore.CollectionName("archief", "besluiten", "r1")
	r2, _ := vectorstore.CollectionName("archief", "besluiten", "r2")
	other, _ := vectorstore.CollectionName("archief", "personeel", "r1")
	chunk := func(doc string) vectorstore.Chunk {
		text := "besluit over windenergie " + doc
		return vectorstore.Chunk{DocID: doc, End: len(text), Text: text, DocHash: "h", Vector: []float32{1, 0, 0, 0}}
	}
	for _, c := range []string{r1, r2, other} {
		if err := root.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: c, Revision: "r", Dimensions: dims, Index: vectorstore.VectorIndex{Type: vectorstore.IndexFlat}}); err != nil {
			t.Fatal(err)
		}
		if err := root.Upsert(ctx, c, []vectorstore.Chunk{chunk(c)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := root.SetAlias(ctx, alias, r1); err != nil {
		t.Fatal(err)
	}
	if on, err := Enforced(ctx, root.Client()); err != nil || !on {
		t.Fatalf("RBAC Weaviate: enforced %v, %v", on, err)
	}

	key, err := EnsureReader(ctx, root.Client(), alias, []string{r1}, false)
	if err != nil || key == "" {
		t.Fatalf("EnsureReader: key %q, %v", key, err)
	}
	reader := open(key)
	search := func(s *vectorstore.Store, target string) ([]vectorstore.Hit, error) {
		return s.Search(ctx, target, vectorstore.Query{Mode: vectorstore.ModeBM25, Text: "windenergie", Limit: 5})
	}
	mayRead := func(s *vectorstore.Store, target, doc string) {
		t.Helper()
		hits, err := search(s, target)
		if err != nil || len(hits) != 1 || hits[0].DocID != doc {
			t.Errorf("read %s: hits %v, %v; want %s", target, hits, err, doc)
		}
	}
	mayNotRead := func(s *vectorstore.Store, target string) {
		t.Helper()
		if hits, err := search(s, target); err == nil {
			t.Errorf("read %s: %d hits, want refused", target, len(hits))
		}
	}
	mayRead(reader, alias, r1)
	mayRead(reader, r1, r1)
	mayNotRead(reader, other)
	mayNotRead(reader, r2)
	if err := reader.Upsert(ctx, r1, []vectorstore.Chunk{chunk("injected")}); err == nil {
		t.Error("the reader key wrote a chunk")
	}
	if err := reader.DeleteCollection(ctx, r1); err == nil {
		t.Error("the reader key deleted a collection")
	}
	if err := reader.SetAlias(ctx, alias, other); err == nil {
		t.Error("the reader key moved the alias")
	}
	if n, err := root.Count(ctx, r1); err != nil || n != 1 {
		t.Errorf("%s holds %d chunks (%v), want 1", r1, n, err)
	}

	// A new revision: the role follows, the key stays.
	if err := root.SetAlias(ctx, alias, r2); err != nil {
		t.Fatal(err)
	}
	again, err := EnsureReader(ctx, root.Client(), alias, []string{r2}, false)
	if err != nil || again != "" {
		t.Fatalf("EnsureReader again: key %q, %v; want no new key", again, err)
	}
	mayRead(reader, alias, r2)
	mayNotRead(reader, r1)

	// A lost key is rotated: the old one stops working.
	rotated, err := EnsureReader(ctx, root.Client(), alias, []string{r2}, true)
	if err != nil || rotated == "" || rotated == key {
		t.Fatalf("rotate: key %q, %v", rotated, err)
	}
	mayNotRead(open(key), alias)
	reader = open(rotated)
	mayRead(reader, alias, r2)

	// The Index goes: its key reads nothing.
	if err := DeleteReader(ctx, root.Client(), alias); err != nil {
		t.Fatal(err)
	}
	mayNotRead(reader, alias)
	mayNotRead(reader, r2)
	if err := DeleteReader(ctx, root.Client(), alias); err != nil {
		t.Errorf("DeleteReader of a deleted reader: %v", err)
	}

	plain := weaviatetest.Start(t)
	ps, err := vectorstore.New(vectorstore.Config{HTTPHost: plain.HTTPAddr, GRPCHost: plain.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	if on, err := Enforced(ctx, ps.Client()); err != nil || on {
		t.Errorf("Weaviate without RBAC: enforced %v, %v", on, err)
	}
}

// Long aliases give role and user names within Weaviate's 128 characters, distinct per alias.
func TestNamesFitWeaviate(t *testing.T) {
	long := fmt.Sprintf("Rag_%0200d", 1)
	long2 := fmt.Sprintf("Rag_%0200d", 2)
	for _, n := range []string{ReaderRole(long), ReaderUser(long)} {
		if len(n) > maxName {
			t.Errorf("%q: %d characters", n, len(n))
		}
	}
	if ReaderUser(long) == ReaderUser(long2) {
		t.Error("two long aliases share a user")
	}
	if ReaderRole("Rag_a_b_12345678") != "ragops-read-Rag_a_b_12345678" {
		t.Errorf("short alias: %s", ReaderRole("Rag_a_b_12345678"))
	}
}
