// Package build runs one shard of an Index build plan (the `ragops embed` worker): it reads
// the shard's documents, chunks them with docchunk, embeds the chunks naively or with late
// chunking and writes them into the revision's Weaviate collection. With an incremental plan
// it syncs an existing collection: unchanged documents are left alone, changed ones replaced,
// removed ones deleted, and documents that fail to read keep their previous chunks.
package build

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/progress"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/pdf"
	"github.com/ragops/ragops/vectorstore"
)

// embedBatchDocuments is how many documents are embedded together (their chunks share
// length-sorted batches) and written in one upsert.
const embedBatchDocuments = 16

// Options configure Run.
type Options struct {
	// Shard is the shard to run, 0 <= Shard < plan.Shards.
	Shard int
	// LibraryPath is the ONNX Runtime shared library (empty: $RAGOPS_ONNXRUNTIME_LIB).
	LibraryPath string
	// ProgressEvery is how often progress is logged.
	ProgressEvery time.Duration
	// OutageWait bounds how long each Weaviate call waits out an unavailable server (a
	// restart, a leader election) before the shard fails; 0 means
	// [vectorstore.DefaultOutageWait], negative the store's short default retry (seconds).
	OutageWait time.Duration
	// Readers turns raw bytes into documents; nil starts the format readers (PDFium, OCR)
	// the first time a document needs them. A reader that returns a *ReadersError cannot
	// read any document: the shard fails.
	Readers corpus.DocumentReader
}

// ReadersError is a document reader that could not start (PDFium failed to load, say): no
// document can be read, so Run fails the shard instead of counting every document as
// unreadable (which, in an incremental sync, would look like a corpus of unreadable files).
type ReadersError struct{ Err error }

func (e *ReadersError) Error() string { return "document readers did not start: " + e.Err.Error() }
func (e *ReadersError) Unwrap() error { return e.Err }

// lazyReaders starts the format readers (PDFium takes seconds) only when a file needs them.
type lazyReaders struct {
	once sync.Once
	r    *formats.Readers
	err  error
	max  int
	ocr  ocr.Options
}

func (l *lazyReaders) Read(ctx context.Context, data []byte) (reader.Document, error) {
	l.once.Do(func() {
		l.r, l.err = formats.New(ctx, formats.Options{MaxBytes: l.max, PDF: pdf.Options{CacheDir: filepath.Join(os.TempDir(), "pdfium-cache")}, OCR: l.ocr})
	})
	if l.err != nil {
		return reader.Document{}, &ReadersError{Err: l.err}
	}
	return l.r.Read(ctx, data)
}

func (l *lazyReaders) Close() {
	if l.r != nil {
		_ = l.r.Close()
	}
}

// Run runs one shard of a build plan and returns its figures (the pod's termination message).
//
// Documents that fail to read, are too large or fail to chunk are counted in Skipped by
// reason; in an incremental sync, those that had chunks keep them and are also counted in
// Kept (a document that cannot be read now is not a removed document). A container file (a
// BEIR corpus.jsonl) that cannot be opened or changed while it was read is one Skipped
// entry; since the collection does not record which file held which document, the sync then
// deletes none of the shard's documents it did not see, and counts them in Kept (the
// deletions wait for a sync that reads every container). Errors: the model,
// Weaviate or the corpus source fail, or the readers cannot start (*ReadersError).
func Run(ctx context.Context, log *slog.Logger, p plan.Build, o Options) (plan.BuildResult, error) {
	start := time.Now()
	res := plan.BuildResult{Shard: o.Shard, Skipped: map[string]int64{}}
	if p.Shards < 1 {
		p.Shards = 1
	}
	if o.Shard >= p.Shards {
		return res, fmt.Errorf("shard %d is outside the plan's %d shards", o.Shard, p.Shards)
	}
	if err := checkModelLimits(p); err != nil {
		return res, err
	}
	hash, err := checkModelHash(p)
	if err != nil {
		return res, err
	}
	res.ModelHash = hash
	late := p.Strategy.Late != nil && p.Strategy.Late.Enabled
	mopts := embedder.Options{
		LibraryPath: o.LibraryPath, Device: embedder.Device(p.Embedder.Device), AllowCPUFallback: p.Embedder.AllowCPUFallback,
		IntraOpThreads: int(p.Embedder.Threads), BatchTokens: int(p.Embedder.BatchTokens),
		Precision: embedder.Precision(p.Embedder.Precision),
	}
	if late {
		mopts.WindowTokens, mopts.WindowOverlap = int(p.Strategy.Late.Window), int(p.Strategy.Late.WindowOverlap)
	}
	model, err := loadModel(p.ModelDir, mopts)
	if err != nil {
		return res, err
	}
	defer model.Close()
	log.Info("model loaded", "dir", p.ModelDir, "provider", model.Provider(), "precision", mopts.Precision, "dimension", model.Dimension(), "late", late)

	chunker, err := registry.New(p.Strategy, model.Tokenizer(), model)
	if err != nil {
		return res, fmt.Errorf("strategy: %w", err)
	}
	mode := embedder.Naive
	if late {
		mode = embedder.Late
	}
	cfg, err := vectorstore.EndpointConfig(p.Weaviate.URL, p.Weaviate.GRPCAddress, os.Getenv(plan.EnvWeaviateAPIKey))
	if err != nil {
		return res, err
	}
	if cfg.CABundle, err = vectorstore.ReadCAFile(os.Getenv(vectorstore.EnvCAFile)); err != nil {
		return res, err
	}
	cfg.Outage = outagePolicy(log, o.OutageWait)
	cfg.WriteConsistency = string(p.Weaviate.Consistency)
	store, err := vectorstore.New(cfg)
	if err != nil {
		return res, err
	}
	spec := vectorstore.CollectionSpec{Name: p.Collection, Revision: p.Revision, Dimensions: model.Dimension(),
		Index: vectorIndex(p.VectorIndex)}
	p.ApplyLayout(&spec)
	if p.ModelServer != "" {
		spec.Vectorizer = vectorstore.Transformers{PassageURL: p.ModelServer, QueryURL: p.ModelServer,
			Pooling: vectorstore.TransformersPooling(string(model.Config().Pooling))}
	}
	if info, err := store.Collection(ctx, p.Collection); err == nil {
		// A resumed build or a sync keeps the collection's wiring (Weaviate refuses to change it).
		spec.Vectorizer = info.Vectorizer
	}
	if err := store.EnsureCollection(ctx, spec); err != nil {
		return res, err
	}

	readers := o.Readers
	if readers == nil {
		lazy := &lazyReaders{max: int(p.Source.MaxDocumentBytes), ocr: ocrOptions(p.Source.OCR)}
		defer lazy.Close()
		readers = lazy
	}
	src, err := corpus.Open(ctx, p.Source, os.TempDir(), readers)
	if err != nil {
		return res, err
	}
	mine := func(id string) bool { return corpus.Shard(id, o.Shard, p.Shards) }

	// What the collection already holds of this shard's documents: a sync compares it with the
	// corpus; a build (first run, Job retry or rebuilt revision) resumes from it.
	states, err := store.DocumentStates(ctx, p.Collection, 0, mine)
	if err != nil {
		return res, err
	}
	var existing map[string]string
	if p.Incremental {
		existing = make(map[string]string, len(states))
		for id, st := range states {
			existing[id] = st.Hash
		}
	}
	var total int64
	if err := src.Walk(ctx, true, mine, func(corpus.Document) error { total++; return nil }, func(corpus.Skipped) {}); err != nil {
		return res, err
	}
	log.Info("shard", "shard", o.Shard, "shards", p.Shards, "documents", total, "incremental", p.Incremental, "existing", len(states))

	prog := progress.New(log, "embedding", total, o.ProgressEvery)
	seen := map[string]bool{}    // incremental: documents still in the corpus
	emptied := map[string]bool{} // read, with no text: their chunks go
	wrote := map[string]bool{}   // full build: documents with chunks, written or resumed
	var pending []corpus.Document
	var pendingChunks [][]chunkers.Chunk
	var done int64
	var shardChunks int64 // chunks of this shard's documents the collection holds at the end
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		docs := make([]embedder.Document, len(pending))
		for i, d := range pending {
			docs[i] = embedder.Document{Text: d.Doc.Text, Chunks: pendingChunks[i]}
		}
		vecs, err := model.EmbedDocuments(ctx, docs, mode)
		if err != nil {
			return err
		}
		var batch []vectorstore.Chunk
		for i, d := range pending {
			var objs []vectorstore.Chunk
			for j, c := range pendingChunks[i] {
				first, last, _ := d.Doc.PageRange(c.Start, c.End)
				objs = append(objs, vectorstore.Chunk{
					DocID: d.ID, Ordinal: c.Ordinal, Start: c.Start, End: c.End, Text: c.Text(d.Doc.Text),
					HeadingPath: c.HeadingPath, PageStart: first, PageEnd: last, DocHash: d.Hash, Vector: vecs[i][j],
				})
			}
			res.Chunks += int64(len(objs))
			wrote[d.ID] = true
			if _, had := states[d.ID]; p.Incremental || had {
				// A partial (or outdated) set of chunks is rewritten whole.
				if err := store.ReplaceDocument(ctx, p.Collection, d.ID, objs); err != nil {
					return err
				}
				continue
			}
			batch = append(batch, objs...)
		}
		if len(batch) > 0 {
			if err := store.Upsert(ctx, p.Collection, batch); err != nil {
				return err
			}
		}
		done += int64(len(pending))
		res.Documents += int64(len(pending))
		pending, pendingChunks = pending[:0], pendingChunks[:0]
		prog.Tick(done+res.Unchanged, false, "chunks", res.Chunks)
		return nil
	}
	// A reader that cannot start stops the walk: wctx is cancelled and fatal says why.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fatal error
	var unreadContainers []string // container files not read whole: unseen documents are kept
	err = src.Walk(wctx, false, mine, func(d corpus.Document) error {
		seen[d.ID] = true
		if st, had := states[d.ID]; p.Incremental && had && st.Consistent() && st.Hash == d.Hash {
			res.Unchanged++
			shardChunks += int64(st.Chunks)
			return nil
		}
		addOCR(&res, d.Doc.OCR)
		chunks, err := docchunk.Chunk(ctx, chunker, d.Doc)
		if err != nil {
			res.Skipped["ChunkingFailed"]++
			if _, had := existing[d.ID]; had {
				res.Kept++
				shardChunks += int64(states[d.ID].Chunks)
			}
			log.Warn("document skipped", "document", d.ID, "reason", "ChunkingFailed", "error", err)
			return nil
		}
		if len(chunks) == 0 {
			// Its earlier chunks (if any) go, as a clean build would have none.
			delete(seen, d.ID)
			emptied[d.ID] = true
			res.Skipped[string(reader.Empty)]++
			log.Warn("document skipped", "document", d.ID, "reason", reader.Empty)
			return nil
		}
		if st, had := states[d.ID]; !p.Incremental && had && st.Complete(d.Hash, len(chunks)) {
			// Written whole by an earlier run of this revision: not embedded again.
			res.Resumed++
			res.ResumedTokens += model.DocumentTokens([]embedder.Document{{Text: d.Doc.Text, Chunks: chunks}}, mode)
			res.Documents++
			res.Chunks += int64(len(chunks))
			wrote[d.ID] = true
			done++
			return nil
		}
		pending = append(pending, d)
		pendingChunks = append(pendingChunks, chunks)
		if len(pending) >= embedBatchDocuments {
			return flush()
		}
		return nil
	}, func(sk corpus.Skipped) {
		var re *ReadersError
		if errors.As(sk.Err, &re) {
			if fatal == nil {
				fatal = re
			}
			cancel()
			return
		}
		res.Skipped[sk.Reason]++
		if sk.Container {
			unreadContainers = append(unreadContainers, sk.ID)
		}
		if _, had := existing[sk.ID]; had {
			// Its previous chunks stay: the document is still in the corpus.
			seen[sk.ID] = true
			res.Kept++
			shardChunks += int64(states[sk.ID].Chunks)
		}
		log.Warn("document skipped", "document", sk.ID, "reason", sk.Reason, "error", sk.Err, "keptPreviousChunks", seen[sk.ID])
	})
	if fatal != nil {
		return res, fatal
	}
	if err == nil {
		err = flush()
	}
	if err != nil {
		return res, err
	}
	// Documents of this shard that are no longer in the corpus (a sync), or that an earlier
	// run of this revision wrote but this one did not (a rebuild on a newer corpus revision),
	// are deleted: the collection ends as a clean build of the corpus would leave it. In a
	// sync that could not read a container whole, an unseen document may be one of its
	// records: all of them stay.
	var keptUnseen int64
	for id, st := range states {
		if p.Incremental && !seen[id] && len(unreadContainers) > 0 && !emptied[id] {
			res.Kept++
			keptUnseen++
			shardChunks += int64(st.Chunks)
			continue
		}
		if (p.Incremental && !seen[id]) || (!p.Incremental && !wrote[id]) {
			if _, err := store.DeleteDocument(ctx, p.Collection, id); err != nil {
				return res, err
			}
			res.Deleted++
		}
	}
	if len(unreadContainers) > 0 && p.Incremental {
		log.Warn("container files not read whole: documents not seen in this sync keep their chunks",
			"files", unreadContainers, "keptDocuments", keptUnseen)
	}
	shardChunks += res.Chunks
	res.ShardChunks = &shardChunks
	if res.Resumed > 0 {
		log.Info(fmt.Sprintf("resumed: skipped %d documents already complete", res.Resumed), "resumed", res.Resumed, "embedded", res.Documents-res.Resumed)
	}
	res.Tokens, res.TruncatedChunks = model.Stats().Tokens+res.ResumedTokens, model.Stats().TruncatedChunks
	res.Seconds = time.Since(start).Seconds()
	if len(res.Skipped) == 0 {
		res.Skipped = nil
	}
	prog.Tick(done+res.Unchanged, true, "chunks", res.Chunks, "tokens", res.Tokens, "deleted", res.Deleted, "kept", res.Kept, "resumed", res.Resumed)
	return res, nil
}

// outagePolicy is the store's wait for an unavailable Weaviate (see Options.OutageWait).
func outagePolicy(log *slog.Logger, wait time.Duration) vectorstore.OutagePolicy {
	switch {
	case wait < 0:
		return vectorstore.OutagePolicy{}
	case wait == 0:
		wait = vectorstore.DefaultOutageWait
	}
	return vectorstore.OutagePolicy{Wait: wait, Log: log}
}

// ocrOptions maps a Corpus's OCR settings to the reader's; nil (a plan written before the
// field existed) means the API defaults.
func ocrOptions(spec *ragopsv1alpha1.OCRSpec) ocr.Options {
	if spec == nil {
		return ocr.Options{Mode: ocr.Auto}
	}
	// minConfidence 0 asks for no second pass; the reader takes 0 as its default.
	o := ocr.Options{Mode: ocr.Mode(spec.Mode), Languages: spec.Languages, DPI: int(spec.DPI), MinConfidence: max(float64(spec.MinConfidence), 1e-9)}
	if o.Mode == "" {
		o.Mode = ocr.Auto
	}
	return o
}

// addOCR adds a document's OCR page counts to the shard's result.
func addOCR(res *plan.BuildResult, s *reader.OCRStats) {
	if s == nil {
		return
	}
	if res.OCR == nil {
		res.OCR = &ragopsv1alpha1.OCRStatus{}
	}
	res.OCR.Pages += int64(s.Pages)
	res.OCR.SecondPass += int64(s.SecondPass)
	res.OCR.LowConfidence += int64(s.LowConfidence)
}

// vectorIndex maps the Index's vector index settings to the store's; the HNSW parameters
// (defaulted in the CRD) apply to hnsw only.
func vectorIndex(vi ragopsv1alpha1.VectorIndexSpec) vectorstore.VectorIndex {
	out := vectorstore.VectorIndex{Type: string(vi.Type), Distance: vi.Distance}
	if vi.Type != "flat" {
		out.EfConstruction, out.MaxConnections, out.Ef = int(vi.EfConstruction), int(vi.MaxConnections), int(vi.Ef)
	}
	return out
}

// loadModel loads the embedding model.
func loadModel(dir string, o embedder.Options) (*embedder.Model, error) {
	if dir == "" {
		return nil, fmt.Errorf("plan has no model folder")
	}
	return embedder.Load(dir, o)
}
