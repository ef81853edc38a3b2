package endpoint

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, small-to-big: a hit comes back with its heading section (the consecutive chunks
// of its document sharing its heading path, at most Request.Section, centred on it) or its
// neighbours, in ordinal order, through the endpoint over a real Weaviate; for two personas
// neither the hits nor their sections ever hold a chunk of a document outside the persona's
// groups, though every document holds the query's words; both expansions at once is a 400.
func TestEndpointExpandsSectionsUnderAccess(t *testing.T) {
	wv := weaviatetest.Start(t)
	ctx := t.Context()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	coll, _ := vectorstore.CollectionName("archief", "nota", "r1")
	alias, _ := vectorstore.AliasName("archief", "nota")
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: coll, Revision: "r1", Dimensions: 3}); err != nil {
		t.Fatal(err)
	}
	// Each document: chunk 0 under [Nota], 1-4 under [Nota, Wind], 5 under [Nota, Zon], 6
	// under [Nota, Wind] again (a second section with the same heading: not the first's).
	headings := [][]string{{"Nota"}, {"Nota", "Wind"}, {"Nota", "Wind"}, {"Nota", "Wind"}, {"Nota", "Wind"}, {"Nota", "Zon"}, {"Nota", "Wind"}}
	docs := map[string][]string{"openbaar/nota.md": {"ragops:public"}, "besloten/nota.md": {"raad"}, "advies/nota.md": {"juridisch"}}
	var chunks []vectorstore.Chunk
	for doc, groups := range docs {
		off := 0
		for o, h := range headings {
			text := fmt.Sprintf("%s deel %d over %s", doc, o, strings.ToLower(h[len(h)-1]))
			if o == 3 {
				text += " windturbine vergunning"
			}
			chunks = append(chunks, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: off, End: off + len(text), Text: text,
				HeadingPath: h, Vector: []float32{1, float32(o), 0}, DocHash: "h", AccessGroups: groups, AccessKey: "k"})
			off += len(text)
		}
	}
	if err := store.Upsert(ctx, coll, chunks); err != nil {
		t.Fatal(err)
	}
	if err := store.SetAlias(ctx, alias, coll); err != nil {
		t.Fatal(err)
	}
	is := startIssuer(t)
	hs := httptest.NewServer((&Server{Authorizer: &Authorizer{Authn: &Chain{OIDC: []*OIDC{{Issuer: OIDCIssuer{URL: is.srv.URL, ClientID: "ragops"}}}}},
		Resolver: staticResolver{Target{Alias: alias, Store: store}}}).Handler())
	t.Cleanup(hs.Close)
	url := hs.URL + "/v1/indexes/nota/search"
	personas := []persona{
		{"burger", is.token(t, "burger", nil, time.Now().Add(time.Hour)), map[string]bool{"openbaar": true}},
		{"raadslid", is.token(t, "raadslid", []string{"raad"}, time.Now().Add(time.Hour)), map[string]bool{"openbaar": true, "besloten": true}},
	}
	ordinals := func(rs []query.Result) []int {
		var out []int
		for _, r := range rs {
			out = append(out, r.Chunk)
		}
		return out
	}
	for _, pe := range personas {
		for _, c := range []struct {
			req  Request
			want []int // the context of the hit, chunk 3 of a readable document
		}{
			{Request{Section: MaxSection}, []int{1, 2, 3, 4}},
			{Request{Section: 2}, []int{3, 4}},
			{Request{Section: 1}, []int{3}},
			{Request{Neighbours: 2}, []int{1, 2, 3, 4, 5}},
		} {
			req := c.req
			req.Query, req.Mode, req.K = "windturbine vergunning", "bm25", 10
			code, out, raw := post(t, url, pe.token, req)
			if code != http.StatusOK {
				t.Fatalf("%s %+v: status %d (%s)", pe.name, c.req, code, raw)
			}
			var readable []string
			for _, r := range out.Results {
				if !pe.allowed[classOf(r.DocID)] {
					t.Errorf("%s %+v: hit %s#%d: a leak", pe.name, c.req, r.DocID, r.Chunk)
				}
				around := r.Section
				if c.req.Neighbours > 0 {
					around = r.Neighbours
				}
				for _, n := range append(r.Section, r.Neighbours...) {
					if n.DocID != r.DocID || !pe.allowed[classOf(n.DocID)] {
						t.Errorf("%s %+v: hit %s#%d expanded with %s#%d: a leak", pe.name, c.req, r.DocID, r.Chunk, n.DocID, n.Chunk)
					}
				}
				if r.Chunk == 3 {
					readable = append(readable, r.DocID)
					if got := ordinals(around); !slices.Equal(got, c.want) {
						t.Errorf("%s %+v: %s#3 expanded to chunks %v, want %v", pe.name, c.req, r.DocID, got, c.want)
					}
					if c.req.Section > 0 && len(r.Neighbours) > 0 || c.req.Neighbours > 0 && len(r.Section) > 0 {
						t.Errorf("%s %+v: both a section and neighbours", pe.name, c.req)
					}
				}
			}
			slices.Sort(readable)
			var want []string
			for doc := range docs {
				if pe.allowed[classOf(doc)] {
					want = append(want, doc)
				}
			}
			slices.Sort(want)
			if !slices.Equal(readable, want) {
				t.Errorf("%s %+v: expanded hits of %v, want %v", pe.name, c.req, readable, want)
			}
		}
	}
	for _, bad := range []Request{{Section: 2, Neighbours: 1}, {Section: MaxSection + 1}, {Section: -1}} {
		bad.Query, bad.Mode = "windturbine", "bm25"
		if code, out, raw := post(t, url, personas[1].token, bad); code != http.StatusBadRequest || len(out.Results) != 0 {
			t.Errorf("%+v: status %d (%s), want 400", bad, code, raw)
		}
	}
}
