package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// Annotations on an Index's sync Jobs.
const (
	// AnnotationCorpusRevision records the corpus revision a sync Job syncs, which the
	// revision records once the Job has finished; on an evaluate Job, the corpus revision the
	// evaluated revision held when the Job was made (what the run measures); on a gating
	// Evaluation, the corpus revision the gate wants measured (a run starts once the revision
	// holds it).
	AnnotationCorpusRevision = "ragops.dev/corpus-revision"
	// AnnotationSyncAttempt records the revision's SyncAttempt the sync Job was created
	// under: a status whose SyncAttempt is past it has recorded that the Job was superseded.
	AnnotationSyncAttempt = "ragops.dev/sync-attempt"
)

// DefaultHybridAlpha is the weight of the vector score in a hybrid Evaluation that sets
// none (Weaviate's alpha: 0 is BM25 alone, 1 the vector search alone).
const DefaultHybridAlpha = 0.5

// Defaults are the operator's settings every workload kind takes.
type Defaults struct {
	// Image is the worker image when a template names none.
	Image string
	// Deadline is activeDeadlineSeconds when a template sets none (none when 0).
	Deadline time.Duration
}

// ScanJobName names the scan Job of a Corpus for trigger: a function of the Corpus's name,
// generation and the trigger only, never of the clock or of cached status, so reconciles on
// stale caches name the same Job. At most 55 characters.
func ScanJobName(c *ragopsv1alpha1.Corpus, trigger string) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%s", c.Generation, trigger))
	return fmt.Sprintf("%s-scan-%s", ObjectName(c.Name, 40), hex.EncodeToString(sum[:])[:10])
}

// Scan returns the scan Job of a Corpus (ScanJobName of trigger): it lists the source and
// reports the documents, their revision and the skipped ones. The plan of an HTTP Corpus
// carries its last recorded scan (status figures and status.http), so that an archive the
// server reports unchanged is not downloaded.
func Scan(c *ragopsv1alpha1.Corpus, trigger string, d Defaults) *Workload {
	w := &Workload{Owner: c, Name: ScanJobName(c, trigger), Component: ComponentScan, Deadline: d.Deadline,
		Revision: strconv.FormatInt(c.Generation, 10), Args: []string{"scan"}, Image: d.Image}
	var src plan.Source
	w.MountCorpus(c, &src)
	p := plan.Scan{Version: plan.Version, Namespace: c.Namespace, Corpus: c.Name, Source: src}
	if c.Spec.HTTP != nil && c.Status.HTTP != nil && c.Status.Revision != "" {
		// An archive that has not changed since is not downloaded again (pipeline/scan).
		p.Previous = &plan.ScanResult{Documents: c.Status.Documents, Bytes: c.Status.Bytes, Revision: c.Status.Revision,
			Skipped: c.Status.Skipped, HTTP: c.Status.HTTP.DeepCopy()}
	}
	w.Plan = p
	return w
}

// BuildJobName names the build Job of a revision: <index>-<revision>-build, then -<attempt>
// after the first attempt. At most MaxNameLength characters.
func BuildJobName(idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus) string {
	name := fmt.Sprintf("%s-%s-build", ObjectName(idx.Name, 40), rev.Name)
	if rev.Attempt > 1 {
		name += fmt.Sprintf("-%d", rev.Attempt)
	}
	return ObjectName(name, MaxNameLength)
}

// SyncJobName names the sync Job of a corpus revision into a revision; after a retry
// (ragops.dev/retry) the name carries the handled retry, after a re-run of an incomplete sync
// its count, and after a stopped or automatically retried sync its attempt, so each runs
// anew. At most MaxNameLength characters.
func SyncJobName(idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus, corpusRev string) string {
	name := fmt.Sprintf("%s-%s-sync-%s", ObjectName(idx.Name, 32), rev.Name, corpusRev[:min(len(corpusRev), 8)])
	if r := idx.Status.LastHandledRetry; r != "" {
		sum := sha256.Sum256([]byte(r))
		name += "-" + hex.EncodeToString(sum[:])[:6]
	}
	if rev.IncompleteRuns > 0 {
		name += fmt.Sprintf("-r%d", rev.IncompleteRuns) // a re-run after verifySync found counts off
	}
	if rev.SyncAttempt > 0 {
		name += fmt.Sprintf("-a%d", rev.SyncAttempt)
	}
	return ObjectName(name, MaxNameLength)
}

// EmbedInputs are what an embed Job is built from, resolved by the Index controller.
type EmbedInputs struct {
	Index    *ragopsv1alpha1.Index
	Revision *ragopsv1alpha1.RevisionStatus
	// Corpus is the Index's Corpus; its status.commit pins a Git source.
	Corpus *ragopsv1alpha1.Corpus
	// Strategy is the spec's strategy, used when the revision records none of its own.
	Strategy ragopsv1alpha1.ChunkingStrategySpec
	// Model and Embedder are the revision's (the query model, see the Index controller).
	Model    ragopsv1alpha1.ModelSpec
	Embedder ragopsv1alpha1.EmbedderSpec
	// Incremental makes a sync Job of the corpus revision Corpus.Status.Revision.
	Incremental bool
	// Consistency is the write consistency level.
	Consistency ragopsv1alpha1.ConsistencyLevel
	// ModelServer is the model server the revision's queries use ("" for none).
	ModelServer string
	// OutageWait is how long a worker waits out a Weaviate outage.
	OutageWait time.Duration
}

// Embed returns the embedder Job of a revision: a full build (BuildJobName), or with
// Incremental a sync (SyncJobName) annotated with the corpus revision and sync attempt.
// The revision's own strategy, model and precision are used (a sync into the active
// revision runs also while the spec names another). A revision that served through the
// alias is never built non-incrementally: a rebuild after its collection was found missing
// runs as a sync, so if the collection is there after all (a false loss) an unreadable
// document keeps its served chunks instead of being deleted.
func Embed(in EmbedInputs, d Defaults) *Workload {
	idx, rev := in.Index, in.Revision
	name, kind := BuildJobName(idx, rev), JobKindBuild
	if in.Incremental {
		name, kind = SyncJobName(idx, rev, in.Corpus.Status.Revision), JobKindSync
	}
	strategy := in.Strategy
	if rev.Strategy != nil {
		strategy = *rev.Strategy
	}
	e := in.Embedder
	w := &Workload{Owner: idx, Name: name, Component: ComponentEmbed, Deadline: d.Deadline, Kind: kind, Revision: rev.Name,
		Args: []string{"embed"}, Template: e.Template, Image: d.Image, Shards: max(e.Shards, 1), GPU: e.Device == ragopsv1alpha1.DeviceCUDA}
	var src plan.Source
	w.MountCorpus(in.Corpus, &src)
	pinGit(in.Corpus, &src)
	w.shareHTTPDownload(in.Corpus)
	if in.Incremental {
		w.Annotations = map[string]string{AnnotationCorpusRevision: in.Corpus.Status.Revision,
			AnnotationSyncAttempt: strconv.Itoa(int(rev.SyncAttempt))}
	}
	modelDir := w.MountModel("model", plan.ModelDir, in.Model, w.Image)
	w.mountWeaviate(idx.Spec.Weaviate)
	// Every Index of the Corpus on this Weaviate shares its extraction cache (names are valid
	// Kubernetes names, so the name has no error).
	cache, _ := vectorstore.ExtractionCacheName(in.Corpus.Namespace, in.Corpus.Name)
	w.Plan = plan.Build{
		Version: plan.Version, Namespace: idx.Namespace, Index: idx.Name, Revision: rev.Name, Collection: rev.Collection,
		Incremental: in.Incremental || rev.ServedTime != nil, Shards: int(w.Shards), Source: src, Strategy: strategy,
		ModelDir: modelDir, ModelHash: rev.ModelHash, Embedder: e, VectorIndex: idx.Spec.VectorIndex,
		Replication: idx.Spec.Replication, Sharding: idx.Spec.Sharding, Compression: idx.Spec.Compression,
		Weaviate: plan.Weaviate{URL: idx.Spec.Weaviate.URL, GRPCAddress: idx.Spec.Weaviate.GRPCAddress,
			Consistency: in.Consistency},
		OutageSeconds:   int64(in.OutageWait.Seconds()),
		ModelServer:     in.ModelServer,
		Sample:          w.mountSample(idx.Spec.Sample),
		ExtractionCache: cache,
		Access:          in.Corpus.Spec.Access,
	}
	return w
}

// CopyInputs are what a copy Job is built from, resolved by the Index controller.
type CopyInputs struct {
	Index *ragopsv1alpha1.Index
	// Revision is the new revision; From the kept revision whose objects fill it (same
	// content key, other storage settings).
	Revision, From *ragopsv1alpha1.RevisionStatus
	// Embedder is the revision's: its Job template (resources, scheduling) is used, on one
	// pod and no GPU, since nothing is embedded.
	Embedder ragopsv1alpha1.EmbedderSpec
	// Consistency is the write consistency level.
	Consistency ragopsv1alpha1.ConsistencyLevel
	// ModelServer is the model server the revision's queries use ("" for none).
	ModelServer string
	// OutageWait is how long the worker waits out a Weaviate outage.
	OutageWait time.Duration
}

// Copy returns the build Job (BuildJobName, JobKindBuild) of a revision filled from a kept
// revision's collection: `ragops embed` with a plan whose Copy names From's collection
// (pipeline/vectorcopy). It mounts neither the corpus nor the model; the plan carries the
// new revision's vector index and layout, and From's model hash.
func Copy(in CopyInputs, d Defaults) *Workload {
	idx, rev := in.Index, in.Revision
	w := &Workload{Owner: idx, Name: BuildJobName(idx, rev), Component: ComponentEmbed, Deadline: d.Deadline, Kind: JobKindBuild,
		Revision: rev.Name, Args: []string{"embed"}, Template: in.Embedder.Template, Image: d.Image, Shards: 1}
	w.mountWeaviate(idx.Spec.Weaviate)
	strategy := ragopsv1alpha1.ChunkingStrategySpec{}
	if rev.Strategy != nil {
		strategy = *rev.Strategy
	}
	w.Plan = plan.Build{
		Version: plan.Version, Namespace: idx.Namespace, Index: idx.Name, Revision: rev.Name, Collection: rev.Collection,
		Shards: 1, Strategy: strategy, ModelHash: in.From.ModelHash, Embedder: in.Embedder, VectorIndex: idx.Spec.VectorIndex,
		Replication: idx.Spec.Replication, Sharding: idx.Spec.Sharding, Compression: idx.Spec.Compression,
		Weaviate: plan.Weaviate{URL: idx.Spec.Weaviate.URL, GRPCAddress: idx.Spec.Weaviate.GRPCAddress,
			Consistency: in.Consistency},
		OutageSeconds: int64(in.OutageWait.Seconds()),
		ModelServer:   in.ModelServer,
		Copy:          &plan.Copy{Collection: in.From.Collection, Revision: in.From.Name},
	}
	return w
}

// mountSample turns an Index's spec.sample into the plan's, mounting its judged dataset at
// plan.DatasetDir as an Evaluation Job mounts its dataset; nil for an unsampled Index.
func (w *Workload) mountSample(s *ragopsv1alpha1.DocumentSample) *plan.Sample {
	if s == nil {
		return nil
	}
	out := &plan.Sample{Fraction: s.Fraction, Seed: s.Seed}
	if j := s.Judged; j != nil {
		out.Judged = &plan.Source{HTTP: j.HTTP}
		out.Judged.Dir = w.MountSource("judged", plan.DatasetDir, j.PVC, j.ConfigMap)
		if j.HTTP != nil {
			w.Fetches(0)
		}
		out.Split = j.Split
		if out.Split == "" {
			out.Split = "test"
		}
	}
	return out
}

// EvaluationMeasurement is the hash (16 hex digits of SHA-256 over their JSON) of the spec
// fields of ev that decide what a run measures: indexRef, revision, queryEmbedding, expand
// and as (each only when set, so the hash of an Evaluation without them did not change; the
// persona's groups sorted, as spec.as.groups is a set) and the
// evaluation parameters (dataset, mode, hybrid, k, maxQueries, rerank, template). Schedule,
// concurrencyPolicy, alert, historyLimit and rerunOnRevisionChange are not part of it: they
// say when to run and what to do with the figures.
func EvaluationMeasurement(ev *ragopsv1alpha1.Evaluation) string {
	s := ev.Spec
	b, err := json.Marshal(struct {
		IndexRef       ragopsv1alpha1.LocalObjectReference `json:"indexRef"`
		Revision       string                              `json:"revision"`
		QueryEmbedding ragopsv1alpha1.QueryEmbedding       `json:"queryEmbedding"`
		Parameters     ragopsv1alpha1.EvaluationParameters `json:"parameters"`
		Expand         *ragopsv1alpha1.EvaluationExpansion `json:"expand,omitempty"`
		As             []string                            `json:"as,omitempty"`
	}{s.IndexRef, s.Revision, s.QueryEmbedding, s.EvaluationParameters, s.Expand, personaGroups(s.As)})
	if err != nil { // plain structs of strings and numbers: never
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// personaGroups is the sorted group list of an Evaluation's spec.as; nil without one.
func personaGroups(as *ragopsv1alpha1.EvaluationPersona) []string {
	if as == nil {
		return nil
	}
	g := slices.Clone(as.Groups)
	slices.Sort(g)
	return g
}

// EvaluationRun is the key of a scheduled run that seeds its bootstrap (plan.Evaluate.Run):
// its schedule slot, RFC 3339 in UTC; empty for an Evaluation without spec.schedule or
// before its first slot.
func EvaluationRun(ev *ragopsv1alpha1.Evaluation) string {
	if t := ev.Status.LastScheduleTime; t != nil && ev.Spec.Schedule != "" {
		return t.UTC().Format(time.RFC3339)
	}
	return ""
}

// EvaluationJobName names the Job of an Evaluation against revision rev: a hash of its
// measurement (EvaluationMeasurement), the revision, the handled retry annotation (retry)
// and, for a scheduled Evaluation, its last schedule time. At most 59 characters.
func EvaluationJobName(ev *ragopsv1alpha1.Evaluation, rev, retry string) string {
	key := EvaluationMeasurement(ev) + "/" + rev
	if retry != "" {
		key += "/" + retry
	}
	if run := EvaluationRun(ev); run != "" {
		key += "/scheduled/" + run
	}
	sum := sha256.Sum256([]byte(key))
	return fmt.Sprintf("%s-%s", ObjectName(ev.Name, 50), hex.EncodeToString(sum[:])[:8])
}

// EvaluateInputs are what an evaluate Job is built from, resolved by the Evaluation
// controller.
type EvaluateInputs struct {
	Evaluation *ragopsv1alpha1.Evaluation
	Index      *ragopsv1alpha1.Index
	Revision   *ragopsv1alpha1.RevisionStatus
	// Retry is the Evaluation's ragops.dev/retry annotation (part of the Job's name).
	Retry string
	// Model and Embedder embed the queries: the revision's.
	Model    ragopsv1alpha1.ModelSpec
	Embedder ragopsv1alpha1.EmbedderSpec
	// Consistency is the read consistency level.
	Consistency ragopsv1alpha1.ConsistencyLevel
}

// Evaluate returns the evaluate Job of an Evaluation against one revision: k = 10 always
// plus the spec's k values (sorted, once each), split "test" unless set, hybrid alpha
// DefaultHybridAlpha and relative-score fusion unless set; the query model is not mounted
// for BM25 nor with spec.queryEmbedding Weaviate (Weaviate's vectorizer embeds the text).
func Evaluate(in EvaluateInputs, d Defaults) *Workload {
	ev, idx, rev := in.Evaluation, in.Index, in.Revision
	p := ev.Spec.EvaluationParameters
	w := &Workload{Owner: ev, Name: EvaluationJobName(ev, rev.Name, in.Retry), Deadline: d.Deadline, Component: ComponentEvaluate,
		Revision: rev.Name, Args: []string{"evaluate"}, Template: p.Template, Image: d.Image, Shards: 1}
	ds := plan.Source{HTTP: p.Dataset.HTTP}
	ds.Dir = w.MountSource("dataset", plan.DatasetDir, p.Dataset.PVC, p.Dataset.ConfigMap)
	w.MountHeaders(p.Dataset.HTTP)
	if p.Dataset.HTTP != nil {
		w.Fetches(0) // a dataset's size is not known
	}
	var modelDir string
	byWeaviate := ev.Spec.QueryEmbedding == ragopsv1alpha1.QueryEmbeddingWeaviate
	if p.Mode != ragopsv1alpha1.ModeBM25 && !byWeaviate {
		modelDir = w.MountModel("model", plan.ModelDir, in.Model, w.Image)
	}
	w.mountWeaviate(idx.Spec.Weaviate)
	ks := []int{10}
	for _, k := range p.K {
		if !slices.Contains(ks, int(k)) {
			ks = append(ks, int(k))
		}
	}
	slices.Sort(ks)
	pl := plan.Evaluate{Version: plan.Version,
		Namespace: ev.Namespace, Evaluation: ev.Name, UID: string(ev.UID), Run: EvaluationRun(ev), Revision: rev.Name, Collection: rev.Collection,
		Dataset: ds, Split: p.Dataset.Split, Mode: p.Mode, K: ks, MaxQueries: int(p.MaxQueries), ModelDir: modelDir,
		Embedder: in.Embedder,
		Weaviate: plan.Weaviate{URL: idx.Spec.Weaviate.URL, GRPCAddress: idx.Spec.Weaviate.GRPCAddress,
			Consistency: in.Consistency},
	}
	if byWeaviate && p.Mode != ragopsv1alpha1.ModeBM25 {
		pl.QueryEmbedding = ragopsv1alpha1.QueryEmbeddingWeaviate
	}
	if ev.Spec.As != nil {
		pl.As = slices.Clone(ev.Spec.As.Groups)
	}
	if x := ev.Spec.Expand; x != nil {
		pl.Expand = &plan.Expand{Mode: x.Mode, Size: int(x.Size), K: int(x.K)}
		if pl.Expand.Size == 0 {
			pl.Expand.Size = ragopsv1alpha1.DefaultExpandNeighbours
			if x.Mode == ragopsv1alpha1.ExpandSection {
				pl.Expand.Size = ragopsv1alpha1.DefaultExpandSection
			}
		}
		if pl.Expand.K == 0 {
			pl.Expand.K = 10
		}
	}
	if pl.Split == "" {
		pl.Split = "test"
	}
	if p.Mode == ragopsv1alpha1.ModeHybrid {
		pl.Alpha, pl.Fusion = DefaultHybridAlpha, ragopsv1alpha1.FusionRelativeScore
		if h := p.Hybrid; h != nil {
			if h.Alpha != nil {
				pl.Alpha = *h.Alpha
			}
			if h.Fusion != "" {
				pl.Fusion = h.Fusion
			}
		}
	}
	if rr := p.Rerank; rr != nil {
		pl.Rerank = &plan.Rerank{ModelDir: w.MountModel("rerank-model", plan.RerankModelDir, rr.Model, w.Image), TopN: int(max(rr.TopN, 1))}
	}
	w.Plan = pl
	if rev.CorpusRevision != "" {
		w.Annotations = map[string]string{AnnotationCorpusRevision: rev.CorpusRevision}
	}
	return w
}
