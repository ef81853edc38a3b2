// Command bench-cluster measures ragops's vector store beyond one node, on SciFact with
// precomputed all-MiniLM-L6-v2 document vectors (float32 LE, one 384-dim row per corpus
// document in corpus order, as hack/scifact-model writes them).
//
// Speed: import objects/s and query latency p50/p99 (300 test queries, nearVector, top 10) on
// one node versus a three-node cluster with replication factor 3 (QUORUM writes and reads),
// same data, same HNSW settings, one run each.
//
// Compression: for each quantizer, a fresh single node, the same import, and the 300 test
// queries evaluated by package evaluator (nDCG@10, recall@10), plus the server's RSS growth
// and the vector bytes per million vectors of the quantized form.
//
// Usage (one JSON line per measurement):
//
//	go run ./hack/bench-cluster -model .cache/models/all-minilm-l6-v2 \
//	    -vectors /work/vectors/all-minilm-l6-v2.f32 -datasets ../shared/datasets
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/hack/internal/vectorfile"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

func main() {
	modelDir := flag.String("model", ".cache/models/all-minilm-l6-v2", "model folder (embeds the test queries)")
	data := flag.String("datasets", "../shared/datasets", "datasets folder holding scifact/")
	vecPath := flag.String("vectors", "/work/vectors/all-minilm-l6-v2.f32", "SciFact document vectors (float32 LE)")
	parts := flag.String("parts", "speed,compression", "what to measure: speed, compression")
	flag.Parse()
	ctx := context.Background()

	src := evaluator.DatasetSource{Name: "scifact", Dir: filepath.Join(*data, "scifact")}
	ds, err := evaluator.LoadDataset(ctx, src, "test")
	if err != nil {
		log.Fatal(err)
	}
	m, err := embedder.Load(*modelDir, embedder.Options{IntraOpThreads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	dim := m.Dimension()
	vecs, err := vectorfile.Read(*vecPath, len(ds.Corpus), dim)
	if err != nil {
		log.Fatal(err)
	}
	chunks := make([]vectorstore.Chunk, len(ds.Corpus))
	for i, d := range ds.Corpus {
		text := strings.TrimSpace(d.Title + " " + d.Text)
		chunks[i] = vectorstore.Chunk{DocID: d.ID, End: len(text), Text: text, Vector: vecs[i]}
	}
	// The 300 test queries, embedded once (cached for every evaluation).
	enc := &cachedEncoder{m: m, cache: map[string][]float32{}}
	var qvecs [][]float32
	for _, q := range ds.Queries {
		v, err := enc.EncodeQuery(ctx, q.Text)
		if err != nil {
			log.Fatal(err)
		}
		qvecs = append(qvecs, v)
	}
	hnsw := vectorstore.VectorIndex{Type: vectorstore.IndexHNSW, EfConstruction: 64}

	if strings.Contains(*parts, "speed") {
		for _, nodes := range []int{1, 3} {
			c, err := weaviatetest.LaunchCluster(ctx, weaviatetest.ClusterOptions{Size: nodes})
			if err != nil {
				log.Fatal(err)
			}
			cfg := vectorstore.Config{HTTPHost: c.Nodes[0].HTTPAddr, GRPCHost: c.Nodes[0].GRPCAddr}
			spec := vectorstore.CollectionSpec{Name: "Bench_Speed", Revision: "r", Dimensions: dim, Index: hnsw}
			if nodes == 3 {
				cfg.WriteConsistency, cfg.ReadConsistency = vectorstore.ConsistencyQuorum, vectorstore.ConsistencyQuorum
				spec.Replication = vectorstore.Replication{Factor: 3}
			}
			s, err := vectorstore.New(cfg)
			if err != nil {
				log.Fatal(err)
			}
			ips, p50, p99 := importAndQuery(ctx, s, spec, chunks, qvecs)
			emit(map[string]any{"part": "speed", "nodes": nodes, "replicationFactor": max(spec.Replication.Factor, 1),
				"objects": len(chunks), "importObjectsPerSecond": math.Round(ips), "queries": len(qvecs),
				"queryP50ms": round(p50, 2), "queryP99ms": round(p99, 2)})
			c.Stop()
		}
	}

	if strings.Contains(*parts, "compression") {
		settings := []struct {
			name string
			c    vectorstore.Compression
		}{
			{"none", vectorstore.Compression{}},
			{"rq-8", vectorstore.Compression{Type: vectorstore.CompressionRQ, Bits: 8}},
			{"rq-1 rescore 256", vectorstore.Compression{Type: vectorstore.CompressionRQ, Bits: 1, RescoreLimit: 256}},
			{"bq", vectorstore.Compression{Type: vectorstore.CompressionBQ}},
			{"sq", vectorstore.Compression{Type: vectorstore.CompressionSQ, TrainingLimit: 1000}},
			{"pq 96 segments", vectorstore.Compression{Type: vectorstore.CompressionPQ, Segments: 96, TrainingLimit: 1000}},
		}
		for _, st := range settings {
			srv, err := weaviatetest.Launch(ctx, weaviatetest.Options{})
			if err != nil {
				log.Fatal(err)
			}
			s, err := vectorstore.New(vectorstore.Config{HTTPHost: srv.HTTPAddr, GRPCHost: srv.GRPCAddr})
			if err != nil {
				log.Fatal(err)
			}
			ix := hnsw
			ix.Compression = st.c
			spec := vectorstore.CollectionSpec{Name: "Bench_Compression", Revision: "r", Dimensions: dim, Index: ix}
			rss0 := rss(srv.PID())
			if err := s.EnsureCollection(ctx, spec); err != nil {
				log.Fatal(err)
			}
			t0 := time.Now()
			if err := s.Upsert(ctx, spec.Name, chunks); err != nil {
				log.Fatal(err)
			}
			importS := time.Since(t0).Seconds()
			// PQ and SQ compress in the background once trainingLimit vectors are in.
			time.Sleep(5 * time.Second)
			rss1 := rss(srv.PID())
			sum, err := evaluator.Run(ctx, evaluator.Config{Dataset: src, Mode: evaluator.Dense,
				Retriever: evaluator.StoreRetriever{Store: s, Target: spec.Name}, Encoder: enc, Cutoffs: []int{10}})
			if err != nil {
				log.Fatal(err)
			}
			emit(map[string]any{"part": "compression", "setting": st.name, "objects": len(chunks),
				"ndcg@10": sum.Metrics["ndcg@10"], "recall@10": sum.Metrics["recall@10"],
				"importSeconds": round(importS, 1), "rssGrowthMiB": round(float64(rss1-rss0)/(1<<20), 1),
				"vectorBytesPerMillion": vectorBytes(st.c, dim) * 1e6})
			srv.Stop()
		}
	}
}

// importAndQuery creates the collection, imports the chunks (objects/s), then runs each query
// vector as nearVector top 10 and returns the latency percentiles in ms.
func importAndQuery(ctx context.Context, s *vectorstore.Store, spec vectorstore.CollectionSpec, chunks []vectorstore.Chunk, qvecs [][]float32) (ips, p50, p99 float64) {
	if err := s.EnsureCollection(ctx, spec); err != nil {
		log.Fatal(err)
	}
	t0 := time.Now()
	if err := s.Upsert(ctx, spec.Name, chunks); err != nil {
		log.Fatal(err)
	}
	ips = float64(len(chunks)) / time.Since(t0).Seconds()
	var lat []float64
	for _, q := range qvecs {
		t := time.Now()
		if _, err := s.Search(ctx, spec.Name, vectorstore.Query{Mode: vectorstore.ModeDense, Vector: q, Limit: 10}); err != nil {
			log.Fatal(err)
		}
		lat = append(lat, float64(time.Since(t).Microseconds())/1000)
	}
	slices.Sort(lat)
	return ips, lat[len(lat)/2], lat[len(lat)*99/100]
}

// vectorBytes is the in-memory size of one quantized vector (Weaviate 1.37 formats): float32
// 4 B per dimension; SQ and RQ-8 1 B per dimension; RQ-1 and BQ 1 bit per dimension; PQ one
// byte per segment. RQ also stores a few floats per vector (not counted).
func vectorBytes(c vectorstore.Compression, dim int) float64 {
	switch c.Type {
	case vectorstore.CompressionSQ:
		return float64(dim)
	case vectorstore.CompressionRQ:
		if c.Bits == 1 {
			return float64(dim) / 8
		}
		return float64(dim)
	case vectorstore.CompressionBQ:
		return float64(dim) / 8
	case vectorstore.CompressionPQ:
		return float64(c.Segments)
	}
	return 4 * float64(dim)
}

type cachedEncoder struct {
	m     *embedder.Model
	cache map[string][]float32
}

func (e *cachedEncoder) EncodeQuery(ctx context.Context, text string) ([]float32, error) {
	if v, ok := e.cache[text]; ok {
		return v, nil
	}
	v, err := e.m.EmbedQueries(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	e.cache[text] = v[0]
	return v[0], nil
}

func rss(pid int) int64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return int64(st.ResidentMemory())
}

func round(x float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(x*p) / p
}

func emit(v map[string]any) {
	raw, _ := json.Marshal(v)
	fmt.Println(string(raw))
}
