// Package estimate runs an Experiment's estimate plan (the `ragops estimate` worker): it
// lists the corpus as a scan does, reads a seeded sample of its documents as a build reads
// them, and estimates every trial's tokens with package experiment/budget. It is how the
// operator estimates corpora it cannot read itself (PVC, S3, HTTP, Git sources).
package estimate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/build"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/vectorstore"
)

// Options configure Run.
type Options struct {
	// Readers read the sampled documents; nil means a build's (build.NewReaders).
	Readers corpus.DocumentReader
	// LibraryPath is the ONNX Runtime library, loaded only for strategies that embed
	// sentences to cut (Semantic, Cluster); empty means $RAGOPS_ONNXRUNTIME_LIB.
	LibraryPath string
	// WorkDir holds fetched sources (S3, Git, HTTP).
	WorkDir string
}

// Run estimates every trial of p, a Sampled one for the documents p.Sample keeps (the
// judged documents of its dataset and its fraction of the others). A document of the sample that cannot be read counts as
// read and skipped (no chunk, no token), as a build skips it. A trial whose model folder or
// strategy fails gets its Error and the others go on.
//
// Errors: the source cannot be opened or listed, it lists no document.
func Run(ctx context.Context, log *slog.Logger, p plan.Estimate, o Options) (plan.EstimateResult, error) {
	next := o.Readers
	if next == nil {
		r := build.NewReaders(p.Source)
		defer func() { _ = r.Close() }()
		next = r
	}
	var cache extractcache.Store
	if p.Weaviate != nil && p.ExtractionCache != "" {
		store, err := openStore(*p.Weaviate)
		if err != nil {
			return plan.EstimateResult{}, err
		}
		cache = extractcache.Weaviate(store, p.ExtractionCache)
	}
	readers := extractcache.NewReader(next, cache, build.ReaderSettings(p.Source), log)
	// An S3 source is listed first and only the sample is downloaded (below); the others are
	// fetched once, whole.
	listOnly := p.Source.S3 != nil
	src, err := corpus.OpenWith(ctx, p.Source, o.WorkDir, readers, corpus.OpenOptions{Listing: listOnly})
	if err != nil {
		return plan.EstimateResult{}, err
	}
	var units []budget.Unit
	var res plan.EstimateResult
	if err := src.Walk(ctx, true, nil, func(d corpus.Document) error {
		units = append(units, budget.Unit{Key: d.ID, Bytes: d.Size})
		res.Documents++
		res.Bytes += d.Size
		return nil
	}, func(corpus.Skipped) {}); err != nil {
		return res, err
	}
	if len(units) == 0 {
		return res, errors.New("the corpus lists no document")
	}
	fraction := math.Min(1, math.Max(p.Fraction, float64(p.MinDocuments)/float64(len(units))))
	sample := budget.Sample(units, fraction, p.Seed)
	read := make(map[string]reader.Document, len(sample))
	for _, u := range sample {
		read[u.Key] = reader.Document{}
	}
	sampled := func(id string) bool { _, ok := read[id]; return ok }
	if listOnly {
		if src, err = corpus.OpenWith(ctx, p.Source, o.WorkDir, readers, corpus.OpenOptions{Keep: sampled}); err != nil {
			return res, err
		}
	}
	err = src.Walk(ctx, false, sampled, func(d corpus.Document) error {
		read[d.ID] = d.Doc
		return nil
	}, func(sk corpus.Skipped) {
		log.Info("sampled document skipped: counts as no tokens, as a build skips it", "document", sk.ID, "reason", sk.Reason)
	})
	if err != nil {
		return res, err
	}
	st := readers.Stats()
	res.Reads = &ragopsv1alpha1.DocumentReads{Extracted: st.Extracted, CacheHits: st.Hits, CacheMisses: st.Misses}
	docs := make([]budget.Document, len(sample))
	for i, u := range sample {
		docs[i] = budget.Document{Unit: u, Doc: read[u.Key]}
	}
	res.SampleDocuments = len(docs)
	pop := budget.Population{Documents: res.Documents, Bytes: res.Bytes}
	sampledPop := pop
	if p.Sample != nil {
		// The sampled trials build only what p.Sample keeps: they scale to that.
		s, err := build.LoadSample(ctx, p.Sample)
		if err != nil {
			return res, err
		}
		sampledPop = budget.Population{}
		for _, u := range units {
			if s.Keep(u.Key) {
				sampledPop.Documents++
				sampledPop.Bytes += u.Bytes
			}
		}
		res.SampledDocuments, res.SampledBytes = sampledPop.Documents, sampledPop.Bytes
	}
	models := modelCache{libraryPath: o.LibraryPath}
	defer models.close()
	for _, t := range p.Trials {
		te := plan.TrialEstimate{Name: t.Name, Revision: t.Revision}
		tp := pop
		if t.Sampled && p.Sample != nil {
			tp = sampledPop
		}
		est, err := estimateTrial(ctx, &models, t, docs, tp)
		if err != nil {
			te.Error = plan.CutTrialError(err.Error())
			log.Warn("trial not estimated", "trial", t.Name, "error", err)
		} else {
			te.Tokens, te.Chunks, te.RelativeStandardError = est.Tokens, est.Chunks, est.RelativeStandardError
			log.Info("estimated", "trial", t.Name, "tokens", est.Tokens, "chunks", est.Chunks, "sampleDocuments", est.SampleDocuments, "rse", est.RelativeStandardError)
		}
		res.Trials = append(res.Trials, te)
	}
	return res, nil
}

func estimateTrial(ctx context.Context, models *modelCache, t plan.EstimateTrial, docs []budget.Document, pop budget.Population) (budget.Estimate, error) {
	m, err := models.get(t.ModelDir, false)
	if err != nil {
		return budget.Estimate{}, err
	}
	est, err := budget.EstimateTokens(ctx, t.Strategy, m, docs, pop)
	if errors.Is(err, budget.ErrNeedsEmbedder) {
		if m, err = models.get(t.ModelDir, true); err != nil {
			return budget.Estimate{}, err
		}
		est, err = budget.EstimateTokens(ctx, t.Strategy, m, docs, pop)
	}
	return est, err
}

// modelCache loads each model folder once: its tokenizer always, its ONNX model only for a
// strategy that embeds sentences.
type modelCache struct {
	libraryPath string
	models      map[string]budget.Model
	loaded      []*embedder.Model
}

func (c *modelCache) get(dir string, withEmbedder bool) (budget.Model, error) {
	m, ok := c.models[dir]
	if !ok {
		var err error
		if m, err = budget.LoadModel(dir); err != nil {
			return m, fmt.Errorf("model folder %s: %w", dir, err)
		}
		if c.models == nil {
			c.models = map[string]budget.Model{}
		}
	}
	if withEmbedder && m.Embedder == nil {
		e, err := embedder.Load(dir, embedder.Options{LibraryPath: c.libraryPath, IntraOpThreads: 1})
		if err != nil {
			return m, fmt.Errorf("model folder %s: %w", dir, err)
		}
		c.loaded = append(c.loaded, e)
		m.Embedder = e
	}
	c.models[dir] = m
	return m, nil
}

func (c *modelCache) close() {
	for _, e := range c.loaded {
		_ = e.Close()
	}
}

// openStore opens the Weaviate of w as a build does (API key from $WEAVIATE_API_KEY, CA bundle
// from vectorstore.EnvCAFile).
func openStore(w plan.Weaviate) (*vectorstore.Store, error) {
	cfg, err := vectorstore.EndpointConfig(w.URL, w.GRPCAddress, os.Getenv(plan.EnvWeaviateAPIKey))
	if err != nil {
		return nil, err
	}
	if cfg.CABundle, err = vectorstore.ReadCAFile(os.Getenv(vectorstore.EnvCAFile)); err != nil {
		return nil, err
	}
	return vectorstore.New(cfg)
}
