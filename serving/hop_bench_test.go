package serving_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// BenchmarkQueryHop measures what the serving path adds to a query: nearText through the
// alias (Weaviate calls the model server, which embeds the query) against nearVector with the
// vector the client computed with the same model in its own process, one query at a time on
// a 240-document SciFact collection (all-MiniLM-L6-v2). Both embed one query per operation,
// so the difference is the hop: Weaviate's HTTP call to the server and the server's batching.
// It reports p50-ms and p99-ms beside ns/op.
func BenchmarkQueryHop(b *testing.B) {
	dir := miniLM(b)
	wv := weaviatetest.StartWith(b, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		b.Fatal(err)
	}
	srv := servingtest.Start(b, dir, serving.Options{})
	idx := servingtest.SciFactIndex(b, store, srv, "serve", "hop", "r1", 240)
	run := func(b *testing.B, search func(q string) error) {
		var lat []time.Duration
		i := 0
		for b.Loop() {
			start := time.Now()
			if err := search(idx.Queries[i%len(idx.Queries)].Text); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			i++
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.Run("nearText", func(b *testing.B) {
		run(b, func(q string) error {
			_, err := store.Search(b.Context(), idx.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Text: q, EmbedText: true, Limit: 10})
			return err
		})
	})
	b.Run("nearVector", func(b *testing.B) {
		run(b, func(q string) error {
			v, err := srv.Model.EmbedQueries(b.Context(), []string{q})
			if err != nil {
				return err
			}
			_, err = store.Search(b.Context(), idx.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Vector: v[0], Limit: 10})
			return err
		})
	})
}
