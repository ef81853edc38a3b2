// Package metrics defines the ragops Prometheus metrics and registers them on
// controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry), so
// the manager's metrics endpoint (--metrics-bind-address, path /metrics) serves them next to
// controller-runtime's defaults (controller_runtime_reconcile_total, workqueue_*, rest_client_*,
// Go and process collectors).
//
// The controllers call a small API: TrackIndex on each reconcile of an Index, ObserveBuild when a revision's build Job completes,
// ObserveEmbedded for incremental corpus syncs, ObserveBuildFailure when a build or sync Job
// fails, SetActiveRevision when the alias moves, ObserveEvaluation and SetEvaluationCompleted
// when an Evaluation's figures land in status, SetConditions when an object's status is stored,
// SetServedCorpus when the Index controller compares the served and listed corpus revisions, and the Forget* functions when an Index, a revision or an Evaluation goes
// away (so deleted objects leave no stale series). Every function is safe for concurrent use.
//
// Series (all labelled by namespace plus the object's name):
//
//	ragops_index_documents_embedded_total{namespace,index}                counter
//	ragops_index_chunks_embedded_total{namespace,index}                   counter
//	ragops_index_tokens_embedded_total{namespace,index}                   counter
//	ragops_index_builds_total{namespace,index,result}                     counter (result: succeeded|failed)
//	ragops_index_build_duration_seconds{namespace,index}                  histogram
//	ragops_index_build_tokens_per_second{namespace,index,revision}        gauge
//	ragops_index_active_revision_info{namespace,index,revision}           gauge, always 1
//	ragops_index_truncated_chunks{namespace,index,revision}               gauge, chunks cut to the model's positions
//	ragops_evaluation_recall{namespace,evaluation,index,mode,k}           gauge, recall@k in [0,1]
//	ragops_evaluation_ndcg{namespace,evaluation,index,mode,k}             gauge, nDCG@k in [0,1]
//	ragops_evaluation_mrr{namespace,evaluation,index,mode,k}              gauge, MRR@k in [0,1]
//	ragops_evaluation_last_completion_timestamp_seconds{namespace,evaluation,index} gauge, Unix s
//	ragops_evaluation_quality_dropped{namespace,evaluation,index}         gauge, 1 while QualityDropped is True, else 0; only with spec.alert
//	ragops_index_builds_running{namespace,index}                          gauge, 1 while a build or sync Job runs, else 0
//	ragops_index_build_documents{namespace,index,revision,state}          gauge, documents done and total of the running build (state: done|total)
//	ragops_weaviate_requests_total{operation}                             counter, the controllers' Weaviate calls
//	ragops_weaviate_request_errors_total{operation}                       counter, those that failed
//	ragops_index_served_corpus_behind_since_timestamp_seconds{namespace,index} gauge, Unix s since the Corpus lists content the Index does not serve; 0 while it serves the listed revision
//	ragops_condition{namespace,kind,name,type,status,reason}             gauge, always 1: each condition of each Corpus, Index, Evaluation and Experiment
//
// Metric and label names follow the Prometheus naming conventions
// (https://prometheus.io/docs/practices/naming/): base units (seconds), _total for counters,
// _info for an info-style gauge whose labels carry the value.
package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Namespace is the prefix of every ragops metric name.
const Namespace = "ragops"

// Result label values of ragops_index_builds_total.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// BuildDurationBuckets are the upper bounds, in seconds, of the build duration histogram:
// 10 s to about 10.6 h, each 2.5 times the previous (a three-document ConfigMap corpus
// takes seconds, a 92k-document archive on CPU takes hours).
var BuildDurationBuckets = prometheus.ExponentialBuckets(10, 2.5, 10)

var (
	documentsEmbedded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "index", Name: "documents_embedded_total",
		Help: "Documents chunked, embedded and written to Weaviate by build and sync Jobs.",
	}, []string{"namespace", "index"})
	chunksEmbedded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "index", Name: "chunks_embedded_total",
		Help: "Chunks embedded and written to Weaviate by build and sync Jobs.",
	}, []string{"namespace", "index"})
	tokensEmbedded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "index", Name: "tokens_embedded_total",
		Help: "Model tokens run through the embedding model by build and sync Jobs.",
	}, []string{"namespace", "index"})
	builds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "index", Name: "builds_total",
		Help: "Revision builds that finished, by result (succeeded or failed).",
	}, []string{"namespace", "index", "result"})
	buildDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "index", Name: "build_duration_seconds",
		Help:    "Wall time of successful revision builds (the slowest shard), in seconds.",
		Buckets: BuildDurationBuckets,
	}, []string{"namespace", "index"})
	tokensPerSecond = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "index", Name: "build_tokens_per_second",
		Help: "Embedding throughput of a revision's build: tokens divided by the slowest shard's seconds.",
	}, []string{"namespace", "index", "revision"})
	activeRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "index", Name: "active_revision_info",
		Help: "The revision the Index's Weaviate alias points at (value always 1).",
	}, []string{"namespace", "index", "revision"})
	truncatedChunks = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "index", Name: "truncated_chunks",
		Help: "Chunks of a revision cut to the embedding model's positions before embedding (their tail is not in the vector).",
	}, []string{"namespace", "index", "revision"})
	recall = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "evaluation", Name: "recall",
		Help: "Last recall@k of an Evaluation (fraction of relevant documents in the top k, mean over queries).",
	}, []string{"namespace", "evaluation", "index", "mode", "k"})
	ndcg = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "evaluation", Name: "ndcg",
		Help: "Last nDCG@k of an Evaluation (Järvelin and Kekäläinen 2002, mean over queries).",
	}, []string{"namespace", "evaluation", "index", "mode", "k"})
	mrr = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "evaluation", Name: "mrr",
		Help: "Last MRR@k of an Evaluation (reciprocal rank of the first relevant document, mean over queries).",
	}, []string{"namespace", "evaluation", "index", "mode", "k"})
	evaluationCompleted = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "evaluation", Name: "last_completion_timestamp_seconds",
		Help: "Unix time at which an Evaluation's figures were last recorded.",
	}, []string{"namespace", "evaluation", "index"})
	qualityDropped = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "evaluation", Name: "quality_dropped",
		Help: "1 while an Evaluation's QualityDropped condition is True (its last run worse than its baseline run by more than spec.alert.maxDrop), else 0; only for Evaluations with spec.alert.",
	}, []string{"namespace", "evaluation", "index"})

	buildsRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "index", Name: "builds_running",
		Help: "1 while a build or corpus sync Job of the Index runs, else 0.",
	}, []string{"namespace", "index"})
	buildDocuments = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "index", Name: "build_documents",
		Help: "Documents of the running build or sync: state=done (with chunks in the revision's collection) and state=total (in the Corpus); absent when none runs.",
	}, []string{"namespace", "index", "revision", "state"})
	weaviateRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "weaviate", Name: "requests_total",
		Help: "Calls of the controllers to Weaviate (aliases, collections, counts), by operation.",
	}, []string{"operation"})
	weaviateErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "weaviate", Name: "request_errors_total",
		Help: "Calls of the controllers to Weaviate that returned an error, by operation.",
	}, []string{"operation"})
	servedBehindSince = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "index", Name: "served_corpus_behind_since_timestamp_seconds",
		Help: "Unix time since which the Corpus lists a revision the Index's active revision does not hold (its served content is stale since then); 0 while it serves the listed revision.",
	}, []string{"namespace", "index"})
	conditions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "condition",
		Help: "The status and reason of each condition of a ragops object (value always 1; one series per object and condition type).",
	}, []string{"namespace", "kind", "name", "type", "status", "reason"})
)

// Collectors returns every ragops collector (for registering on another registry in tests
// or tools; the package already registers them on controller-runtime's registry).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{documentsEmbedded, chunksEmbedded, tokensEmbedded, builds, buildDuration,
		tokensPerSecond, activeRevision, truncatedChunks, recall, ndcg, mrr, evaluationCompleted, qualityDropped, buildsRunning, buildDocuments,
		weaviateRequests, weaviateErrors, servedBehindSince, conditions}
}

func init() {
	crmetrics.Registry.MustRegister(Collectors()...)
}

// ObserveEmbedded adds the documents, chunks and tokens a Job embedded (a full build or an
// incremental corpus sync) to the Index's counters. Negative counts are ignored (a counter
// never decreases).
func ObserveEmbedded(namespace, index string, documents, chunks, tokens int64) {
	add(documentsEmbedded.WithLabelValues(namespace, index), documents)
	add(chunksEmbedded.WithLabelValues(namespace, index), chunks)
	add(tokensEmbedded.WithLabelValues(namespace, index), tokens)
}

func add(c prometheus.Counter, n int64) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// TrackIndex creates the Index's counter and histogram series at zero: documents, chunks and
// tokens embedded, builds_total of both results and the build duration histogram. Prometheus's
// rate() and increase() count nothing for a series' first sample, so a series born at its
// first increment (a first failed build at 1) hides that increment from every alert and
// panel; born at zero and scraped once, it shows. Call it on every reconcile of an Index
// (it only looks the series up once they exist).
func TrackIndex(namespace, index string) {
	documentsEmbedded.WithLabelValues(namespace, index)
	chunksEmbedded.WithLabelValues(namespace, index)
	tokensEmbedded.WithLabelValues(namespace, index)
	builds.WithLabelValues(namespace, index, ResultSucceeded)
	builds.WithLabelValues(namespace, index, ResultFailed)
	buildDuration.WithLabelValues(namespace, index)
}

// ObserveBuild records a successful revision build: it adds documents, chunks and tokens to
// the counters (as ObserveEmbedded), counts a succeeded build, observes seconds (the wall
// time of the slowest shard) in the duration histogram and sets the revision's tokens per
// second to tokens/seconds. A non-positive seconds skips the histogram and the throughput.
// A revision is recorded once: calling it again for the same namespace, index and revision
// (a reconcile retried after a status conflict) changes nothing until ForgetRevision or
// ForgetIndex.
func ObserveBuild(namespace, index, revision string, documents, chunks, tokens int64, seconds float64) {
	if !seen.first(namespace, index, "revision/"+revision) {
		return
	}
	ObserveEmbedded(namespace, index, documents, chunks, tokens)
	builds.WithLabelValues(namespace, index, ResultSucceeded).Inc()
	if seconds > 0 {
		buildDuration.WithLabelValues(namespace, index).Observe(seconds)
		tokensPerSecond.WithLabelValues(namespace, index, revision).Set(float64(max(tokens, 0)) / seconds)
	}
}

// SetTruncatedChunks records how many chunks of a revision were cut to the model's positions
// (RevisionStatus.truncatedChunks); setting it again is harmless.
func SetTruncatedChunks(namespace, index, revision string, n int64) {
	truncatedChunks.WithLabelValues(namespace, index, revision).Set(float64(max(n, 0)))
}

// ObserveBuildFailure counts a failed build or corpus sync Job of an Index, once per Job
// name (repeated calls for the same Job change nothing until ForgetIndex).
func ObserveBuildFailure(namespace, index, job string) {
	if !seen.first(namespace, index, "job/"+job) {
		return
	}
	builds.WithLabelValues(namespace, index, ResultFailed).Inc()
}

// recorded remembers which builds and failed Jobs were counted, per Index.
type recorded struct {
	mu   sync.Mutex
	keys map[[2]string]map[string]bool
}

var seen = &recorded{keys: map[[2]string]map[string]bool{}}

// first reports whether key is new for the Index, and records it.
func (r *recorded) first(namespace, index, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]string{namespace, index}
	if r.keys[k] == nil {
		r.keys[k] = map[string]bool{}
	}
	if r.keys[k][key] {
		return false
	}
	r.keys[k][key] = true
	return true
}

func (r *recorded) forget(namespace, index, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]string{namespace, index}
	if key == "" {
		delete(r.keys, k)
		return
	}
	delete(r.keys[k], key)
}

// SetActiveRevision records that the Index's alias points at revision: the info series of
// any other revision of this Index is removed, so exactly one series per Index has value 1.
// An empty revision only removes them.
func SetActiveRevision(namespace, index, revision string) {
	activeRevision.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "index": index})
	if revision != "" {
		activeRevision.WithLabelValues(namespace, index, revision).Set(1)
	}
}

// ObserveEvaluation records an Evaluation's figures at cut-off k for retrieval mode (the
// spec's mode: Dense, BM25 or Hybrid) against index. Call it once per k the Evaluation
// measured; values are fractions in [0,1] as in the Evaluation's status. Setting the same
// figures again (after a manager restart) is harmless.
func ObserveEvaluation(namespace, name, index, mode string, k int, recallAtK, ndcgAtK, mrrAtK float64) {
	evaluationIndexes.move(namespace, name, index)
	ks := strconv.Itoa(k)
	recall.WithLabelValues(namespace, name, index, mode, ks).Set(recallAtK)
	ndcg.WithLabelValues(namespace, name, index, mode, ks).Set(ndcgAtK)
	mrr.WithLabelValues(namespace, name, index, mode, ks).Set(mrrAtK)
}

// SetEvaluationCompleted records when an Evaluation's figures were produced (its
// status.completionTime); a zero time is ignored.
func SetEvaluationCompleted(namespace, name, index string, at time.Time) {
	if at.IsZero() {
		return
	}
	evaluationIndexes.move(namespace, name, index)
	evaluationCompleted.WithLabelValues(namespace, name, index).Set(float64(at.UnixNano()) / 1e9)
}

// SetQualityDropped records whether an Evaluation's QualityDropped condition is True.
func SetQualityDropped(namespace, name, index string, dropped bool) {
	evaluationIndexes.move(namespace, name, index)
	v := 0.0
	if dropped {
		v = 1
	}
	qualityDropped.WithLabelValues(namespace, name, index).Set(v)
}

// ForgetQualityDropped removes an Evaluation's quality_dropped series (call it when its
// QualityDropped condition no longer applies: spec.alert removed, the measurement changed),
// so an alert on the series stops.
func ForgetQualityDropped(namespace, name string) {
	qualityDropped.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "evaluation": name})
}

// evaluationVecs are the series labelled by namespace, evaluation and index.
func evaluationVecs() []interface {
	DeletePartialMatch(prometheus.Labels) int
} {
	return []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{recall, ndcg, mrr, evaluationCompleted, qualityDropped}
}

// indexOf remembers the index label of each Evaluation's series.
type indexOf struct {
	mu    sync.Mutex
	index map[[2]string]string
}

var evaluationIndexes = &indexOf{index: map[[2]string]string{}}

// move records that the Evaluation's series are labelled index, removing those labelled
// with the index it measured before (spec.indexRef changed): figures of another Index no
// longer apply.
func (m *indexOf) move(namespace, name, index string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{namespace, name}
	if old, ok := m.index[k]; ok && old != index {
		for _, v := range evaluationVecs() {
			v.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "evaluation": name, "index": old})
		}
	}
	m.index[k] = index
}

func (m *indexOf) forget(namespace, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.index, [2]string{namespace, name})
}

// ForgetRevision removes the series of one revision of an Index (call it when the revision
// is pruned).
func ForgetRevision(namespace, index, revision string) {
	l := prometheus.Labels{"namespace": namespace, "index": index, "revision": revision}
	tokensPerSecond.DeletePartialMatch(l)
	activeRevision.DeletePartialMatch(l)
	truncatedChunks.DeletePartialMatch(l)
	seen.forget(namespace, index, "revision/"+revision)
}

// ForgetIndex removes every series of an Index (call it when the Index is deleted).
func ForgetIndex(namespace, index string) {
	l := prometheus.Labels{"namespace": namespace, "index": index}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{documentsEmbedded, chunksEmbedded, tokensEmbedded, builds, buildDuration, tokensPerSecond, activeRevision, truncatedChunks,
		buildsRunning, buildDocuments, servedBehindSince} {
		v.DeletePartialMatch(l)
	}
	seen.forget(namespace, index, "")
	behind.forget(namespace, index)
}

// ForgetEvaluation removes every series of an Evaluation (call it when it is deleted, or when
// a new run starts and the old figures no longer apply).
func ForgetEvaluation(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "evaluation": name}
	for _, v := range evaluationVecs() {
		v.DeletePartialMatch(l)
	}
	evaluationIndexes.forget(namespace, name)
}

// SetBuildProgress records whether a build or corpus sync Job of the Index runs and, while one
// does, the documents done and total of its revision (the Index's status.build); when none
// runs the document series are removed and builds_running is 0.
func SetBuildProgress(namespace, index string, running bool, revision string, done, total int64) {
	buildDocuments.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "index": index})
	if !running {
		buildsRunning.WithLabelValues(namespace, index).Set(0)
		return
	}
	buildsRunning.WithLabelValues(namespace, index).Set(1)
	buildDocuments.WithLabelValues(namespace, index, revision, "done").Set(float64(done))
	buildDocuments.WithLabelValues(namespace, index, revision, "total").Set(float64(total))
}

// ObserveWeaviateCall counts one call of the controllers to Weaviate (operation: the Store
// method, e.g. SetAlias) and, when err is not nil, one error. Both series of an operation
// exist from its first call on, so a rate of errors is 0 rather than absent.
func ObserveWeaviateCall(operation string, err error) {
	weaviateRequests.WithLabelValues(operation).Inc()
	e := weaviateErrors.WithLabelValues(operation)
	if err != nil {
		e.Inc()
	}
}

// Condition is the part of a metav1.Condition the condition series carries.
type Condition struct{ Type, Status, Reason string }

// SetConditions records the conditions of an object of kind (Corpus, Index, Evaluation,
// Experiment) as stored in its status: one ragops_condition series per condition type, with
// its status and reason as labels; the series of types it no longer has, and of a type's
// previous status or reason, are removed.
func SetConditions(namespace, kind, name string, conds []Condition) {
	conditions.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "kind": kind, "name": name})
	for _, c := range conds {
		conditions.WithLabelValues(namespace, kind, name, c.Type, c.Status, c.Reason).Set(1)
	}
}

// ForgetConditions removes the condition series of an object (call it when it is deleted).
func ForgetConditions(namespace, kind, name string) {
	conditions.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "kind": kind, "name": name})
}

// behindSince remembers, per Index, since when its served corpus revision is behind the
// listed one (in memory: after a manager restart the time restarts at the first reconcile).
type behindSince struct {
	mu    sync.Mutex
	since map[[2]string]time.Time
}

var behind = &behindSince{since: map[[2]string]time.Time{}}

func (b *behindSince) forget(namespace, index string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.since, [2]string{namespace, index})
}

// SetServedCorpus compares served (the corpus revision the Index's active revision holds)
// with listed (the Corpus's status.revision) at now: while they differ the Index's
// served_corpus_behind_since series holds the Unix time they were first seen to differ
// (kept while the Corpus moves on again); when they match it is 0. An empty listed revision
// (the Corpus not listed yet) changes nothing; an empty served one (nothing served yet: the
// Index is not Ready, which its own condition reports) removes the series.
func SetServedCorpus(namespace, index, served, listed string, now time.Time) {
	if listed == "" {
		return
	}
	behind.mu.Lock()
	defer behind.mu.Unlock()
	k := [2]string{namespace, index}
	if served == "" {
		delete(behind.since, k)
		servedBehindSince.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "index": index})
		return
	}
	g := servedBehindSince.WithLabelValues(namespace, index)
	if served == listed {
		delete(behind.since, k)
		g.Set(0)
		return
	}
	since, ok := behind.since[k]
	if !ok {
		since = now
		behind.since[k] = since
	}
	g.Set(float64(since.UnixNano()) / 1e9)
}
