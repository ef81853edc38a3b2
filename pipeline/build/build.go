// Package build runs one shard of an Index build plan (the `ragops embed` worker): it reads
// the shard's documents, chunks them with docchunk, embeds the chunks naively or with late
// chunking and writes them into the revision's Weaviate collection. With an incremental plan
// it syncs an existing collection: unchanged documents are left alone, changed ones replaced,
// removed ones deleted, and documents that fail to read keep their previous chunks.
package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/ragops/ragops/access"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/docmeta"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/pipeline/progress"
	"github.com/ragops/ragops/pipeline/stage"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/pdf"
	"github.com/ragops/ragops/serving/specs"
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
	// read any document: the shard fails. With a plan's ExtractionCache, Readers runs only
	// for the documents the cache does not hold.
	Readers corpus.DocumentReader

	// beforeSync, set by tests, runs between planning the shard (its listing) and syncing
	// its documents.
	beforeSync func()
	// opened, set by tests, receives the store once it is open.
	opened func(*vectorstore.Store)
	// stageWait, set by tests, bounds a shard's wait for shard 0's stage of an HTTP source.
	stageWait time.Duration
	// migrating, set by tests, runs in a migration (readStates) between the walk of the
	// collection and the write of the records it found.
	migrating func()
}

// ReadersError is a document reader that could not start (PDFium failed to load, say): no
// document can be read, so Run fails the shard instead of counting every document as
// unreadable (which, in an incremental sync, would look like a corpus of unreadable files).
type ReadersError struct{ Err error }

func (e *ReadersError) Error() string { return "document readers did not start: " + e.Err.Error() }
func (e *ReadersError) Unwrap() error { return e.Err }

// lazyReaders starts the format readers only when a file needs them (formats.Lazy); a start
// that fails is a *ReadersError.
type lazyReaders struct{ formats.Lazy }

// NewReaders returns the document readers a build reads src's documents with (formats
// started on the first document: PDF with a PDFium cache in the temp folder, OCR as src.OCR
// says, src.MaxDocumentBytes); a reader that cannot start fails with *ReadersError. Close it
// when done.
func NewReaders(src plan.Source) interface {
	corpus.DocumentReader
	Close() error
} {
	return &lazyReaders{formats.Lazy{Options: formats.Options{MaxBytes: int(src.MaxDocumentBytes),
		PDF: pdf.Options{CacheDir: filepath.Join(os.TempDir(), "pdfium-cache")}, OCR: ocrOptions(src.OCR)}}}
}

func (l *lazyReaders) Read(ctx context.Context, data []byte) (reader.Document, error) {
	if err := l.Start(ctx); err != nil {
		return reader.Document{}, &ReadersError{Err: err}
	}
	return l.Lazy.Read(ctx, data)
}

// ReadAt reads a document from a file as formats.Lazy.ReadAt does (a PDF without a copy of
// it in memory); a start that fails is a *ReadersError.
func (l *lazyReaders) ReadAt(ctx context.Context, r io.ReaderAt, size int64) (reader.Document, error) {
	if err := l.Start(ctx); err != nil {
		return reader.Document{}, &ReadersError{Err: err}
	}
	return l.Lazy.ReadAt(ctx, r, size)
}

// Run runs one shard of a build plan and returns its figures (the pod's termination message).
// It runs the shard's steps in order: open (model, chunker, store, collection), plan the
// shard (its documents and what the collection already holds of them), sync each document,
// remove what the corpus no longer has, collect the extraction cache (shard 0), and count.
//
// What a document costs is decided from its raw bytes before any reader runs: in a sync a
// document whose raw hash the collection holds (complete) is neither extracted, chunked nor
// embedded; every other document is taken from the plan's extraction cache when it holds the
// same bytes read with the same reader settings, and extracted (PDFium, OCR) and stored there
// otherwise. Result.Reads and Result.OCR count what ran.
//
// Documents that fail to read, are too large or fail to chunk are counted in Skipped by
// reason; in an incremental sync, those that had chunks keep them and are also counted in
// Kept (a document that cannot be read now is not a removed document). A container file (a
// BEIR corpus.jsonl) that cannot be opened or changed while it was read is one Skipped
// entry; since the collection does not record which file held which document, the sync then
// deletes none of the shard's documents it did not see, and counts them in Kept (the
// deletions wait for a sync that reads every container). Errors: the model,
// Weaviate or the corpus source fail, or the readers cannot start (*ReadersError).
func Run(ctx context.Context, log *slog.Logger, p plan.Build, o Options) (res plan.BuildResult, err error) {
	b := &shardBuild{log: log, p: p, o: o, start: time.Now(), res: plan.BuildResult{Shard: o.Shard, Skipped: map[string]int64{}},
		seen: map[string]bool{}, emptied: map[string]bool{}, wrote: map[string]bool{}}
	ctx, span := startShard(ctx, p, o.Shard)
	defer func() { endShard(span, res, err) }()
	defer b.close()
	for _, step := range []func(context.Context) error{traced("build.open", b.open), traced("build.plan", b.planShard),
		traced("build.sync", b.syncDocuments), traced("build.regroup", b.regroupAccess), traced("build.removeStale", b.removeStale),
		traced("build.collectCache", b.collectCache)} {
		if err := step(ctx); err != nil {
			return b.res, err
		}
	}
	return b.finish(), nil
}

// shardBuild is the state of one Run: what open and planShard set up, and what the
// per-document sync has seen and written.
type shardBuild struct {
	log   *slog.Logger
	p     plan.Build
	o     Options
	start time.Time
	res   plan.BuildResult

	// Set by open.
	model   *embedder.Model
	mode    embedder.Mode
	chunker chunkers.Chunker
	store   *vectorstore.Store
	closers []func()
	// fields are the Corpus's metadata field declarations (nil: none).
	fields *docmeta.Fields

	// Set by planShard.
	src *corpus.Source
	// readers extract documents through the extraction cache and count what they did.
	readers  *extractcache.Reader
	planTime time.Duration
	mine     func(id string) bool
	// states is what the collection already holds of this shard's documents, as the
	// revision's manifest records it (records); existing their hashes in an incremental
	// sync (nil in a build).
	states   map[string]vectorstore.DocumentState
	records  map[string]vectorstore.ManifestRecord
	existing map[string]string
	// metaHashes are the metadata hashes the collection holds (with fields declared);
	// metaNow caches the documents' current ones.
	metaHashes, metaNow map[string]string
	// metaUpdates are documents whose properties wait for the next flush, without embedding.
	metaUpdates map[string]vectorstore.DocumentProperties
	// cachedFields are the reader's fields of unread documents, from the extraction cache
	// (nil: the cache missed); see readerFields.
	cachedFields map[string]map[string]any
	prog         *progress.Logger
	// accessKey is access.Key(plan.Access), stored on every chunk written.
	accessKey string
	// regroup are unchanged documents whose chunks hold another access key.
	regroup []vectorstore.DocumentAccess

	seen    map[string]bool // incremental: documents still in the corpus
	emptied map[string]bool // read, with no text: their chunks go
	wrote   map[string]bool // full build: documents with chunks, written or resumed
	// pending documents wait for the next flush, with their chunks.
	pending       []corpus.Document
	pendingChunks [][]chunkers.Chunk
	done          int64
	// shardChunks counts the chunks of this shard's documents the collection holds at the end.
	shardChunks int64
	// unreadContainers are the container files not read whole: unseen documents are kept.
	unreadContainers []string
	// relisted are manifest records to write again with the S3 listing identity they lacked.
	relisted []vectorstore.ManifestRecord
	// readTime, chunkTime and writeTime sum the stages Run times itself (the embedder times
	// tokenizing and inference); visited is when the corpus walk last handed over control.
	readTime, chunkTime, writeTime time.Duration
	visited                        time.Time
}

func (b *shardBuild) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// open checks the plan against the model, loads the model, builds the chunker and opens the
// store and the revision's collection.
func (b *shardBuild) open(ctx context.Context) error {
	p, o := &b.p, b.o
	if p.Shards < 1 {
		p.Shards = 1
	}
	if o.Shard >= p.Shards {
		return fmt.Errorf("shard %d is outside the plan's %d shards", o.Shard, p.Shards)
	}
	if err := checkModelLimits(*p); err != nil {
		return err
	}
	hash, err := checkModelHash(*p)
	if err != nil {
		return err
	}
	b.res.ModelHash = hash
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
		return err
	}
	b.model = model
	b.closers = append(b.closers, func() { model.Close() })
	b.log.Info("model loaded", "dir", p.ModelDir, "provider", model.Provider(), "precision", mopts.Precision, "dimension", model.Dimension(), "late", late)

	if b.chunker, err = registry.New(p.Strategy, model.Tokenizer(), model); err != nil {
		return fmt.Errorf("strategy: %w", err)
	}
	b.mode = embedder.Naive
	if late {
		b.mode = embedder.Late
	}
	cfg, err := vectorstore.EndpointConfig(p.Weaviate.URL, p.Weaviate.GRPCAddress, os.Getenv(plan.EnvWeaviateAPIKey))
	if err != nil {
		return err
	}
	if cfg.CABundle, err = vectorstore.ReadCAFile(os.Getenv(vectorstore.EnvCAFile)); err != nil {
		return err
	}
	cfg.Outage = outagePolicy(b.log, o.OutageWait)
	cfg.WriteConsistency = string(p.Weaviate.Consistency)
	if b.store, err = vectorstore.New(cfg); err != nil {
		return err
	}
	if o.opened != nil {
		o.opened(b.store)
	}
	spec := vectorstore.CollectionSpec{Name: p.Collection, Revision: p.Revision, Dimensions: model.Dimension(),
		Index: vectorIndex(p.VectorIndex)}
	p.ApplyLayout(&spec)
	if p.ModelServer != "" {
		spec.Vectorizer = vectorstore.Transformers{PassageURL: specs.PassageURL(p.ModelServer), QueryURL: specs.QueryURL(p.ModelServer),
			Pooling: vectorstore.TransformersPooling(string(model.Config().Pooling))}
	}
	if info, err := b.store.Collection(ctx, p.Collection); err == nil {
		// A resumed build or a sync keeps the collection's wiring (Weaviate refuses to change it).
		spec.Vectorizer = info.Vectorizer
	}
	if err := b.store.EnsureCollection(ctx, spec); err != nil {
		return err
	}
	b.accessKey = access.Key(p.Access)
	if info, err := b.store.Collection(ctx, p.Collection); err != nil {
		return err
	} else if p.Access != nil && !info.AccessProperties {
		return &vectorstore.AccessPropertiesError{Collection: p.Collection}
	}
	if b.fields, err = docmeta.Compile(p.Source.Metadata); err != nil {
		return err
	}
	return b.store.EnsureProperties(ctx, p.Collection, b.fields.Properties())
}

// planShard opens the corpus and counts the shard's documents, and reads what the collection
// already holds of them: a sync compares it with the corpus; a build (first run, Job retry
// or rebuilt revision) resumes from it.
func (b *shardBuild) planShard(ctx context.Context) error {
	p, o := &b.p, b.o
	planStart := time.Now()
	defer func() { b.planTime = time.Since(planStart) }()
	readers := o.Readers
	if readers == nil {
		lazy := NewReaders(p.Source)
		b.closers = append(b.closers, func() { _ = lazy.Close() })
		readers = lazy
	}
	var cache extractcache.Store
	if p.ExtractionCache != "" {
		cache = extractcache.Weaviate(b.store, p.ExtractionCache)
	}
	b.readers = extractcache.NewReader(readers, cache, ReaderSettings(p.Source), b.log)
	b.mine = func(id string) bool { return corpus.Shard(id, o.Shard, p.Shards) }
	if err := b.readStates(ctx); err != nil {
		return err
	}
	// Each shard fetches only its own documents of an S3 source, except the shard that
	// collects the extraction cache: it hashes the whole listing (collectCache), knowing the
	// other shards' objects by their manifest records where it can (knownObjects).
	fetch := corpus.OpenOptions{Keep: b.mine}
	if b.collects() {
		fetch.Keep = nil
	}
	if p.Incremental || b.collects() {
		fetch.Unchanged = b.knownObjects
	}
	if st := b.httpStage(); st != nil {
		fetch.HTTP = st.Fetch
	}
	if p.Source.Git != nil && cache != nil {
		// A shard learns its unchanged Git documents' hashes without their blobs.
		fetch.GitIndex = gitIndex{store: cache, log: b.log}
	}
	src, err := corpus.OpenWith(ctx, p.Source, os.TempDir(), b.readers, fetch)
	if err != nil {
		return err
	}
	b.src = src
	if p.Sample != nil {
		sample, err := loadSample(ctx, p.Sample)
		if err != nil {
			return err
		}
		shard := b.mine
		if err := src.Walk(ctx, true, shard, func(d corpus.Document) error {
			if !sample.Keep(d.ID) {
				b.res.SampledOut++
			}
			return nil
		}, func(corpus.Skipped) {}); err != nil {
			return err
		}
		b.mine = func(id string) bool { return shard(id) && sample.Keep(id) }
		b.log.Info("sampled build: the judged documents and a fraction of the others", "fraction", sample.Fraction,
			"seed", sample.Seed, "judged", len(sample.Judged), "sampledOut", b.res.SampledOut)
		for id := range b.states {
			if !b.mine(id) {
				delete(b.states, id)
			}
		}
	}
	b.metaNow, b.metaUpdates, b.cachedFields = map[string]string{}, map[string]vectorstore.DocumentProperties{}, map[string]map[string]any{}
	// The metadata hashes the collection holds come with the manifest records (written
	// with them, and by a migration's walk), not from another walk of the chunks.
	b.metaHashes = make(map[string]string, len(b.records))
	for id, r := range b.records {
		if b.mine(id) {
			b.metaHashes[id] = r.MetaHash
		}
	}
	if p.Incremental {
		b.existing = make(map[string]string, len(b.states))
		for id, st := range b.states {
			b.existing[id] = st.Hash
		}
	}
	var total int64
	if err := src.Walk(ctx, true, b.mine, func(corpus.Document) error { total++; return nil }, func(corpus.Skipped) {}); err != nil {
		return err
	}
	b.log.Info("shard", "shard", o.Shard, "shards", p.Shards, "documents", total, "incremental", p.Incremental, "existing", len(b.states))
	b.prog = progress.New(b.log, "embedding", total, o.ProgressEvery)
	return nil
}

// readStates reads what the collection holds of this shard's documents from the revision's
// manifest (vectorstore.Store.ManifestRecords): one record per document of the shard, never
// the chunk collection, so a sync's state read is proportional to the shard's documents, not
// to the collection's chunks. Records stamped under another shard count (the Index's shards
// changed) are stamped again with this shard.
//
// Migration: a revision built before manifests existed, or whose manifest the completeness
// check dropped after it disagreed with the collection, has no manifest covering it. Then
// the shard walks the chunk collection once as every sync used to (DocumentStates, every
// chunk), writes the records of its own documents only, and marks its shard migrated
// (vectorstore.Store.MarkManifestShard; the last shard marked marks the whole manifest).
// Only the shard that writes a document's chunks writes its record, so shards migrating at
// once cannot overwrite each other's fresh records with what their walk saw earlier, and a
// retried migration rewrites the same record objects. An empty collection (a new revision)
// is marked covered at once. The chunk count is read before the marks: a shard marks before
// it writes any chunk, so a shard that finds chunks and then no mark has an old revision to
// migrate, not another shard's fresh writes.
func (b *shardBuild) readStates(ctx context.Context) error {
	p, o := &b.p, b.o
	// Counted before the mark is read (see above): a shard that finds chunks then finds the
	// mark of the shard that wrote them.
	n, err := b.store.Count(ctx, p.Collection)
	if err != nil {
		return err
	}
	// Created, or given the record properties an older ragops's lacks.
	if err := b.store.EnsureManifest(ctx, p.Collection); err != nil {
		return err
	}
	covers, err := b.store.ManifestCoversShard(ctx, p.Collection, o.Shard, p.Shards)
	if err != nil {
		return err
	}
	if covers {
		read, err := b.store.ManifestRecords(ctx, p.Collection, o.Shard, p.Shards, 0, b.mine)
		if err != nil {
			return err
		}
		b.records = read.Records
		for i := range read.Restamp {
			read.Restamp[i].Shard, read.Restamp[i].Shards = o.Shard, p.Shards
			b.records[read.Restamp[i].DocID] = read.Restamp[i]
		}
		if err := b.putRecords(ctx, read.Restamp); err != nil {
			return err
		}
		b.states = make(map[string]vectorstore.DocumentState, len(b.records))
		for id, r := range b.records {
			b.states[id] = r.State()
		}
		b.res.ManifestReads = int64(read.Objects)
		return nil
	}
	b.states, b.records = map[string]vectorstore.DocumentState{}, map[string]vectorstore.ManifestRecord{}
	b.res.ManifestReads = int64(n)
	if n == 0 {
		return b.store.MarkManifestCovers(ctx, p.Collection)
	}
	all, err := b.store.DocumentStates(ctx, p.Collection, 0, b.mine)
	if err != nil {
		return err
	}
	var metaHashes map[string]string
	if b.fields != nil { // the collection has PropMetaHash (EnsureProperties, in open)
		if metaHashes, err = b.store.DocumentMetaHashes(ctx, p.Collection, 0, b.mine); err != nil {
			return err
		}
	}
	if o.migrating != nil {
		o.migrating()
	}
	recs := make([]vectorstore.ManifestRecord, 0, len(all))
	for id, st := range all {
		r := migratedRecord(id, st, metaHashes[id], o.Shard, p.Shards)
		b.states[id], b.records[id] = st, r
		recs = append(recs, r)
	}
	if err := b.putRecords(ctx, recs); err != nil {
		return err
	}
	whole, err := b.store.MarkManifestShard(ctx, p.Collection, o.Shard, p.Shards)
	if err != nil {
		return err
	}
	b.log.Info("manifest of the shard's documents written from the collection (a revision without one)",
		"documents", len(all), "chunks", n, "manifestCovers", whole)
	return nil
}

// manifestBatch is how many manifest records one write carries.
const manifestBatch = 500

// migratedRecord is the manifest record of a document found by walking the chunk collection
// (a migration; see readStates): complete when its chunks agree, with the metadata hash and
// access key they hold ("" for an access key they disagree on: regrouped at the next sync).
func migratedRecord(id string, st vectorstore.DocumentState, metaHash string, shard, shards int) vectorstore.ManifestRecord {
	r := vectorstore.ManifestRecord{DocID: id, Hash: st.Hash, Chunks: st.Chunks, Complete: st.Consistent(),
		Shard: shard, Shards: shards, MetaHash: metaHash}
	if !st.AccessMixed {
		r.AccessKey = st.AccessKey
	}
	return r
}

// updateRecords rewrites the manifest records of documents whose chunks' properties (meta
// hash) or groups (access key) were just rewritten in place, so the next sync sees them as
// they are now.
func (b *shardBuild) updateRecords(ctx context.Context, ids []string, set func(*vectorstore.ManifestRecord)) error {
	recs := make([]vectorstore.ManifestRecord, 0, len(ids))
	for _, id := range ids {
		r, ok := b.records[id]
		if !ok {
			continue
		}
		set(&r)
		r.Shard, r.Shards = b.o.Shard, b.p.Shards
		b.records[id] = r
		recs = append(recs, r)
	}
	return b.putRecords(ctx, recs)
}

// skipsBytes reports whether a sync's shard 0 may leave the bytes of a document with
// complete record r unstaged when its HTTP listing shows them unchanged (httpStage): not when
// its chunks hold other access groups (regrouping reads its metadata), nor when a declared
// field reads the format reader's fields (a metadata-only change then reads the document,
// and a walk cannot fetch an unstaged one later). Those are staged.
func (b *shardBuild) skipsBytes(r vectorstore.ManifestRecord) bool {
	return r.AccessKey == b.accessKey && !b.fields.NeedsReader()
}

// putRecords writes manifest records, manifestBatch a request.
func (b *shardBuild) putRecords(ctx context.Context, recs []vectorstore.ManifestRecord) error {
	for lo := 0; lo < len(recs); lo += manifestBatch {
		if err := b.store.PutManifest(ctx, b.p.Collection, recs[lo:min(lo+manifestBatch, len(recs))]); err != nil {
			return err
		}
	}
	return nil
}

// shardOf is the shard of n that document id belongs to (corpus.Shard).
func shardOf(id string, n int) int {
	for i := range n {
		if corpus.Shard(id, i, n) {
			return i
		}
	}
	return 0
}

// syncDocuments walks the shard's documents: each is left alone (unchanged in a sync),
// resumed (written whole by an earlier run), skipped with a reason, or chunked and queued
// for the next flush. A reader that cannot start stops the walk (*ReadersError).
func (b *shardBuild) syncDocuments(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fatal error
	if b.o.beforeSync != nil {
		b.o.beforeSync()
	}
	// Reading is the walk's time outside its callbacks.
	b.visited = time.Now()
	need := func(d corpus.Document) bool {
		// A metadata-only change reads the document only for the reader's fields, and only
		// when the extraction cache does not hold them.
		return !b.rawUnchanged(d) || !b.metaSame(d) && b.fields.NeedsReader() && !b.readerFields(ctx, d)
	}
	err := b.src.WalkChanged(wctx, b.mine, need, func(d corpus.Document) error {
		b.readTime += time.Since(b.visited)
		defer func() { b.visited = time.Now() }()
		if d.Read {
			readSpan(ctx, b.visited, d.ID, d.Size, "")
		}
		return b.document(ctx, d)
	}, func(sk corpus.Skipped) {
		b.readTime += time.Since(b.visited)
		defer func() { b.visited = time.Now() }()
		var re *ReadersError
		if errors.As(sk.Err, &re) {
			if fatal == nil {
				fatal = re
			}
			cancel()
			return
		}
		readSpan(ctx, b.visited, sk.ID, 0, sk.Reason)
		b.skipped(sk)
	})
	b.readTime += time.Since(b.visited)
	if fatal != nil {
		return fatal
	}
	if err != nil {
		return err
	}
	if err := b.flushMetadata(ctx); err != nil {
		return err
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return b.putRecords(ctx, b.relisted)
}

// relist queues the manifest record of an S3 document found complete whose listing identity
// or raw SHA-256 the record lacks (a record migrated from the collection, or written before
// the object was listed so): written after the walk, it lets the next sync skip the
// download, and find the document's extraction without it.
func (b *shardBuild) relist(d corpus.Document) {
	r, ok := b.records[d.ID]
	if !ok || !r.Complete || d.Listing == "" || r.Listing == d.Listing && (d.SHA256 == "" || r.Sum == d.SHA256) {
		return
	}
	r.Listing, r.Shard, r.Shards = d.Listing, b.o.Shard, b.p.Shards
	if d.SHA256 != "" {
		r.Sum = d.SHA256
	}
	b.relisted = append(b.relisted, r)
}

// knownObjects returns the raw hashes of the S3 objects of listings (ID -> listing identity)
// known unchanged without a download (corpus.OpenOptions.Unchanged). A sync's own object is
// known by its complete manifest record at that identity, unless its chunks hold other
// access groups (regrouping reads its metadata); one whose metadata changed while a field
// reads the reader's then takes them from the extraction cache (readerFields) and is
// downloaded only when the cache misses. Another shard's object, which the shard collecting
// the extraction cache only hashes, is known by its complete record at that identity, read
// for this batch of the listing only (vectorstore.Store.ManifestRecordsOf).
func (b *shardBuild) knownObjects(ctx context.Context, listings map[string]string) map[string]string {
	known := func(r vectorstore.ManifestRecord, listing string) bool {
		return r.Complete && r.Listing != "" && r.Listing == listing
	}
	out := map[string]string{}
	var others []string
	for id, listing := range listings {
		if !b.mine(id) {
			others = append(others, id)
		} else if r, ok := b.records[id]; b.p.Incremental && ok && known(r, listing) && r.AccessKey == b.accessKey {
			out[id] = r.Hash
		}
	}
	if len(others) == 0 {
		return out
	}
	recs, err := b.store.ManifestRecordsOf(ctx, b.p.Collection, others)
	if err != nil {
		b.log.Warn("S3 source: the other shards' manifest records could not be read; downloading their objects", "objects", len(others), "error", err)
		return out
	}
	for _, id := range others {
		if r, ok := recs[id]; ok && known(r, listings[id]) {
			out[id] = r.Hash
		}
	}
	return out
}

// readerFields reports whether the reader's fields of document d, which a sync holds
// unchanged and did not read, are known without reading it: taken from the extraction cache
// by the raw SHA-256 its manifest record holds (a verified entry of the same bytes and
// reader settings), once per document, for metaInputs.
func (b *shardBuild) readerFields(ctx context.Context, d corpus.Document) bool {
	if m, ok := b.cachedFields[d.ID]; ok {
		return m != nil
	}
	var fields map[string]any
	if r := b.records[d.ID]; r.Sum != "" && r.Hash == d.Hash {
		if doc, ok := b.readers.Cached(ctx, r.Sum); ok {
			fields = doc.Metadata
			if fields == nil {
				fields = map[string]any{}
			}
		}
	}
	b.cachedFields[d.ID] = fields
	return fields != nil
}

// flushMetadata rewrites the properties of the documents whose metadata alone changed.
func (b *shardBuild) flushMetadata(ctx context.Context) error {
	if len(b.metaUpdates) == 0 {
		return nil
	}
	writeStart := time.Now()
	defer func() { b.writeTime += time.Since(writeStart) }()
	if err := b.store.UpdateProperties(ctx, b.p.Collection, b.fields.Names(), b.metaUpdates); err != nil {
		return err
	}
	ids := make([]string, 0, len(b.metaUpdates))
	for id := range b.metaUpdates {
		ids = append(ids, id)
	}
	if err := b.updateRecords(ctx, ids, func(r *vectorstore.ManifestRecord) { r.MetaHash = b.metaUpdates[r.DocID].MetaHash }); err != nil {
		return err
	}
	clear(b.metaUpdates)
	return nil
}

// rawUnchanged reports whether a sync holds document d's bytes as they are now: its chunks
// agree on d's raw hash and are contiguous. Such a document is not embedded, and not read
// (see corpus.Source.WalkChanged) unless its metadata changed and a field reads the reader's.
func (b *shardBuild) rawUnchanged(d corpus.Document) bool {
	st, had := b.states[d.ID]
	return b.p.Incremental && had && st.Consistent() && st.Hash == d.Hash && st.HasAccess(b.accessKey)
}

// groups returns the access groups of a read document (its source path and metadata).
func (b *shardBuild) groups(d corpus.Document) []string {
	p, _ := d.Doc.Metadata[corpus.MetaSourcePath].(string)
	if p == "" {
		p = d.ID
	}
	return access.Groups(b.p.Access, p, d.Doc.Metadata)
}

// metaSame reports whether the collection holds document d's metadata hash as it is now
// (always, with no fields declared).
func (b *shardBuild) metaSame(d corpus.Document) bool {
	return b.fields == nil || b.metaHashes[d.ID] == b.metaHash(d)
}

// metaHash is document d's current metadata hash (docmeta.Fields.Hash), computed once.
func (b *shardBuild) metaHash(d corpus.Document) string {
	if h, ok := b.metaNow[d.ID]; ok {
		return h
	}
	in := b.metaInputs(d)
	in.Fields = b.src.SourceFields(d.ID) // what an unread document has too
	h := b.fields.Hash(in)
	b.metaNow[d.ID] = h
	return h
}

// metaInputs are what document d's metadata fields are taken from: the reader's and source's
// fields (the source's only when d was not read), its path and its sidecar.
func (b *shardBuild) metaInputs(d corpus.Document) docmeta.Inputs {
	in := docmeta.Inputs{Path: d.ID, Fields: d.Doc.Metadata}
	if !d.Read {
		in.Fields = b.src.SourceFields(d.ID)
		if cached := b.cachedFields[d.ID]; cached != nil {
			// As a read document's: the reader's fields, the source's over them.
			m := maps.Clone(cached)
			maps.Copy(m, in.Fields)
			in.Fields = m
		}
	}
	if b.fields.SidecarSuffix() != "" {
		side, err := b.src.Sidecar(d.ID)
		if err != nil {
			b.log.Warn("sidecar unreadable: its fields are unset", "document", d.ID, "error", err)
		}
		in.Sidecar = side
	}
	return in
}

// maxInvalidMetadataKeys bounds the distinct "<field>/<reason>" keys a shard reports (the
// result is a termination message of at most 4096 bytes); further fields count under
// otherFields.
const (
	maxInvalidMetadataKeys = 16
	otherFields            = "(other fields)"
)

// properties returns document d's metadata properties, counting the fields that did not parse.
func (b *shardBuild) properties(d corpus.Document) map[string]any {
	props, fails := b.fields.Values(b.metaInputs(d))
	for _, f := range fails {
		if b.res.InvalidMetadata == nil {
			b.res.InvalidMetadata = map[string]int64{}
		}
		key := f.Field + "/" + f.Reason
		if _, ok := b.res.InvalidMetadata[key]; !ok && len(b.res.InvalidMetadata) >= maxInvalidMetadataKeys {
			key = otherFields + "/" + f.Reason
		}
		b.res.InvalidMetadata[key]++
		b.log.Warn("metadata field left unset", "document", d.ID, "field", f.Field, "reason", f.Reason, "value", f.Value)
	}
	return props
}

// document syncs one document of the walk (see syncDocuments): unchanged ones unread.
func (b *shardBuild) document(ctx context.Context, d corpus.Document) error {
	res := &b.res
	b.seen[d.ID] = true
	if b.rawUnchanged(d) {
		chunks := b.states[d.ID].Chunks
		b.shardChunks += int64(chunks)
		b.relist(d)
		if b.metaSame(d) {
			res.Unchanged++
			return nil
		}
		// Only the metadata changed: the chunks' properties are rewritten, nothing embedded.
		res.MetadataUpdated++
		b.done++
		b.metaUpdates[d.ID] = vectorstore.DocumentProperties{Chunks: chunks, Properties: b.properties(d), MetaHash: b.metaHash(d)}
		delete(b.cachedFields, d.ID)
		if len(b.metaUpdates) >= embedBatchDocuments*4 {
			return b.flushMetadata(ctx)
		}
		return nil
	}
	if !d.Read {
		return fmt.Errorf("document %s: not read although it changed", d.ID)
	}
	p := &b.p
	if st, had := b.states[d.ID]; p.Incremental && had && st.Consistent() && st.Hash == d.Hash {
		// Same content under other access rules: new groups, no embedding (regroupAccess).
		b.regroup = append(b.regroup, vectorstore.DocumentAccess{DocID: d.ID, Groups: b.groups(d), Chunks: st.Chunks})
		b.shardChunks += int64(st.Chunks)
		return nil
	}
	chunkStart := time.Now()
	chunks, err := b.chunk(ctx, d)
	b.chunkTime += time.Since(chunkStart)
	if err != nil {
		res.Skipped["ChunkingFailed"]++
		if _, had := b.existing[d.ID]; had {
			res.Kept++
			b.shardChunks += int64(b.states[d.ID].Chunks)
		}
		b.log.Warn("document skipped", "document", d.ID, "reason", "ChunkingFailed", "error", err)
		return nil
	}
	if len(chunks) == 0 {
		// Its earlier chunks (if any) go, as a clean build would have none.
		delete(b.seen, d.ID)
		b.emptied[d.ID] = true
		res.Skipped[string(reader.Empty)]++
		b.log.Warn("document skipped", "document", d.ID, "reason", reader.Empty)
		return nil
	}
	if st, had := b.states[d.ID]; !p.Incremental && had && st.Complete(d.Hash, len(chunks)) && b.metaSame(d) {
		// Written whole by an earlier run of this revision: not embedded again.
		res.Resumed++
		res.ResumedTokens += b.model.DocumentTokens([]embedder.Document{{Text: d.Doc.Text, Chunks: chunks}}, b.mode)
		res.Documents++
		res.Chunks += int64(len(chunks))
		for _, c := range chunks {
			res.StoredBytes += int64(len(c.Text(d.Doc.Text)) + 4*b.model.Dimension())
		}
		b.wrote[d.ID] = true
		b.done++
		if !st.HasAccess(b.accessKey) {
			b.regroup = append(b.regroup, vectorstore.DocumentAccess{DocID: d.ID, Groups: b.groups(d), Chunks: st.Chunks})
		}
		b.relist(d)
		return nil
	}
	b.pending = append(b.pending, d)
	b.pendingChunks = append(b.pendingChunks, chunks)
	if len(b.pending) >= embedBatchDocuments {
		return b.flush(ctx)
	}
	return nil
}

// skipped counts a document that could not be read; in a sync its previous chunks stay.
func (b *shardBuild) skipped(sk corpus.Skipped) {
	b.res.Skipped[sk.Reason]++
	if sk.Container {
		b.unreadContainers = append(b.unreadContainers, sk.ID)
	}
	if _, had := b.existing[sk.ID]; had {
		// Its previous chunks stay: the document is still in the corpus.
		b.seen[sk.ID] = true
		b.res.Kept++
		b.shardChunks += int64(b.states[sk.ID].Chunks)
	}
	b.log.Warn("document skipped", "document", sk.ID, "reason", sk.Reason, "error", sk.Err, "keptPreviousChunks", b.seen[sk.ID])
}

// flush embeds the pending documents together and writes their chunks: new documents in one
// upsert, the documents the collection already had (or all in a sync) replaced whole
// together (vectorstore.Store.ReplaceDocuments: one upsert, one batched delete).
func (b *shardBuild) flush(ctx context.Context) (err error) {
	if len(b.pending) == 0 {
		return nil
	}
	p, res := &b.p, &b.res
	docs := make([]embedder.Document, len(b.pending))
	for i, d := range b.pending {
		docs[i] = embedder.Document{Text: d.Doc.Text, Chunks: b.pendingChunks[i]}
	}
	vecs, err := b.embed(ctx, docs)
	if err != nil {
		return err
	}
	var batch []vectorstore.Chunk
	replace := map[string][]vectorstore.Chunk{}
	writeStart := time.Now()
	defer func() { b.writeTime += time.Since(writeStart) }()
	ctx, endWrite := b.writeSpan(ctx, len(docs))
	defer func() { endWrite(err) }()
	// The documents' manifest records go in incomplete before their chunks and complete after
	// them: a shard stopped in between leaves records that make the next run write them again
	// whole (replacing any partial chunks, whose IDs are deterministic: no duplicate).
	recs := make([]vectorstore.ManifestRecord, len(b.pending))
	for i, d := range b.pending {
		recs[i] = vectorstore.ManifestRecord{DocID: d.ID, Hash: d.Hash, Chunks: len(b.pendingChunks[i]), Listing: d.Listing,
			Shard: b.o.Shard, Shards: p.Shards, AccessKey: b.accessKey, Sum: d.SHA256}
		if b.fields != nil {
			recs[i].MetaHash = b.metaHash(d)
		}
	}
	if err := b.putRecords(ctx, recs); err != nil {
		return err
	}
	for i, d := range b.pending {
		var objs []vectorstore.Chunk
		var props map[string]any
		var metaHash string
		if b.fields != nil {
			props, metaHash = b.properties(d), b.metaHash(d)
		}
		var groups []string
		if b.accessKey != "" {
			groups = b.groups(d)
		}
		for j, c := range b.pendingChunks[i] {
			first, last, _ := d.Doc.PageRange(c.Start, c.End)
			objs = append(objs, vectorstore.Chunk{
				DocID: d.ID, Ordinal: c.Ordinal, Start: c.Start, End: c.End, Text: c.Text(d.Doc.Text),
				HeadingPath: c.HeadingPath, PageStart: first, PageEnd: last, DocHash: d.Hash, Vector: vecs[i][j],
				Properties: props, MetaHash: metaHash,
				AccessGroups: groups, AccessKey: b.accessKey,
			})
			res.StoredBytes += int64(len(objs[j].Text) + 4*len(vecs[i][j]))
		}
		res.Chunks += int64(len(objs))
		b.wrote[d.ID] = true
		if _, had := b.states[d.ID]; p.Incremental || had {
			// A partial (or outdated) set of chunks is rewritten whole.
			replace[d.ID] = objs
			continue
		}
		batch = append(batch, objs...)
	}
	if len(replace) > 0 {
		// One upsert and one stale-chunk delete for the flush, not two requests a document.
		if err := b.store.ReplaceDocuments(ctx, p.Collection, replace); err != nil {
			return err
		}
	}
	if len(batch) > 0 {
		if err := b.store.Upsert(ctx, p.Collection, batch); err != nil {
			return err
		}
	}
	for i := range recs {
		recs[i].Complete = true
		b.records[recs[i].DocID] = recs[i]
	}
	if err := b.putRecords(ctx, recs); err != nil {
		return err
	}
	b.done += int64(len(b.pending))
	res.Documents += int64(len(b.pending))
	b.pending, b.pendingChunks = b.pending[:0], b.pendingChunks[:0]
	b.prog.Tick(b.done+res.Unchanged, false, "chunks", res.Chunks)
	return nil
}

// regroupAccess writes the new access groups onto the chunks of the documents whose content
// was unchanged but whose chunks held another access key (vectorstore.Store.SetAccess: read
// with their vectors, written back; nothing embedded), and counts them in Regrouped.
func (b *shardBuild) regroupAccess(ctx context.Context) error {
	if len(b.regroup) == 0 {
		return nil
	}
	writeStart := time.Now()
	defer func() { b.writeTime += time.Since(writeStart) }()
	if _, err := b.store.SetAccess(ctx, b.p.Collection, b.accessKey, b.regroup); err != nil {
		return err
	}
	ids := make([]string, len(b.regroup))
	for i, d := range b.regroup {
		ids[i] = d.DocID
	}
	if err := b.updateRecords(ctx, ids, func(r *vectorstore.ManifestRecord) { r.AccessKey = b.accessKey }); err != nil {
		return err
	}
	b.res.Regrouped += int64(len(b.regroup))
	b.log.Info("access rules changed: documents regrouped without embedding", "documents", len(b.regroup))
	return nil
}

// removeStale deletes the documents of this shard that are no longer in the corpus (a sync),
// or that an earlier run of this revision wrote but this one did not (a rebuild on a newer
// corpus revision): the collection ends as a clean build of the corpus would leave it. In a
// sync that could not read a container whole, an unseen document may be one of its records:
// all of them stay.
func (b *shardBuild) removeStale(ctx context.Context) error {
	p, res := &b.p, &b.res
	var keptUnseen int64
	var stale []string
	for id, st := range b.states {
		if p.Incremental && !b.seen[id] && len(b.unreadContainers) > 0 && !b.emptied[id] {
			res.Kept++
			keptUnseen++
			b.shardChunks += int64(st.Chunks)
			continue
		}
		if (p.Incremental && !b.seen[id]) || (!p.Incremental && !b.wrote[id]) {
			stale = append(stale, id)
		}
	}
	// Batched: one filtered delete per vectorstore.DeleteBatchDocuments documents; their
	// manifest records after their chunks (a stop between leaves records the next run
	// finds stale again).
	if _, err := b.store.DeleteDocuments(ctx, p.Collection, stale); err != nil {
		return err
	}
	if err := b.store.DeleteManifestRecords(ctx, p.Collection, stale); err != nil {
		return err
	}
	res.Deleted += int64(len(stale))
	if len(b.unreadContainers) > 0 && p.Incremental {
		b.log.Warn("container files not read whole: documents not seen in this sync keep their chunks",
			"files", b.unreadContainers, "keptDocuments", keptUnseen)
	}
	return nil
}

// finish fills in the shard's totals: chunks held, tokens, truncations and time.
func (b *shardBuild) finish() plan.BuildResult {
	res := &b.res
	shardChunks := b.shardChunks + res.Chunks
	res.ShardChunks = &shardChunks
	if res.Resumed > 0 {
		b.log.Info(fmt.Sprintf("resumed: skipped %d documents already complete", res.Resumed), "resumed", res.Resumed, "embedded", res.Documents-res.Resumed)
	}
	if b.readers != nil {
		rs := b.readers.Stats()
		if rs.OCR.Pages > 0 {
			res.OCR = &ragopsv1alpha1.OCRStatus{Pages: int64(rs.OCR.Pages), SecondPass: int64(rs.OCR.SecondPass),
				LowConfidence: int64(rs.OCR.LowConfidence)}
		}
		res.Reads = &ragopsv1alpha1.DocumentReads{Extracted: rs.Extracted, Unchanged: res.Unchanged, CacheHits: rs.Hits,
			CacheMisses: rs.Misses, PlanMilliseconds: b.planTime.Milliseconds()}
		if b.src != nil {
			res.Reads.BytesFetched = b.src.BytesFetched()
		}
	}
	st := b.model.Stats()
	res.Tokens, res.TruncatedChunks = st.Tokens+res.ResumedTokens, st.TruncatedChunks
	res.Seconds = time.Since(b.start).Seconds()
	res.Stages = &plan.StageSeconds{Read: ms(b.readTime), Chunk: ms(b.chunkTime), Tokenize: ms(st.TokenizeTime),
		Inference: ms(st.InferenceTime), Write: ms(b.writeTime)}
	if len(res.Skipped) == 0 {
		res.Skipped = nil
	}
	b.prog.Tick(b.done+res.Unchanged, true, "chunks", res.Chunks, "tokens", res.Tokens, "deleted", res.Deleted, "kept", res.Kept, "resumed", res.Resumed,
		"readS", res.Stages.Read, "chunkS", res.Stages.Chunk, "tokenizeS", res.Stages.Tokenize, "inferenceS", res.Stages.Inference, "writeS", res.Stages.Write)
	return *res
}

// ms rounds a duration to milliseconds, in seconds (plan.StageSeconds).
func ms(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

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

// ReaderSettings is the canonical form of the reader and OCR settings of src that change
// what the readers extract from the same bytes: the extraction cache's key covers it (with
// reader.Version and the raw bytes' SHA-256).
func ReaderSettings(src plan.Source) string {
	o := ocrOptions(src.OCR).WithDefaults()
	raw, _ := json.Marshal(struct {
		MaxBytes      int64    `json:"maxBytes"`
		Mode          ocr.Mode `json:"ocrMode"`
		Languages     []string `json:"ocrLanguages"`
		DPI           int      `json:"ocrDPI"`
		MinConfidence float64  `json:"ocrMinConfidence"`
		MaxPages      int      `json:"ocrMaxPages"`
		MaxPixels     int      `json:"ocrMaxPixels"`
	}{src.MaxDocumentBytes, o.Mode, o.Languages, o.DPI, o.MinConfidence, o.MaxPages, o.MaxPixels})
	return string(raw)
}

// collectCache deletes, in shard 0 of a run that is not sampled, the extraction cache's
// entries whose raw hash no document of the corpus listing has any more: the cache holds at
// most what the current listing holds (plus what was written since). When the cache holds
// entries, it hashes the whole listing once (the other shards hash only their own documents);
// a listing that is not whole (an unreadable file or container) collects nothing. A failure
// is logged, not the shard's: the cache only saves work.
func (b *shardBuild) collectCache(ctx context.Context) error {
	if !b.collects() {
		return nil
	}
	var live map[string]bool
	whole := true
	listed := false
	keep := func(group string) bool {
		if !listed {
			listed, live = true, map[string]bool{}
			err := b.src.Walk(ctx, true, nil, func(d corpus.Document) error { live[d.Hash] = true; return nil },
				func(sk corpus.Skipped) { whole = whole && !sk.Container && sk.Reason != "Unreadable" })
			if err != nil {
				b.log.Warn("extraction cache not collected: the corpus could not be listed", "error", err)
				whole = false
			} else if !whole {
				b.log.Warn("extraction cache not collected: the corpus was not listed whole")
			}
		}
		return !whole || live[group] || stage.IsStage(group) // a stage is collected by its own rules
	}
	n, err := extractcache.Weaviate(b.store, b.p.ExtractionCache).Collect(ctx, keep)
	if err != nil {
		b.log.Warn("extraction cache not collected", "error", err)
	}
	b.res.CacheCollected = int64(n)
	return nil
}

// collects reports whether this shard collects the extraction cache: shard 0 of a run that is
// not sampled, when the Corpus has a cache.
func (b *shardBuild) collects() bool {
	return b.p.ExtractionCache != "" && b.o.Shard == 0 && b.p.Sample == nil
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

// LoadSample resolves a plan's sample (see loadSample), for the estimate of a sampled build.
func LoadSample(ctx context.Context, s *plan.Sample) (corpus.Sample, error) {
	return loadSample(ctx, s)
}

// loadSample resolves a plan's sample: the judged documents are the corpus-id column of the
// dataset's qrels split (every one the split names, relevant or not).
//
// Errors: the dataset cannot be read (a sampled build without its judged documents would
// make its Evaluations wrong, so the shard fails instead).
func loadSample(ctx context.Context, s *plan.Sample) (corpus.Sample, error) {
	out := corpus.Sample{Fraction: s.Fraction, Seed: s.Seed, Judged: map[string]bool{}}
	if s.Judged == nil {
		return out, nil
	}
	src := evaluator.DatasetSource{Name: "judged", Dir: s.Judged.Dir}
	if h := s.Judged.HTTP; h != nil && s.Judged.Dir == "" {
		src = evaluator.DatasetSource{Name: "judged", URL: h.URL, SHA256: h.SHA256}
	}
	ds, err := evaluator.LoadDataset(ctx, src, s.Split)
	if err != nil {
		return out, fmt.Errorf("sample: judged documents: %w", err)
	}
	for _, docs := range ds.Qrels {
		for id := range docs {
			out.Judged[id] = true
		}
	}
	return out, nil
}
