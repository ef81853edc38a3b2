// Package plan is the contract between the controllers and the Jobs they start: the
// controller writes a plan as JSON into a ConfigMap mounted at Dir, the worker (ragops
// embed, evaluate or scan) reads it, and the worker's result comes back as JSON in its
// container's termination message (at most 4096 bytes).
package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Version is the plan format this build writes and reads. A plan of another version (a
// worker image older or newer than the manager) is refused instead of misread; bump it on
// any change a worker of the previous version would misread (a field renamed, a meaning
// changed). New optional fields keep the version but are refused by older workers, since
// Read rejects unknown fields.
const Version = "ragops.dev/plan/v1"

// Mount paths inside worker pods.
const (
	// Dir is where the plan ConfigMap is mounted; the plan is Dir/File.
	Dir = "/etc/ragops/plan"
	// File is the plan's key in the ConfigMap.
	File = "plan.json"
	// CorpusDir is where a PVC or ConfigMap corpus (or dataset) is mounted.
	CorpusDir = "/var/run/ragops/corpus"
	// DatasetDir is where an evaluation dataset is mounted.
	DatasetDir = "/var/run/ragops/dataset"
	// ModelDir is where the embedding model folder is mounted (or fetched).
	ModelDir = "/var/run/ragops/model"
	// RerankModelDir is where a reranker model folder is mounted.
	RerankModelDir = "/var/run/ragops/rerank-model"
	// HeadersDir holds HTTP request headers from a Secret, one file per header.
	HeadersDir = "/etc/ragops/http-headers"
	// S3IdentityDir holds the audience-bound projected ServiceAccount token of an S3 web
	// identity (file "token").
	S3IdentityDir = "/var/run/secrets/ragops.dev/s3-identity"
	// WeaviateCADir holds the Index's Weaviate CA bundle (file "ca.crt").
	WeaviateCADir = "/etc/ragops/weaviate-ca"
	// TerminationLog is where workers write their result.
	TerminationLog = "/dev/termination-log"
)

// Environment variables carrying credentials into workers (from Secret key references).
const (
	EnvWeaviateAPIKey = "WEAVIATE_API_KEY"
	EnvS3AccessKey    = "RAGOPS_S3_ACCESS_KEY"
	EnvS3SecretKey    = "RAGOPS_S3_SECRET_KEY"
	EnvGitUsername    = "RAGOPS_GIT_USERNAME"
	EnvGitPassword    = "RAGOPS_GIT_PASSWORD"
	// EnvS3WebIdentityTokenFile names the projected ServiceAccount token an S3 source with
	// identity type WebIdentity exchanges for temporary keys (S3IdentityDir/token in pods).
	EnvS3WebIdentityTokenFile = "RAGOPS_S3_WEB_IDENTITY_TOKEN_FILE"
	// EnvShard is set by Kubernetes on Indexed Job pods.
	EnvShard = "JOB_COMPLETION_INDEX"
	// EnvPlanSHA256 holds the hex SHA-256 of the plan the Job was created for; a worker whose
	// plan file hashes otherwise refuses to run (see [Read]).
	EnvPlanSHA256 = "RAGOPS_PLAN_SHA256"
	// EnvJobUID holds the UID of the worker's Job (from its pod's
	// batch.kubernetes.io/controller-uid label): the shards of an embed Job of an HTTP source
	// share one download under it (package pipeline/stage).
	EnvJobUID = "RAGOPS_JOB_UID"
	// EnvScratchBytes holds the size limit, in bytes, of the worker's scratch volume
	// (ScratchVolume at /tmp): a fetch that would exceed it fails naming the volume and limit.
	EnvScratchBytes = "RAGOPS_SCRATCH_BYTES"
)

// ScratchVolume names a worker's emptyDir mounted at /tmp, where remote sources are fetched.
const ScratchVolume = "tmp"

// Source is where a worker reads documents or a dataset. Exactly one of Dir, HTTP, S3 and
// Git is set; PVC and ConfigMap sources arrive mounted as Dir (Dir joined with the PVC path).
type Source struct {
	Dir  string                     `json:"dir,omitempty"`
	HTTP *ragopsv1alpha1.HTTPSource `json:"http,omitempty"`
	S3   *ragopsv1alpha1.S3Source   `json:"s3,omitempty"`
	Git  *ragopsv1alpha1.GitSource  `json:"git,omitempty"`
	// Format of the documents; Auto sniffs each one.
	Format ragopsv1alpha1.DocumentFormat `json:"format,omitempty"`
	// Include and Exclude are glob patterns on paths relative to the source root.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// MaxDocumentBytes skips larger documents (0: no limit).
	MaxDocumentBytes int64 `json:"maxDocumentBytes,omitempty"`
	// OCR configures text recognition of scanned pages; nil means the API defaults (Auto,
	// nld+eng, 300 DPI, minConfidence 70).
	OCR *ragopsv1alpha1.OCRSpec `json:"ocr,omitempty"`
	// Metadata declares the document fields that become chunk properties (Corpus
	// spec.metadata); nil: none.
	Metadata *ragopsv1alpha1.MetadataSpec `json:"metadata,omitempty"`
}

// SidecarSuffix is the suffix of the sidecar files of src's documents (Metadata's, default
// .meta.json) when a declared field reads one, else "": such files are no documents.
func (s Source) SidecarSuffix() string {
	m := s.Metadata
	if m == nil {
		return ""
	}
	for _, f := range m.Fields {
		if f.From.Sidecar != "" {
			if m.SidecarSuffix == "" {
				return ".meta.json"
			}
			return m.SidecarSuffix
		}
	}
	return ""
}

// Weaviate is a Weaviate endpoint; the API key, if any, is in $WEAVIATE_API_KEY.
type Weaviate struct {
	URL         string `json:"url"`
	GRPCAddress string `json:"grpcAddress,omitempty"`
	// Consistency is the consistency level of the job's requests to a replicated collection:
	// writes for a build, reads for an evaluation; empty leaves Weaviate's default.
	Consistency ragopsv1alpha1.ConsistencyLevel `json:"consistency,omitempty"`
}

// Scan asks `ragops scan` to list a corpus source.
type Scan struct {
	// Version is [Version].
	Version   string `json:"version"`
	Namespace string `json:"namespace"`
	Corpus    string `json:"corpus"`
	Source    Source `json:"source"`
	// Previous is the Corpus's last recorded scan of an HTTP source, with its validators:
	// the scan asks the server whether the archive changed since and, when it did not (and
	// was listed with the same Selection), returns these figures without downloading it.
	Previous *ScanResult `json:"previous,omitempty"`
}

// ScanResult is the termination message of a scan pod.
type ScanResult struct {
	Documents int64            `json:"documents"`
	Bytes     int64            `json:"bytes"`
	Revision  string           `json:"revision"`
	Skipped   map[string]int64 `json:"skipped,omitempty"`
	// Commit is the Git commit listed (Git sources only).
	Commit string `json:"commit,omitempty"`
	// HTTP holds the validators of the archive listed (HTTP sources whose server sent any).
	HTTP  *ragopsv1alpha1.HTTPValidator `json:"http,omitempty"`
	Error string                        `json:"error,omitempty"`
}

// Selection returns a hash (16 hex digits of SHA-256) of the settings that decide which
// documents a listing of s holds: an HTTP source's URL and checksum, the format, include and
// exclude globs and maxDocumentBytes. Two scans with the same Selection of an unchanged
// archive list the same documents.
func (s Source) Selection() string {
	var url, sum string
	if s.HTTP != nil {
		url, sum = s.HTTP.URL, s.HTTP.SHA256
	}
	raw, _ := json.Marshal([]any{url, sum, s.Format, s.Include, s.Exclude, s.MaxDocumentBytes}) // strings and numbers: no error
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:8])
}

// Build asks `ragops embed` to chunk, embed and write one shard of a corpus into a revision
// collection.
type Build struct {
	// Version is [Version].
	Version    string `json:"version"`
	Namespace  string `json:"namespace"`
	Index      string `json:"index"`
	Revision   string `json:"revision"`
	Collection string `json:"collection"`
	// Incremental syncs an existing collection: unchanged documents are skipped, changed ones
	// replaced and removed ones deleted. Unchanged is decided from each document's raw hash
	// before any reader runs, so a sync extracts (and OCRs) only the added and changed
	// documents. What a sync costs a shard: one read of its own records in the revision's
	// document manifest (one object per document of the shard, never the collection's
	// chunks; a revision without a manifest is walked once by each shard, which records its
	// own documents), then the raw bytes of its documents to hash them, except an S3 source's
	// objects whose listing identity (ETag, size) the manifest holds: those are unchanged
	// without a download. Measured (BENCHMARKS.md "At the archive's size"): a sync that
	// changes one document of 93,334 costs 16.9 CPU-seconds in its pods (about 0.14 CPU-ms
	// per unchanged document) and 18.1 in Weaviate, and a month's 1,300 changes cost 1.33x
	// building those 1,300 alone.
	Incremental bool                                `json:"incremental,omitempty"`
	Shards      int                                 `json:"shards"`
	Source      Source                              `json:"source"`
	Strategy    ragopsv1alpha1.ChunkingStrategySpec `json:"strategy"`
	ModelDir    string                              `json:"modelDir"`
	// ModelHash is the revision's recorded model folder hash (embedder.FolderHash); when set,
	// the worker refuses a folder with another hash before it writes anything.
	ModelHash   string                         `json:"modelHash,omitempty"`
	Embedder    ragopsv1alpha1.EmbedderSpec    `json:"embedder"`
	VectorIndex ragopsv1alpha1.VectorIndexSpec `json:"vectorIndex"`
	// Replication, Sharding and Compression shape the collection (Index spec fields).
	Replication *ragopsv1alpha1.ReplicationSpec `json:"replication,omitempty"`
	Sharding    *ragopsv1alpha1.ShardingSpec    `json:"sharding,omitempty"`
	Compression *ragopsv1alpha1.CompressionSpec `json:"compression,omitempty"`
	Weaviate    Weaviate                        `json:"weaviate"`
	// OutageSeconds bounds how long the worker waits out an unavailable Weaviate before the
	// shard fails (0: the worker's --weaviate-outage-wait, default 5 minutes).
	OutageSeconds int64 `json:"outageSeconds,omitempty"`
	// Sample is the Index's spec.sample: the shard builds only the sampled documents.
	Sample *Sample `json:"sample,omitempty"`
	// ExtractionCache is the Weaviate blob collection of the Corpus's extraction cache
	// (vectorstore.ExtractionCacheName; package pipeline/extractcache); empty: none, every
	// document read is extracted.
	ExtractionCache string `json:"extractionCache,omitempty"`
	// ModelServer is the base URL of the revision's model server (ragops serve): a new
	// collection is created with Weaviate's text2vec-transformers vectorizer pointing its
	// passage and query URLs there; an existing collection keeps its vectorizer. Empty: none.
	ModelServer string `json:"modelServer,omitempty"`
	// Copy, when set, fills Collection from another revision's collection instead of
	// reading, chunking and embedding the corpus (a revision that differs from a kept one
	// only in how vectors are stored); Source, Strategy and ModelDir are then unused.
	Copy *Copy `json:"copy,omitempty"`
	// Access is the Corpus's spec.access: every chunk is written with its document's groups
	// (package access) and the rules' key; a sync regroups, without embedding, the unchanged
	// documents whose chunks hold another key. Nil: no access rules.
	Access *ragopsv1alpha1.AccessSpec `json:"access,omitempty"`
}

// Copy names the collection a copy build reads (pipeline/vectorcopy).
type Copy struct {
	// Collection is the source revision's collection; Revision its revision.
	Collection string `json:"collection"`
	Revision   string `json:"revision"`
}

// Sample is a seeded subset of the corpus (ragopsv1alpha1.DocumentSample): every document
// Judged's qrels split names, plus each other one with probability Fraction.
type Sample struct {
	Fraction float64 `json:"fraction"`
	Seed     int64   `json:"seed"`
	// Judged is the dataset whose judged documents are kept (mounted as Dir at DatasetDir, or
	// fetched); nil keeps none by judgement.
	Judged *Source `json:"judged,omitempty"`
	Split  string  `json:"split,omitempty"`
}

// BuildResult is the termination message of one embedder pod.
type BuildResult struct {
	Shard     int   `json:"shard"`
	Documents int64 `json:"documents"`
	Chunks    int64 `json:"chunks"`
	// Tokens encoded for the shard's documents, special tokens included (embedder.Stats.Tokens),
	// with those of Resumed documents: a resumed shard reports what a clean run would.
	Tokens    int64 `json:"tokens"`
	Deleted   int64 `json:"deleted,omitempty"`
	Unchanged int64 `json:"unchanged,omitempty"`
	// Resumed counts documents of a full build found complete in the collection (same hash,
	// every chunk) from an earlier run of the revision and not embedded again; they are
	// included in Documents and Chunks.
	Resumed int64 `json:"resumed,omitempty"`
	// ResumedTokens are the tokens of the Resumed documents, counted by tokenizing them
	// (embedder.Model.DocumentTokens) and included in Tokens; Tokens - ResumedTokens were
	// embedded by this run.
	ResumedTokens int64 `json:"resumedTokens,omitempty"`
	// ShardChunks is the number of chunks of the shard's documents the collection holds when
	// the shard finished (full build: Chunks; sync: written, unchanged and kept documents'
	// chunks). The controller compares the collection's count with their sum; nil from a
	// worker that does not report it (a sync is then not checked).
	ShardChunks *int64 `json:"shardChunks,omitempty"`
	// MetadataUpdated counts documents of a sync whose bytes were unchanged but whose
	// metadata (a sidecar, a source field, the field declarations) changed: their chunks'
	// properties were rewritten without embedding. Not in Documents nor Unchanged.
	MetadataUpdated int64 `json:"metadataUpdated,omitempty"`
	// InvalidMetadata counts the documents written with a declared metadata field left unset
	// because its value did not parse, by "<field>/<reason>" (pipeline/docmeta reasons); past
	// 16 keys, further fields count under "(other fields)/<reason>".
	InvalidMetadata map[string]int64 `json:"invalidMetadata,omitempty"`
	// Kept counts documents of an incremental sync that failed to read (or chunk) and kept
	// their previous chunks; they are also in Skipped by reason.
	Kept int64 `json:"kept,omitempty"`
	// Regrouped counts documents whose content was unchanged but whose chunks held another
	// access key (the rules changed): their chunks got the new groups without embedding.
	Regrouped int64            `json:"regrouped,omitempty"`
	Seconds   float64          `json:"seconds"`
	Skipped   map[string]int64 `json:"skipped,omitempty"`
	Error     string           `json:"error,omitempty"`
	// Reason says why the shard failed when it is a refusal the controller names (see
	// FailureReason); empty for any other failure.
	Reason FailureReason `json:"reason,omitempty"`
	// ModelHash is the content hash of the model folder the shard embedded with
	// (embedder.FolderHash); a model server that loaded another is not wired to the revision.
	ModelHash string `json:"modelHash,omitempty"`

	// SampledOut counts the shard's documents the plan's Sample left out (not read, not
	// skipped); with Documents and Skipped they make up every document of the shard.
	SampledOut int64 `json:"sampledOut,omitempty"`
	// StoredBytes are the bytes of the chunks the shard wrote or found written (Chunks): their
	// UTF-8 text plus their float32 vectors (4 bytes x dimensions); the collection's index
	// structures and the other properties are not counted. A sync reports only what it wrote:
	// its unchanged documents are hashed from their raw bytes but not extracted nor chunked.
	StoredBytes int64 `json:"storedBytes,omitempty"`
	// TruncatedChunks counts chunks cut to the model's positions (embedder.Stats.TruncatedChunks).
	TruncatedChunks int64 `json:"truncatedChunks,omitempty"`
	// OCR counts the pages read by OCR in this run (reader.OCRStats summed over the documents
	// the shard extracted; those found unchanged or in the extraction cache count none).
	OCR *ragopsv1alpha1.OCRStatus `json:"ocr,omitempty"`
	// Reads says how the shard came by its documents' text (extracted, unchanged, cache hits
	// and misses) and how long it planned; nil from a worker that does not report it.
	Reads *ragopsv1alpha1.DocumentReads `json:"reads,omitempty"`
	// CacheCollected counts the extraction cache entries shard 0 deleted because no document
	// of the corpus listing has their raw hash any more.
	CacheCollected int64 `json:"cacheCollected,omitempty"`
	// ManifestReads counts the objects the shard's state read returned: its own records of
	// the revision's manifest (one a document of the shard), or, once for a revision without
	// a manifest, every chunk of the collection (the migration's walk).
	ManifestReads int64 `json:"manifestReads,omitempty"`
	// Stages says where the shard's Seconds went; nil from a worker that does not report it.
	Stages *StageSeconds `json:"stages,omitempty"`
}

// StageSeconds is the time a build shard spent in each stage, in seconds (monotonic-clock
// sums, rounded to milliseconds). The stages run one after another on one goroutine, so
// their sum is at most the shard's Seconds; the rest is opening the model, the collection
// and the corpus, and planning the shard. A Semantic or Cluster strategy's sentence
// embeddings count in Chunk and again in Tokenize and Inference.
type StageSeconds struct {
	// Read is reading and parsing documents (corpus walk, format readers, OCR).
	Read float64 `json:"read"`
	// Chunk is running the chunking strategy (its own token counting included).
	Chunk float64 `json:"chunk"`
	// Tokenize is the embedder turning chunk texts into token sequences.
	Tokenize float64 `json:"tokenize"`
	// Inference is the embedder encoding them (tensors, ONNX Runtime, pooling).
	Inference float64 `json:"inference"`
	// Write is writing chunks into Weaviate (upserts and document replacements).
	Write float64 `json:"write"`
}

// Evaluate asks `ragops evaluate` to run a dataset's queries against a collection or alias.
type Evaluate struct {
	// Version is [Version].
	Version    string `json:"version"`
	Namespace  string `json:"namespace"`
	Evaluation string `json:"evaluation"`
	// UID is the Evaluation's UID: it seeds the bootstrap of the metric intervals, so that
	// a re-run of the same run gives the same intervals, and labels the per-query results.
	UID string `json:"uid,omitempty"`
	// Run is a scheduled run's schedule slot (RFC 3339, UTC), mixed into the bootstrap's seed
	// with UID so that each run draws its own resamples; empty for an unscheduled run.
	Run        string                       `json:"run,omitempty"`
	Revision   string                       `json:"revision"`
	Collection string                       `json:"collection"`
	Dataset    Source                       `json:"dataset"`
	Split      string                       `json:"split"`
	Mode       ragopsv1alpha1.RetrievalMode `json:"mode"`
	Alpha      float64                      `json:"alpha,omitempty"`
	Fusion     ragopsv1alpha1.FusionType    `json:"fusion,omitempty"`
	K          []int                        `json:"k"`
	MaxQueries int                          `json:"maxQueries,omitempty"`
	// ModelDir is the query model folder; empty for BM25 and for QueryEmbedding Weaviate.
	ModelDir string                      `json:"modelDir,omitempty"`
	Embedder ragopsv1alpha1.EmbedderSpec `json:"embedder"`
	// QueryEmbedding Weaviate sends query text to Weaviate, whose collection vectorizer (the
	// revision's model server) embeds it; empty or Job embeds it with ModelDir.
	QueryEmbedding ragopsv1alpha1.QueryEmbedding `json:"queryEmbedding,omitempty"`
	Rerank         *Rerank                       `json:"rerank,omitempty"`
	Weaviate       Weaviate                      `json:"weaviate"`
	// As are the groups of the Evaluation's persona (spec.as): every search is filtered to
	// the chunks they (or ragopsv1alpha1.PublicGroup) may read. Nil: unfiltered.
	As []string `json:"as,omitempty"`
	// Expand, when set, measures small-to-big retrieval (Evaluation spec.expand, sizes
	// defaulted): the top K chunks of each query widened to their context.
	Expand *Expand `json:"expand,omitempty"`
}

// Expand is the expansion an evaluation measures: Mode (Neighbours or Section), Size (the
// chunks on either side, or the most chunks of a section) and K (top chunks expanded).
type Expand struct {
	Mode ragopsv1alpha1.ExpansionMode `json:"mode"`
	Size int                          `json:"size"`
	K    int                          `json:"k"`
}

// ExpansionResult holds an evaluation's small-to-big figures (Expand): means over the
// queries for the top K chunks and their expanded context; span recall only for datasets
// with spans.
type ExpansionResult struct {
	Expand
	SpanRecall             *float64 `json:"spanRecall,omitempty"`
	ExpandedSpanRecall     *float64 `json:"expandedSpanRecall,omitempty"`
	TokensReturned         float64  `json:"tokensReturned"`
	ExpandedTokensReturned float64  `json:"expandedTokensReturned"`
}

// Rerank configures the evaluation's cross-encoder stage.
type Rerank struct {
	ModelDir string `json:"modelDir"`
	TopN     int    `json:"topN"`
}

// MetricsAtK are mean metrics at one cut-off.
type MetricsAtK struct {
	K       int     `json:"k"`
	Recall  float64 `json:"recall"`
	NDCG    float64 `json:"ndcg"`
	MRR     float64 `json:"mrr"`
	Success float64 `json:"success"`
	MAP     float64 `json:"map"`
	// SpanHit is spanHit@k, for datasets with annotated spans.
	SpanHit *float64 `json:"spanHit,omitempty"`
	// Intervals holds the uncertainty of each measure at k, keyed "recall", "ndcg", "mrr",
	// "success", "map" and "spanHit" (evaluator/stats: 95% percentile bootstrap over queries,
	// seeded from the Evaluation's UID); absent when the message would not fit.
	Intervals map[string]MetricInterval `json:"intervals,omitempty"`
}

// MetricInterval is a mean metric's bootstrap standard error and 95% interval, rounded to 4
// decimals.
type MetricInterval struct {
	StdErr float64 `json:"se"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// ResultsRef describes the per-query results of an evaluation pod (evaluator/results): when
// Error is empty, the pod's log holds them as a frame (results.WriteFrame) of Bytes bytes
// with this SHA256, for the controller to collect (results.ReadFrame) into the Evaluation's
// results ConfigMap.
type ResultsRef struct {
	Queries int    `json:"queries"`
	Bytes   int    `json:"bytes,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	// Error says why there are none, e.g. over the size bound, naming the query count.
	Error string `json:"error,omitempty"`
}

// EvaluateResult is the termination message of an evaluation pod.
type EvaluateResult struct {
	Queries      int          `json:"queries"`
	Metrics      []MetricsAtK `json:"metrics"`
	SpanHitRate  *float64     `json:"spanHitRate,omitempty"`
	UnknownQrels int          `json:"unknownQrels,omitempty"`
	// UnreadableChunks counts, with As, retrieved chunks none of the persona's groups may read.
	UnreadableChunks *int64 `json:"unreadableChunks,omitempty"`
	// Expansion holds the small-to-big figures, with Evaluate.Expand.
	Expansion *ExpansionResult `json:"expansion,omitempty"`
	// Results describes the per-query results written to the pod's log.
	Results *ResultsRef `json:"results,omitempty"`
	Error   string      `json:"error,omitempty"`
}

// Read decodes the plan at Dir/File (or at path when not empty) into v (a *Scan, *Build
// or *Evaluate).
//
// Errors: the file is unreadable; its SHA-256 is not the one in [EnvPlanSHA256] when that
// is set (the plan ConfigMap was rewritten, or reused from another run, after the Job was
// made); its "version" is not [Version] (the manager and the worker image disagree on the
// format); it has a field v does not know (a newer manager); it is not valid JSON.
func Read(path string, v any) error {
	if path == "" {
		path = filepath.Join(Dir, File)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read plan: %w", err)
	}
	if want := os.Getenv(EnvPlanSHA256); want != "" {
		if got := SHA256(raw); got != want {
			return fmt.Errorf("plan %s has SHA-256 %s, but its Job was made for %s: the plan ConfigMap is not this Job's", path, got, want)
		}
	}
	if err := Decode(raw, v); err != nil {
		return fmt.Errorf("plan %s: %w", path, err)
	}
	return nil
}

// SHA256 returns the hex SHA-256 of a plan's bytes.
func SHA256(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// Decode decodes a plan strictly, as [Read] does.
func Decode(raw []byte, v any) error {
	var head struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return err
	}
	if head.Version != Version {
		return fmt.Errorf("plan version %q, this worker reads %q: run the worker image that matches the manager", head.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w (a manager newer than this worker image?)", err)
	}
	return nil
}

// MaxTerminationMessage is Kubernetes's limit on a termination message, in bytes.
const MaxTerminationMessage = 4096

// WriteResult writes v as JSON to path (TerminationLog when empty), failing when it would
// not fit a termination message.
func WriteResult(path string, v any) error {
	if path == "" {
		path = TerminationLog
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(raw) > MaxTerminationMessage {
		return fmt.Errorf("result is %d bytes, over the %d-byte termination message limit", len(raw), MaxTerminationMessage)
	}
	return os.WriteFile(path, raw, 0o644)
}

// SumOCR adds the shards' OCR page counts; nil when no shard read a page by OCR.
func SumOCR(results []BuildResult) *ragopsv1alpha1.OCRStatus {
	var out *ragopsv1alpha1.OCRStatus
	for _, br := range results {
		if br.OCR == nil {
			continue
		}
		if out == nil {
			out = &ragopsv1alpha1.OCRStatus{}
		}
		out.Pages += br.OCR.Pages
		out.SecondPass += br.OCR.SecondPass
		out.LowConfidence += br.OCR.LowConfidence
	}
	return out
}

// SumInvalidMetadata adds the shards' InvalidMetadata counts; nil when none.
func SumInvalidMetadata(results []BuildResult) map[string]int64 {
	var out map[string]int64
	for _, r := range results {
		for k, v := range r.InvalidMetadata {
			if out == nil {
				out = map[string]int64{}
			}
			out[k] += v
		}
	}
	return out
}

// SumReads adds the shards' read counts (PlanMilliseconds: the longest shard's); nil when no
// shard reported any.
func SumReads(results []BuildResult) *ragopsv1alpha1.DocumentReads {
	var out *ragopsv1alpha1.DocumentReads
	for _, br := range results {
		if br.Reads == nil {
			continue
		}
		if out == nil {
			out = &ragopsv1alpha1.DocumentReads{}
		}
		out.Extracted += br.Reads.Extracted
		out.Unchanged += br.Reads.Unchanged
		out.CacheHits += br.Reads.CacheHits
		out.CacheMisses += br.Reads.CacheMisses
		out.BytesFetched += br.Reads.BytesFetched
		out.PlanMilliseconds = max(out.PlanMilliseconds, br.Reads.PlanMilliseconds)
	}
	return out
}
