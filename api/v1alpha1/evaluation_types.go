package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RetrievalMode is how queries retrieve chunks.
// +kubebuilder:validation:Enum=Dense;BM25;Hybrid
type RetrievalMode string

// Retrieval modes.
const (
	ModeDense  RetrievalMode = "Dense"
	ModeBM25   RetrievalMode = "BM25"
	ModeHybrid RetrievalMode = "Hybrid"
)

// FusionType is Weaviate's hybrid fusion algorithm.
// +kubebuilder:validation:Enum=RankedFusion;RelativeScoreFusion
type FusionType string

// Fusion types.
const (
	FusionRanked        FusionType = "RankedFusion"
	FusionRelativeScore FusionType = "RelativeScoreFusion"
)

// QueryEmbedding says who embeds an Evaluation's query text.
// +kubebuilder:validation:Enum=Job;Weaviate
type QueryEmbedding string

// Query embeddings.
const (
	// QueryEmbeddingJob: the evaluate Job loads the revision's model folder and embeds each
	// query itself (nearVector; hybrid with that vector).
	QueryEmbeddingJob QueryEmbedding = "Job"
	// QueryEmbeddingWeaviate: the evaluate Job sends the query text as an app does (nearText;
	// hybrid with a text query), and Weaviate embeds it through the revision collection's
	// text2vec-transformers vectorizer, i.e. the revision's model server.
	QueryEmbeddingWeaviate QueryEmbedding = "Weaviate"
)

// DatasetSource is a BEIR-format dataset (queries.jsonl, qrels/<split>.tsv). corpus.jsonl is
// optional: it is read only for the documents query_spans.jsonl names (span metrics) or, with
// reranking, when the index returns no chunk text; a hit on a document it does not list counts
// as retrieved and not relevant.
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.pvc), has(self.http)].filter(x, x).size() == 1",message="exactly one dataset source must be set: configMap, pvc or http"
type DatasetSource struct {
	// ConfigMap holding queries.jsonl and qrels files (keys qrels-<split>.tsv or <split>.tsv).
	// +optional
	ConfigMap *LocalObjectReference `json:"configMap,omitempty"`
	// PVC folder in BEIR layout.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`
	// HTTP archive in BEIR layout.
	// +optional
	HTTP *HTTPSource `json:"http,omitempty"`
	// Split names the qrels file, qrels/<split>.tsv.
	// +optional
	// +kubebuilder:default=test
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]{1,64}$`
	Split string `json:"split,omitempty"`
}

// HybridOptions configure hybrid (BM25 + dense) retrieval.
type HybridOptions struct {
	// Alpha weighs dense against BM25: 1 is pure dense, 0 pure BM25.
	// +optional
	// +kubebuilder:default=0.5
	// +kubebuilder:validation:XValidation:rule="self >= 0.0 && self <= 1.0",message="alpha must be between 0 and 1"
	Alpha *float64 `json:"alpha,omitempty"`
	// Fusion of the two result lists.
	// +optional
	// +kubebuilder:default=RelativeScoreFusion
	Fusion FusionType `json:"fusion,omitempty"`
}

// RerankOptions configure a cross-encoder reranking stage.
type RerankOptions struct {
	// Model is the cross-encoder model folder.
	Model ModelSpec `json:"model"`
	// TopN chunks are rescored.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	TopN int32 `json:"topN,omitempty"`
}

// EvaluationParameters are what an Evaluation measures and how.
// +kubebuilder:validation:XValidation:rule="!has(self.hybrid) || self.mode == 'Hybrid'",fieldPath=".hybrid",reason=FieldValueForbidden,message="hybrid may only be set when mode is Hybrid"
type EvaluationParameters struct {
	// Dataset of queries and relevance judgements (qrels).
	Dataset DatasetSource `json:"dataset"`
	// Mode of retrieval.
	// +optional
	// +kubebuilder:default=Dense
	Mode RetrievalMode `json:"mode,omitempty"`
	// Hybrid options (mode Hybrid).
	// +optional
	Hybrid *HybridOptions `json:"hybrid,omitempty"`
	// K lists the metric cut-offs; @10 is always computed for the printer columns.
	// +optional
	// +kubebuilder:default={10}
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k >= 1 && k <= 1000)",message="every k must be between 1 and 1000"
	K []int32 `json:"k,omitempty"`
	// MaxQueries caps the number of queries (0 means all with qrels).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxQueries int32 `json:"maxQueries,omitempty"`
	// Rerank adds a cross-encoder stage over the top chunks.
	// +optional
	Rerank *RerankOptions `json:"rerank,omitempty"`
	// Template holds image, resources and scheduling of the evaluation pod.
	// +optional
	Template JobTemplate `json:"template,omitempty"`
}

// EvaluationSpec measures retrieval quality of an Index on a dataset.
// +kubebuilder:validation:XValidation:rule="!has(self.queryEmbedding) || self.queryEmbedding == 'Job' || !has(self.mode) || self.mode != 'BM25'",fieldPath=".queryEmbedding",reason=FieldValueForbidden,message="queryEmbedding Weaviate embeds query text for Dense and Hybrid; BM25 embeds nothing"
type EvaluationSpec struct {
	// IndexRef names the Index to query.
	IndexRef LocalObjectReference `json:"indexRef"`
	// Revision pins a (candidate) revision; empty means the Index's active revision.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision,omitempty"`
	// RerunOnRevisionChange re-runs the Evaluation when the Index's active revision changes.
	// +optional
	// +kubebuilder:default=true
	RerunOnRevisionChange *bool `json:"rerunOnRevisionChange,omitempty"`
	// Schedule re-runs the Evaluation on a cron schedule (the five fields of a CronJob's
	// schedule, or a descriptor such as @daily or @every 30m; UTC) against the revision the
	// Index serves (or spec.revision), to watch quality over time; each run is kept in
	// status.history. Slots come at least a minute apart: an @every interval under 1m is
	// refused. An unparsable schedule is Stalled naming spec.schedule.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('@every') || (self.matches('^@every ([0-9]+([.][0-9]*)?(ns|us|ms|s|m|h))+$') && duration(self.substring(7)) >= duration('1m'))",message="an @every interval must be a duration of at least 1m (e.g. @every 30m): a run per slot needs time to finish"
	Schedule string `json:"schedule,omitempty"`
	// ConcurrencyPolicy says what a schedule slot does while the previous run still runs, as
	// a CronJob's: Forbid (the default) starts no Job, and the latest slot that passed starts
	// one when the run ends; Replace deletes the running Job and starts the slot's.
	// +optional
	// +kubebuilder:default=Forbid
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// Alert compares each run with a pinned baseline run on the same queries (the first run
	// on the revision measured, see status.baseline) and sets the QualityDropped condition
	// when the run is worse by more than maxDrop.
	// +optional
	Alert *QualityAlert `json:"alert,omitempty"`
	// HistoryLimit is how many runs status.history keeps, newest last (default 10).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	HistoryLimit *int32 `json:"historyLimit,omitempty"`
	// QueryEmbedding says who embeds the query text (Dense and Hybrid): Job (the default)
	// loads the revision's model folder into the evaluate Job; Weaviate sends the text
	// through the revision's collection as an app does (nearText, hybrid with a text query),
	// so the revision's model server embeds it: this measures the serving path. Weaviate needs
	// the Index's spec.serving enabled and Weaviate's text2vec-transformers module; without
	// them the Evaluation is Stalled naming spec.queryEmbedding. Not allowed with mode BM25.
	// +optional
	// +kubebuilder:default=Job
	QueryEmbedding QueryEmbedding `json:"queryEmbedding,omitempty"`
	// As measures retrieval as a persona sees it through the query endpoint: every search
	// carries the access filter of these groups (and ragopsv1alpha1.PublicGroup), and
	// status.unreadableChunks counts retrieved chunks none of them may read (must be 0).
	// +optional
	As *EvaluationPersona `json:"as,omitempty"`
	// Expand measures small-to-big retrieval: the top spec.expand.k chunks of each query are
	// widened to their neighbours or their heading section (as the query endpoint and `ragops
	// query --expand` return them, under spec.as's filter too), and status.expansion reports
	// span recall and tokens returned with and without the expansion.
	// +optional
	Expand *EvaluationExpansion `json:"expand,omitempty"`

	EvaluationParameters `json:",inline"`
}

// ExpansionMode is what each retrieved chunk is widened to (small-to-big).
// +kubebuilder:validation:Enum=Neighbours;Section
type ExpansionMode string

// Expansion modes.
const (
	// ExpandNeighbours: the chunks of the hit's document within size ordinals of it.
	ExpandNeighbours ExpansionMode = "Neighbours"
	// ExpandSection: the consecutive chunks of the hit's document sharing its heading path,
	// at most size of them centred on it.
	ExpandSection ExpansionMode = "Section"
)

// Default sizes of an EvaluationExpansion without spec.expand.size.
const (
	DefaultExpandNeighbours = 1
	DefaultExpandSection    = 8
)

// EvaluationExpansion is the expansion an Evaluation measures.
// +kubebuilder:validation:XValidation:rule="!has(self.size) || self.mode != 'Neighbours' || self.size <= 5",fieldPath=".size",reason=FieldValueInvalid,message="Neighbours size must be between 1 and 5"
type EvaluationExpansion struct {
	// Mode is Neighbours or Section.
	Mode ExpansionMode `json:"mode"`
	// Size is, for Neighbours, the chunks on either side of the hit (1..5, default 1); for
	// Section, the most chunks of the section returned (1..20, default 8).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Size int32 `json:"size,omitempty"`
	// K is how many top chunks of each query are expanded and measured.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	K int32 `json:"k,omitempty"`
}

// ExpansionMetrics are an Evaluation's small-to-big figures (spec.expand): means over the
// queries, rounded to 4 decimals, for the top K chunks and for their expanded context (each
// chunk counted once per query).
type ExpansionMetrics struct {
	// Mode of the expansion measured.
	Mode ExpansionMode `json:"mode"`
	// Size of the expansion measured (spec.expand.size, defaulted).
	Size int32 `json:"size"`
	// K is the top chunks expanded per query.
	K int32 `json:"k"`
	// SpanRecall is the share of the annotated relevant spans' bytes the top K chunks cover
	// (datasets with query_spans.jsonl; absent otherwise).
	// +optional
	SpanRecall *float64 `json:"spanRecall,omitempty"`
	// ExpandedSpanRecall is the share of those bytes their expanded context covers.
	// +optional
	ExpandedSpanRecall *float64 `json:"expandedSpanRecall,omitempty"`
	// TokensReturned is the words of the top K chunks per query (text split at white space).
	TokensReturned float64 `json:"tokensReturned"`
	// ExpandedTokensReturned is the words of their expanded context: what the recall costs a
	// reader.
	ExpandedTokensReturned float64 `json:"expandedTokensReturned"`
}

// ConcurrencyPolicy is what a schedule slot does while the previous run still runs.
// +kubebuilder:validation:Enum=Forbid;Replace
type ConcurrencyPolicy string

// Concurrency policies of a scheduled Evaluation.
const (
	// ConcurrencyForbid: the run in progress finishes; the latest slot that passed meanwhile
	// starts the next run when it ends.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyReplace: a new slot deletes the running Job and starts its own.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// QualityAlert says when a run counts as a quality drop from the baseline run.
type QualityAlert struct {
	// MaxDrop is the recall@10 drop a run may show against the baseline run (status.baseline)
	// before QualityDropped=True, in [0, 1]: True when the upper bound of the 95% paired
	// bootstrap interval of the mean difference run − baseline over the same queries is
	// below −maxDrop (a one-sided test at 2.5%, the mirror of the rollout gate's
	// non-inferiority test). A drop of exactly maxDrop is allowed.
	// +kubebuilder:validation:XValidation:rule="self >= 0.0 && self <= 1.0",message="maxDrop must be between 0 and 1"
	MaxDrop float64 `json:"maxDrop"`
}

// EvaluationRun is one completed run of an Evaluation in status.history.
type EvaluationRun struct {
	// Job is the run's Job.
	Job string `json:"job"`
	// Revision of the Index evaluated.
	Revision string `json:"revision"`
	// CorpusRevision is the Corpus revision that revision held when the run's Job was made.
	// +optional
	CorpusRevision string `json:"corpusRevision,omitempty"`
	// Queries evaluated.
	Queries int32 `json:"queries"`
	// RecallAt10 is mean recall@10, rounded to 4 decimals.
	// +optional
	RecallAt10 *float64 `json:"recallAt10,omitempty"`
	// RecallInterval is recall@10's 95% interval.
	// +optional
	RecallInterval *ConfidenceInterval `json:"recallInterval,omitempty"`
	// CompletionTime of the run.
	CompletionTime metav1.Time `json:"completionTime"`
	// ScheduleTime is the spec.schedule slot the run was started for (absent for a run not
	// started by the schedule). It seeds the run's bootstrap intervals together with the
	// Evaluation's UID and the metric, so the run can be reproduced.
	// +optional
	ScheduleTime *metav1.Time `json:"scheduleTime,omitempty"`
}

// DriftBaseline is the run spec.alert compares later runs with: the first run with stored
// per-query results on the revision measured, under the same measurement (status.measurement).
// A run on another revision, under another measurement or on other queries becomes the new
// baseline.
type DriftBaseline struct {
	EvaluationRun `json:",inline"`
	// Measurement is the status.measurement of that run.
	Measurement string `json:"measurement"`
	// Results locates its per-query results: a ConfigMap "<evaluation>-baseline" owned by the
	// Evaluation, in the format of status.results.
	Results PerQueryResults `json:"results"`
}

// MetricsAtK are the mean metrics over the queries at one cut-off, rounded to 4 decimals.
type MetricsAtK struct {
	// K is the cut-off.
	K int32 `json:"k"`
	// Recall is mean recall@k.
	Recall float64 `json:"recall"`
	// NDCG is mean nDCG@k.
	NDCG float64 `json:"ndcg"`
	// MRR is mean reciprocal rank at k.
	MRR float64 `json:"mrr"`
	// Success is the share of queries with a relevant document in the top k.
	Success float64 `json:"success"`
	// MAP is mean average precision at k.
	MAP float64 `json:"map"`
	// SpanHit is the share of queries whose top k chunks overlap an annotated relevant
	// span (datasets with query_spans.jsonl; absent otherwise).
	// +optional
	SpanHit *float64 `json:"spanHit,omitempty"`
	// RecallInterval, NDCGInterval, MRRInterval, SuccessInterval, MAPInterval and
	// SpanHitInterval are the uncertainty of the means above (see ConfidenceInterval);
	// absent when the worker could not report them.
	// +optional
	RecallInterval *ConfidenceInterval `json:"recallInterval,omitempty"`
	// +optional
	NDCGInterval *ConfidenceInterval `json:"ndcgInterval,omitempty"`
	// +optional
	MRRInterval *ConfidenceInterval `json:"mrrInterval,omitempty"`
	// +optional
	SuccessInterval *ConfidenceInterval `json:"successInterval,omitempty"`
	// +optional
	MAPInterval *ConfidenceInterval `json:"mapInterval,omitempty"`
	// +optional
	SpanHitInterval *ConfidenceInterval `json:"spanHitInterval,omitempty"`
}

// ConfidenceInterval is the uncertainty of a mean metric over the evaluated queries: the
// 95% percentile bootstrap interval (10,000 resamples of the queries, seeded from the
// Evaluation's UID and the metric, so the same per-query values give the same bounds) and
// the bootstrap standard error, all rounded to 4 decimals. A percentile interval need not
// be symmetric around the mean.
type ConfidenceInterval struct {
	// Lower bound of the 95% interval.
	Lower float64 `json:"lower"`
	// Upper bound of the 95% interval.
	Upper float64 `json:"upper"`
	// StdErr is the bootstrap standard error of the mean.
	StdErr float64 `json:"stdErr"`
}

// PerQueryResults says where an Evaluation's per-query results are kept: a ConfigMap in
// its namespace, owned by it, holding them gzip-compressed under binaryData key
// results.json.gz (format ragops.dev/per-query-results/v1, at most 1,000,000 bytes).
type PerQueryResults struct {
	// ConfigMap is the name of the ConfigMap ("<evaluation>-results").
	ConfigMap string `json:"configMap"`
	// Queries is the number of queries it holds.
	Queries int32 `json:"queries"`
	// Bytes is the size of the compressed results.
	Bytes int64 `json:"bytes"`
	// SHA256 is the hex SHA-256 of the compressed results, as the worker reported it.
	SHA256 string `json:"sha256"`
}

// EvaluationStatus is the observed state of an Evaluation.
type EvaluationStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled, ResultsStored (whether the per-query
	// results of the last run are kept, and why not) and, with spec.alert, QualityDropped.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision of the Index that was evaluated.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Measurement is a hash of the spec fields that decide what a run measures (indexRef,
	// revision, queryEmbedding, expand and the evaluation parameters: dataset, mode, hybrid,
	// k, maxQueries, rerank, template) as of the run whose figures status holds. A change of
	// them runs the Evaluation again; schedule, concurrencyPolicy, alert, historyLimit and
	// rerunOnRevisionChange do not.
	// +optional
	Measurement string `json:"measurement,omitempty"`
	// CorpusRevision is the Corpus content revision the evaluated revision held when the last
	// run's Job was made: the figures and per-query results are of that corpus. The gate
	// compares two revisions only on measurements of the same corpus revision.
	// +optional
	CorpusRevision string `json:"corpusRevision,omitempty"`
	// LastHandledRetry is the value of the ragops.dev/retry annotation whose Job the
	// Evaluation last started: a new value runs the Evaluation again (a failed one included).
	// +optional
	LastHandledRetry string `json:"lastHandledRetry,omitempty"`
	// Queries evaluated.
	// +optional
	Queries int32 `json:"queries,omitempty"`
	// RecallAt10 is mean recall@10, rounded to 4 decimals.
	// +optional
	RecallAt10 *float64 `json:"recallAt10,omitempty"`
	// NDCGAt10 is mean nDCG@10, rounded to 4 decimals.
	// +optional
	NDCGAt10 *float64 `json:"ndcgAt10,omitempty"`
	// MRRAt10 is mean MRR@10, rounded to 4 decimals.
	// +optional
	MRRAt10 *float64 `json:"mrrAt10,omitempty"`
	// Metrics at every cut-off of spec.k (and 10).
	// +optional
	// +listType=map
	// +listMapKey=k
	Metrics []MetricsAtK `json:"metrics,omitempty"`
	// SpanHitRate is the share of queries whose top-k chunks overlap an annotated relevant span
	// (datasets with query_spans.jsonl), rounded to 4 decimals.
	// +optional
	SpanHitRate *float64 `json:"spanHitRate,omitempty"`
	// Results locates the per-query results of the last run (absent while they are not
	// stored; the ResultsStored condition says why).
	// +optional
	Results *PerQueryResults `json:"results,omitempty"`
	// UnknownQrels counts judgements naming a query or document absent from the dataset; they are
	// left out of the metrics.
	// +optional
	UnknownQrels int32 `json:"unknownQrels,omitempty"`
	// UnreadableChunks counts the retrieved chunks of an Evaluation with spec.as whose groups
	// share none of the persona's: a leak; 0 when the access filter holds.
	// +optional
	UnreadableChunks *int64 `json:"unreadableChunks,omitempty"`
	// Expansion holds the small-to-big figures of the last run (spec.expand).
	// +optional
	Expansion *ExpansionMetrics `json:"expansion,omitempty"`
	// StartTime of the last run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime of the last run.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// LastScheduleTime is the spec.schedule time of the latest scheduled run.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// History holds the last spec.historyLimit runs, newest last.
	// +optional
	History []EvaluationRun `json:"history,omitempty"`
	// Baseline is the run QualityDropped compares each later run with (spec.alert only).
	// +optional
	Baseline *DriftBaseline `json:"baseline,omitempty"`
}

// Evaluation measures an Index's retrieval quality (recall@k, nDCG@k, MRR@k) on a dataset.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=eval;evals,categories=rag
// +kubebuilder:printcolumn:name="Index",type=string,JSONPath=`.spec.indexRef.name`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Recall@10",type=number,JSONPath=`.status.recallAt10`
// +kubebuilder:printcolumn:name="nDCG@10",type=number,JSONPath=`.status.ndcgAt10`
// +kubebuilder:printcolumn:name="MRR@10",type=number,JSONPath=`.status.mrrAt10`
// +kubebuilder:printcolumn:name="Queries",type=integer,JSONPath=`.status.queries`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="SpanHit@10",type=number,priority=1,JSONPath=`.status.spanHitRate`
// +kubebuilder:printcolumn:name="Revision",type=string,priority=1,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Evaluation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EvaluationSpec   `json:"spec"`
	Status EvaluationStatus `json:"status,omitempty"`
}

// EvaluationList is a list of Evaluation.
// +kubebuilder:object:root=true
type EvaluationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Evaluation `json:"items"`
}

func init() { SchemeBuilder.Register(&Evaluation{}, &EvaluationList{}) }
