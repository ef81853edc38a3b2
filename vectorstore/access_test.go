package vectorstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// Issue 52, access: chunks written with access groups are filtered by them in every mode and
// in neighbour expansion (a filter without groups is refused, not run unfiltered); SetAccess rewrites the groups of
// documents without touching their text or vectors; DocumentStates reports the access key;
// a copy keeps the groups.
func TestAccessGroupsFilterRegroupAndCopy(t *testing.T) {
	srv := sharedServer(t)
	s := storeFor(t, srv, Config{})
	ctx := context.Background()
	const dims = 8
	spec := func(name, rev string) CollectionSpec {
		return CollectionSpec{Name: name, Revision: rev, Dimensions: dims, Index: VectorIndex{Type: IndexFlat}}
	}
	from, to := "RagChunks_t_access_r1", "RagChunks_t_access_r2"
	for _, c := range []CollectionSpec{spec(from, "r1"), spec(to, "r2")} {
		if err := s.EnsureCollection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	groups := map[string][]string{"pub": {"ragops:public"}, "raad": {"raad"}, "jur": {"juridisch", "raad-presidium"}}
	var chunks []Chunk
	for doc, g := range groups {
		for o := range 3 {
			text := fmt.Sprintf("besluit %s deel %d over windenergie", doc, o)
			chunks = append(chunks, Chunk{DocID: doc, Ordinal: o, End: len(text), Text: text, DocHash: "h-" + doc,
				Vector: unitVector(doc+fmt.Sprint(o), dims), AccessGroups: g, AccessKey: "k1"})
		}
	}
	if err := s.Upsert(ctx, from, chunks); err != nil {
		t.Fatal(err)
	}
	docsOf := func(coll string, groups ...string) []string {
		t.Helper()
		var out []string
		for _, q := range []Query{{Mode: ModeBM25, Text: "windenergie"}, {Mode: ModeDense, Vector: unitVector("raad0", dims)},
			{Mode: ModeHybrid, Text: "besluit", Vector: unitVector("jur1", dims), Alpha: 0.5}} {
			q.Limit, q.Access = 20, &AccessFilter{Groups: groups}
			hits, err := s.Search(ctx, coll, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				if !slices.Contains(out, h.DocID) {
					out = append(out, h.DocID)
				}
				if !slices.ContainsFunc(h.AccessGroups, func(g string) bool { return slices.Contains(groups, g) }) {
					t.Errorf("%s: hit %s#%d groups %v outside %v", q.Mode, h.DocID, h.Ordinal, h.AccessGroups, groups)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	if got := docsOf(from, "raad", "ragops:public"); !slices.Equal(got, []string{"pub", "raad"}) {
		t.Errorf("raad reads %v, want [pub raad]", got)
	}
	if got := docsOf(from, "raad-presidium"); !slices.Equal(got, []string{"jur"}) {
		t.Errorf("raad-presidium reads %v, want [jur]", got)
	}
	for _, f := range []*AccessFilter{{}, {Groups: []string{""}}} {
		if hits, err := s.Search(ctx, from, Query{Mode: ModeBM25, Text: "windenergie", Limit: 5, Access: f}); err == nil || hits != nil {
			t.Errorf("filter %+v: %d hits, error %v; want a refusal", f, len(hits), err)
		}
	}

	// Small-to-big: a document's neighbouring chunks, in order, under the same filter.
	if nb, err := s.Neighbours(ctx, from, "jur", 0, 1, &AccessFilter{Groups: []string{"juridisch"}}); err != nil || len(nb) != 2 || nb[0].Ordinal != 0 || nb[1].Ordinal != 1 || nb[1].Text == "" {
		t.Errorf("neighbours of jur#0..1 as juridisch: %+v, %v", nb, err)
	}
	if nb, err := s.Neighbours(ctx, from, "jur", 0, 2, &AccessFilter{Groups: []string{"raad", "ragops:public"}}); err != nil || len(nb) != 0 {
		t.Errorf("neighbours of jur as raad: %+v, %v; want none", nb, err)
	}
	if nb, err := s.Neighbours(ctx, from, "jur", 0, 2, &AccessFilter{}); err == nil || nb != nil {
		t.Errorf("neighbours with an empty filter: %+v, %v; want a refusal", nb, err)
	}

	// Regroup: raad loses its document to raad-presidium; text and vectors stay.
	before, err := s.Search(ctx, from, Query{Mode: ModeDense, Vector: unitVector("raad1", dims), Limit: 1, WithText: true, Access: &AccessFilter{Groups: []string{"raad"}}})
	if err != nil || len(before) != 1 {
		t.Fatalf("before regroup: %v %v", before, err)
	}
	n, err := s.SetAccess(ctx, from, "k2", []DocumentAccess{{DocID: "raad", Groups: []string{"raad-presidium"}, Chunks: 3}})
	if err != nil || n != 3 {
		t.Fatalf("SetAccess rewrote %d chunks: %v", n, err)
	}
	if got := docsOf(from, "raad"); len(got) != 0 {
		t.Errorf("after the regroup raad still reads %v", got)
	}
	after, err := s.Search(ctx, from, Query{Mode: ModeDense, Vector: unitVector("raad1", dims), Limit: 1, WithText: true, Access: &AccessFilter{Groups: []string{"raad-presidium"}}})
	if err != nil || len(after) != 1 || after[0].ID != before[0].ID || after[0].Text != before[0].Text || after[0].Distance != before[0].Distance {
		t.Errorf("regrouped chunk %+v, before %+v: want the same object, text and vector", after, before)
	}
	states, err := s.DocumentStates(ctx, from, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !states["raad"].HasAccess("k2") || !states["pub"].HasAccess("k1") || states["raad"].HasAccess("k1") || !states["raad"].Consistent() {
		t.Errorf("states %+v", states)
	}

	if _, err := s.CopyCollection(ctx, from, to, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := docsOf(to, "raad-presidium"); !slices.Equal(got, []string{"jur", "raad"}) {
		t.Errorf("in the copy raad-presidium reads %v, want [jur raad]", got)
	}
}
