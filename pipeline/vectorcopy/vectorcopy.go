// Package vectorcopy fills a revision collection from another revision's collection: the
// worker side of a revision that differs from a kept one only in how its vectors are stored
// (vector index, compression, sharding, replication), whose chunks and vectors are therefore
// those of the kept revision. It runs in the embedder Job (`ragops embed` with a plan whose
// Copy is set), where builds run, so the manager never moves a collection's objects itself:
// a copy is as long as the collection is large, and a Job is killed, retried and bounded like
// a build.
package vectorcopy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/serving/specs"
	"github.com/ragops/ragops/vectorstore"
)

// Options configure a Run.
type Options struct {
	// OutageWait is how long each Weaviate call waits out an unavailable server; 0 means
	// vectorstore.DefaultOutageWait, negative a few retries only.
	OutageWait time.Duration
	// PageSize is the objects read per cursor page (default 500).
	PageSize int
	// OnPage, when set, is called after each written page with the objects copied so far.
	OnPage func(copied int64)
}

// Run creates the plan's collection with the plan's vector index and layout and the source
// collection's dimensions (and its vectorizer wiring when the plan names a model server),
// then copies every object of p.Copy.Collection into it (vectorstore.Store.CopyCollection:
// same properties and vectors, chunk IDs of the plan's revision, so a re-run never
// duplicates), then the source's document manifest (vectorstore.Store.CopyManifest). The
// result counts the copied documents and chunks; Tokens is 0 (nothing is embedded) and
// ModelHash is the plan's (the source revision's).
//
// Errors: the plan has no Copy or more than one shard; Weaviate errors (a missing source
// collection is *vectorstore.CollectionNotFoundError).
func Run(ctx context.Context, log *slog.Logger, p plan.Build, o Options) (plan.BuildResult, error) {
	start := time.Now()
	res := plan.BuildResult{ModelHash: p.ModelHash}
	if p.Copy == nil {
		return res, fmt.Errorf("plan of revision %s names no collection to copy", p.Revision)
	}
	if p.Shards > 1 {
		return res, fmt.Errorf("a copy runs as one shard, the plan has %d", p.Shards)
	}
	cfg, err := vectorstore.EndpointConfig(p.Weaviate.URL, p.Weaviate.GRPCAddress, os.Getenv(plan.EnvWeaviateAPIKey))
	if err != nil {
		return res, err
	}
	if cfg.CABundle, err = vectorstore.ReadCAFile(os.Getenv(vectorstore.EnvCAFile)); err != nil {
		return res, err
	}
	switch wait := o.OutageWait; {
	case wait == 0:
		cfg.Outage = vectorstore.OutagePolicy{Wait: vectorstore.DefaultOutageWait, Log: log}
	case wait > 0:
		cfg.Outage = vectorstore.OutagePolicy{Wait: wait, Log: log}
	}
	cfg.WriteConsistency = string(p.Weaviate.Consistency)
	store, err := vectorstore.New(cfg)
	if err != nil {
		return res, err
	}
	src, err := store.Collection(ctx, p.Copy.Collection)
	if err != nil {
		return res, err
	}
	spec := vectorstore.CollectionSpec{Name: p.Collection, Revision: p.Revision, Dimensions: src.Dimensions,
		Index: vectorIndex(p)}
	p.ApplyLayout(&spec)
	if p.ModelServer != "" {
		spec.Vectorizer = vectorstore.Transformers{PassageURL: specs.PassageURL(p.ModelServer), QueryURL: specs.QueryURL(p.ModelServer), Pooling: src.Vectorizer.Pooling}
		if spec.Vectorizer.Pooling == "" {
			spec.Vectorizer.Pooling = vectorstore.TransformersPooling("mean")
		}
	}
	if info, err := store.Collection(ctx, p.Collection); err == nil {
		spec.Vectorizer = info.Vectorizer // a re-run keeps the wiring (Weaviate refuses to change it)
	}
	if err := store.EnsureCollection(ctx, spec); err != nil {
		return res, err
	}
	log.Info("copying", "from", p.Copy.Collection, "to", p.Collection, "dimensions", src.Dimensions)
	st, err := store.CopyCollection(ctx, p.Copy.Collection, p.Collection, o.PageSize, o.OnPage)
	res.Documents, res.Chunks, res.StoredBytes = st.Documents, st.Objects, st.Bytes
	chunks := st.Objects
	res.ShardChunks = &chunks
	res.Seconds = time.Since(start).Round(time.Millisecond).Seconds()
	if err != nil {
		return res, err
	}
	// The documents are the source's: so is its manifest, which the revision's syncs read
	// their documents' state from (a source without one leaves none: the first sync walks
	// the collection once and writes it).
	records, err := store.CopyManifest(ctx, p.Copy.Collection, p.Collection, 0)
	if err != nil {
		return res, err
	}
	log.Info("copied", "documents", st.Documents, "chunks", st.Objects, "manifestRecords", records, "seconds", res.Seconds)
	return res, nil
}

// vectorIndex maps the plan's vector index settings to the store's, as a build does; the
// HNSW parameters apply to hnsw only.
func vectorIndex(p plan.Build) vectorstore.VectorIndex {
	vi := p.VectorIndex
	out := vectorstore.VectorIndex{Type: string(vi.Type), Distance: vi.Distance}
	if vi.Type != "flat" {
		out.EfConstruction, out.MaxConnections, out.Ef = int(vi.EfConstruction), int(vi.MaxConnections), int(vi.Ef)
	}
	return out
}
