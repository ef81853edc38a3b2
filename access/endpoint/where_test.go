package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/build"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// staticResolver serves one Target under every Index name.
type staticResolver struct{ t Target }

func (s staticResolver) Resolve(context.Context, string) (Target, error) { return s.t, nil }

// Issue 52, filters through the endpoint: a small council corpus in the three access classes
// (and the denied one), each document dated by its sidecar (one a year, 2014-2023), built by
// the worker with spec.access and a date field, searched through the endpoint by two OIDC
// personas. A date range returns exactly the dated documents in range the persona may read,
// in every mode; a where naming the access property (to widen it) is refused and no where
// ever returns a chunk outside the persona's groups; a where on an unknown property is a 400
// naming it, not an unfiltered search.
func TestEndpointWhereNarrowsAccessNeverWidens(t *testing.T) {
	model := servingtest.ModelDir(t, servingtest.EnvMiniLM)
	wv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	srv := servingtest.Start(t, model, serving.Options{})
	ctx := t.Context()
	const ns, perClass = "archief", 10

	// One chunk per document (a chunk size above the documents' length), so a search with
	// k above the number of documents returns every document its filters match.
	dir := t.TempDir()
	for _, class := range []string{classPublic, classCouncil, classLegal, classDenied} {
		for i := range perClass {
			rel := filepath.Join(dir, class, fmt.Sprintf("besluit-%02d.md", i))
			body := fmt.Sprintf("# Besluit %s %d\n\nDe raad besluit over %s in het %s dossier.\n", class, i, topics[i%len(topics)], class)
			if class == classLegal {
				body = "---\nclassification: vertrouwelijk\n---\n" + body
			}
			side, _ := json.Marshal(map[string]any{"datum": fmt.Sprintf("%d-06-01", 2014+i)})
			if err := os.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rel, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rel+".meta.json", side, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	collection, _ := vectorstore.CollectionName(ns, "besluiten", "r1")
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	p := plan.Build{Version: plan.Version, Namespace: ns, Index: "besluiten", Revision: "r1", Collection: collection, Shards: 1,
		Source: plan.Source{Dir: dir, Metadata: &ragopsv1alpha1.MetadataSpec{SidecarSuffix: ".meta.json", Fields: []ragopsv1alpha1.MetadataField{
			{Name: "datum", Type: ragopsv1alpha1.MetadataDate, From: ragopsv1alpha1.MetadataSource{Sidecar: "datum"}}}}},
		Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 256},
		ModelDir: model, ModelServer: srv.URL,
		Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Threads: 1},
		Weaviate: plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr},
		Access:   accessSpec("raad")}
	if _, err := build.Run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), p, build.Options{}); err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetAlias(ctx, alias, collection); err != nil {
		t.Fatal(err)
	}
	is := startIssuer(t)
	hs := httptest.NewServer((&Server{Authorizer: &Authorizer{Authn: &Chain{OIDC: []*OIDC{{Issuer: OIDCIssuer{URL: is.srv.URL, ClientID: "ragops"}}}}},
		Resolver: staticResolver{Target{Alias: alias, Store: store}}}).Handler())
	t.Cleanup(hs.Close)
	url := hs.URL + "/v1/indexes/besluiten/search"
	personas := []persona{
		{"burger (no groups)", is.token(t, "burger", nil, time.Now().Add(time.Hour)), map[string]bool{classPublic: true}},
		{"raadslid (raad)", is.token(t, "raadslid", []string{"raad"}, time.Now().Add(time.Hour)), map[string]bool{classPublic: true, classCouncil: true}},
	}
	search := func(pe persona, mode string, where ...string) (int, []string, string) {
		t.Helper()
		code, out, raw := post(t, url, pe.token, Request{Query: "raad besluit dossier", Mode: mode, K: MaxK, Where: where})
		var docs []string
		for _, h := range out.Results {
			docs = append(docs, h.DocID)
			if !pe.allowed[classOf(h.DocID)] {
				t.Errorf("%s, %s, where %q: returned %s (class %s): a leak", pe.name, mode, where, h.DocID, classOf(h.DocID))
			}
		}
		slices.Sort(docs)
		return code, docs, raw
	}

	t.Run("date range", func(t *testing.T) {
		for _, pe := range personas {
			// 2018-01-01 <= datum < 2021-01-01: documents 4, 5 and 6 of each class it reads.
			var want []string
			for class := range pe.allowed {
				for i := 4; i <= 6; i++ {
					want = append(want, fmt.Sprintf("%s/besluit-%02d.md", class, i))
				}
			}
			slices.Sort(want)
			for _, mode := range []string{"dense", "bm25", "hybrid"} {
				code, docs, raw := search(pe, mode, "datum>=2018", "datum<2021-01-01")
				if code != http.StatusOK || !slices.Equal(docs, want) {
					t.Errorf("%s, %s: status %d, documents %v; want 200 and %v (%s)", pe.name, mode, code, docs, want, raw)
				}
			}
			// Unfiltered by date, the persona reads more: the range did the narrowing.
			if _, docs, _ := search(pe, "dense"); len(docs) != perClass*len(pe.allowed) {
				t.Errorf("%s without where: %d documents, want %d", pe.name, len(docs), perClass*len(pe.allowed))
			}
		}
	})

	t.Run("cannot widen", func(t *testing.T) {
		burger := personas[0]
		for _, w := range [][]string{
			{"accessGroups=ragops:public|raad|juridisch"},
			{"accessGroups=raad"},
			{"accessKey~*"},
			{" accessGroups != ragops:public"},
			{"datum>=2014", "accessGroups=juridisch|raad"},
		} {
			for _, mode := range []string{"dense", "bm25", "hybrid"} {
				code, docs, raw := search(burger, mode, w...)
				if code != http.StatusBadRequest || len(docs) != 0 || !strings.Contains(raw, "access") {
					t.Errorf("where %q, %s: status %d, %d documents (%s); want 400 naming the access property and no results", w, mode, code, len(docs), raw)
				}
			}
		}
		// Conditions that match every document, ORs and negations included, never widen.
		for _, w := range [][]string{{"datum>=1900"}, {"datum!=1999"}, {"docId~*"}, {"docId=" + classCouncil + "/besluit-01.md|" + classLegal + "/besluit-01.md|" + classDenied + "/besluit-01.md"}} {
			for _, mode := range []string{"dense", "bm25", "hybrid"} {
				if code, docs, raw := search(burger, mode, w...); code != http.StatusOK || len(docs) > perClass {
					t.Errorf("where %q, %s: status %d, %d documents (%s)", w, mode, code, len(docs), raw)
				}
			}
		}
	})

	t.Run("unknown property", func(t *testing.T) {
		for _, mode := range []string{"dense", "bm25", "hybrid"} {
			code, docs, raw := search(personas[1], mode, "jaar>=2018")
			if code != http.StatusBadRequest || len(docs) != 0 || !strings.Contains(raw, "jaar") {
				t.Errorf("%s: status %d, %d documents (%s); want 400 naming jaar", mode, code, len(docs), raw)
			}
		}
		if code, _, raw := search(personas[1], "dense", "datum>=gisteren"); code != http.StatusBadRequest || !strings.Contains(raw, "datum") {
			t.Errorf("a date that does not parse: status %d (%s); want 400 naming datum", code, raw)
		}
	})
}
