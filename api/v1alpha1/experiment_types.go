package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectiveMetric is the metric an Experiment ranks its candidates by; each names a field of
// an Evaluation's status.metrics entry (MetricsAtK).
// +kubebuilder:validation:Enum=recall;ndcg;mrr;spanHit
type ObjectiveMetric string

// Objective metrics.
const (
	ObjectiveRecall  ObjectiveMetric = "recall"
	ObjectiveNDCG    ObjectiveMetric = "ndcg"
	ObjectiveMRR     ObjectiveMetric = "mrr"
	ObjectiveSpanHit ObjectiveMetric = "spanHit"
)

// ExperimentObjective is what the Experiment maximises. It is immutable: finished trials
// were measured and ranked on it, and the Evaluations that could measure them again go
// with the cleanup.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="objective is immutable: the trials were measured and ranked on it (and cleaned-up trials cannot be measured again); create a new Experiment to rank on another metric or k"
type ExperimentObjective struct {
	// Metric at cut-off K; spanHit needs a dataset with query_spans.jsonl.
	Metric ObjectiveMetric `json:"metric"`
	// K is the cut-off of the metric.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	K int32 `json:"k,omitempty"`
}

// SearchAlgorithm picks the trials of the space.
// +kubebuilder:validation:Enum=Grid;Random
type SearchAlgorithm string

// Search algorithms.
const (
	// AlgorithmGrid runs every combination of the space.
	AlgorithmGrid SearchAlgorithm = "Grid"
	// AlgorithmRandom runs maxTrials combinations drawn without replacement with the seed.
	AlgorithmRandom SearchAlgorithm = "Random"
)

// ExperimentAlgorithm is how trials are chosen from the space.
// +kubebuilder:validation:XValidation:rule="self.type != 'Random' || has(self.maxTrials)",fieldPath=".maxTrials",reason=FieldValueRequired,message="maxTrials is required when type is Random"
type ExperimentAlgorithm struct {
	// Type Grid or Random.
	// +optional
	// +kubebuilder:default=Grid
	Type SearchAlgorithm `json:"type,omitempty"`
	// Seed of the Random draw (the same seed and space give the same trials).
	// +optional
	// +kubebuilder:default=1
	Seed int64 `json:"seed,omitempty"`
	// MaxTrials is the number of trials drawn (Random) or the largest grid accepted (Grid).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxTrials *int32 `json:"maxTrials,omitempty"`
}

// StrategyTemplate is a family of ChunkingStrategies: every combination of types, sizes,
// overlaps and late settings, each with the option blocks its type uses (slidingWindow for
// SlidingWindow, heading for Heading, semantic for Semantic, cluster for Cluster, sentence for
// Sentence, Semantic and Cluster, recursive for Recursive and Heading). Combinations whose
// overlap is not below their size, or whose sliding stride exceeds their size, are left out;
// the overlap of types that take none (SlidingWindow, Semantic, Cluster) is 0, so the
// combinations that differ only there are one trial.
// +kubebuilder:validation:XValidation:rule="!self.types.exists(t, t == 'SlidingWindow') || has(self.slidingWindow)",fieldPath=".slidingWindow",reason=FieldValueRequired,message="slidingWindow is required when types has SlidingWindow"
// +kubebuilder:validation:XValidation:rule="!self.types.exists(t, t == 'Heading') || has(self.heading)",fieldPath=".heading",reason=FieldValueRequired,message="heading is required when types has Heading"
// +kubebuilder:validation:XValidation:rule="!self.types.exists(t, t == 'Semantic') || has(self.semantic)",fieldPath=".semantic",reason=FieldValueRequired,message="semantic is required when types has Semantic"
// +kubebuilder:validation:XValidation:rule="!self.types.exists(t, t == 'Cluster') || has(self.cluster)",fieldPath=".cluster",reason=FieldValueRequired,message="cluster is required when types has Cluster"
type StrategyTemplate struct {
	// Name prefixes the generated strategies' names, e.g. fixed gives fixed-512-o64.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=24
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Types of boundary strategy.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Types []StrategyType `json:"types"`
	// Unit of sizes and overlaps.
	// +optional
	// +kubebuilder:default=Tokens
	Unit SizeUnit `json:"unit,omitempty"`
	// Sizes in Unit (the window for SlidingWindow).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65536
	Sizes []int32 `json:"sizes"`
	// Overlaps in Unit (Fixed, Sentence, Paragraph, Recursive, Heading).
	// +optional
	// +kubebuilder:default={0}
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=0
	Overlaps []int32 `json:"overlaps,omitempty"`
	// Late lists the late chunking settings to try: {enabled: false} for naive embedding,
	// {enabled: true, window: W, windowOverlap: O} for late chunking with macro window W.
	// +optional
	// +kubebuilder:default={{enabled: false, window: 512, windowOverlap: 128}}
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Late []LateChunkingOptions `json:"late,omitempty"`

	// SlidingWindow options; required when types has SlidingWindow.
	// +optional
	SlidingWindow *SlidingWindowOptions `json:"slidingWindow,omitempty"`
	// Sentence segmentation options (Sentence, Semantic and Cluster).
	// +optional
	Sentence *SentenceOptions `json:"sentence,omitempty"`
	// Recursive splitting options (Recursive and Heading).
	// +optional
	Recursive *RecursiveOptions `json:"recursive,omitempty"`
	// Heading options; required when types has Heading.
	// +optional
	Heading *HeadingOptions `json:"heading,omitempty"`
	// Semantic options; required when types has Semantic.
	// +optional
	Semantic *SemanticOptions `json:"semantic,omitempty"`
	// Cluster options; required when types has Cluster.
	// +optional
	Cluster *ClusterOptions `json:"cluster,omitempty"`
}

// StrategyCandidate is one entry of the space's strategies: an existing ChunkingStrategy
// (one candidate) or a template (one candidate per combination).
// +kubebuilder:validation:XValidation:rule="has(self.strategyRef) != has(self.template)",message="exactly one of strategyRef and template must be set"
type StrategyCandidate struct {
	// StrategyRef names a ChunkingStrategy in the Experiment's namespace.
	// +optional
	StrategyRef *LocalObjectReference `json:"strategyRef,omitempty"`
	// Template generates ChunkingStrategies owned by the Experiment.
	// +optional
	Template *StrategyTemplate `json:"template,omitempty"`
}

// RetrievalCandidate is a retrieval mode to evaluate every trial's build with; Hybrid is tried
// with every combination of alphas and fusions.
// +kubebuilder:validation:XValidation:rule="self.mode == 'Hybrid' || (!has(self.alphas) && !has(self.fusions))",fieldPath=".alphas",reason=FieldValueForbidden,message="alphas and fusions may only be set when mode is Hybrid"
type RetrievalCandidate struct {
	// Mode of retrieval.
	Mode RetrievalMode `json:"mode"`
	// Alphas weigh dense against BM25 (Hybrid): 1 is pure dense, 0 pure BM25. Unset means 0.5.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=11
	// +kubebuilder:validation:XValidation:rule="self.all(a, a >= 0.0 && a <= 1.0)",message="every alpha must be between 0 and 1"
	Alphas []float64 `json:"alphas,omitempty"`
	// Fusions of the two result lists (Hybrid). Unset means RelativeScoreFusion.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	Fusions []FusionType `json:"fusions,omitempty"`
}

// SearchSpace is what an Experiment varies. A trial is one (strategy, model) pair, built once
// as one Index; every retrieval variant is an Evaluation of that build.
type SearchSpace struct {
	// Strategies to try.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Strategies []StrategyCandidate `json:"strategies"`
	// Models to try (the Index's model spec); names must differ.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(m, self.exists_one(n, n.name == m.name))",message="model names must be unique"
	Models []ModelSpec `json:"models"`
	// Modes of retrieval to evaluate every build with.
	// +optional
	// +kubebuilder:default={{mode: Dense}}
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Modes []RetrievalCandidate `json:"modes,omitempty"`
}

// TrialIndexTemplate is the part of every trial's Index that the Experiment does not vary.
type TrialIndexTemplate struct {
	// Weaviate is where the trials' collections are written.
	Weaviate WeaviateSpec `json:"weaviate"`
	// Embedder configures the trials' embedding Jobs.
	// +optional
	// +kubebuilder:default={device: "cpu", shards: 1, threads: 1}
	Embedder EmbedderSpec `json:"embedder,omitempty"`
	// VectorIndex of the trials' collections.
	// +optional
	// +kubebuilder:default={type: "hnsw", distance: "cosine", efConstruction: 128, maxConnections: 32}
	VectorIndex VectorIndexSpec `json:"vectorIndex,omitempty"`
}

// ExperimentBudget bounds what an Experiment spends.
type ExperimentBudget struct {
	// MaxTokens is the most embedded tokens (special tokens included, as Index revisions
	// count them) all trials may spend; a trial whose estimate would pass it is not started.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxTokens *int64 `json:"maxTokens,omitempty"`
	// MaxTrials is the most trials (builds) started, failed ones included.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxTrials *int32 `json:"maxTrials,omitempty"`
}

// ScreeningRound first builds every trial on a seeded subset of the corpus (every judged
// document plus Fraction of the rest) and builds only the TopN best on the whole corpus.
type ScreeningRound struct {
	// Fraction of the unjudged documents in the subset, in (0, 1).
	// +kubebuilder:validation:XValidation:rule="self > 0.0 && self < 1.0",message="fraction must be between 0 and 1 (exclusive)"
	Fraction float64 `json:"fraction"`
	// Seed of the subset draw.
	// +optional
	// +kubebuilder:default=1
	Seed int64 `json:"seed,omitempty"`
	// TopN trials go on to a full build.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TopN int32 `json:"topN,omitempty"`
}

// ExperimentBaseline names the candidate every other is compared with.
type ExperimentBaseline struct {
	// Strategy is a candidate's strategy name: a strategyRef's name or a generated
	// template name (<template>-<size>[-o<overlap>][-late<window>], see the trial names).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Strategy string `json:"strategy"`
	// Model is a model name of the space; unset means the first.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Model string `json:"model,omitempty"`
	// Retrieval is a retrieval variant name: dense, bm25 or hybrid-a<alpha>-<rsf|rrf>
	// (e.g. hybrid-a0.5-rsf); unset means the first variant of the space.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Retrieval string `json:"retrieval,omitempty"`
}

// CleanupPolicy says which trials keep their Index (and collections) when the Experiment is
// done.
// +kubebuilder:validation:Enum=DeleteLosers;KeepLeaderboard;KeepAll
type CleanupPolicy string

// Cleanup policies.
const (
	// CleanupDeleteLosers keeps the winner's and the baseline's trials only.
	CleanupDeleteLosers CleanupPolicy = "DeleteLosers"
	// CleanupKeepLeaderboard keeps the trials on the leaderboard and the baseline's.
	CleanupKeepLeaderboard CleanupPolicy = "KeepLeaderboard"
	// CleanupKeepAll keeps every trial.
	CleanupKeepAll CleanupPolicy = "KeepAll"
)

// ExperimentPromotion applies the winner to an Index.
type ExperimentPromotion struct {
	// IndexRef names the Index whose strategyRef and model take the winner's; it rolls out
	// through its own rollout policy (gate).
	IndexRef LocalObjectReference `json:"indexRef"`
}

// PromotionStatus is the winner an Experiment applied to an Index (spec.promote).
type PromotionStatus struct {
	// Index whose spec.strategyRef and spec.model were set.
	Index string `json:"index"`
	// Strategy is the ChunkingStrategy the Index now names: the winner's spec under its
	// trial's strategy name, not owned by the Experiment (it outlives it).
	Strategy string `json:"strategy"`
	// Model is the winner's model name.
	Model string `json:"model"`
	// Trial and Retrieval name the winning candidate.
	Trial string `json:"trial"`
	// +optional
	Retrieval string `json:"retrieval,omitempty"`
	// ObservedGeneration is the Experiment generation whose winner was applied; a later
	// generation's winner is applied again.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Time the Index was patched.
	Time metav1.Time `json:"time"`
}

// ExperimentSpec is a sweep over chunking strategies, models and retrieval modes on one
// corpus and dataset, under a budget. Its status lists every trial with every retrieval
// variant, so the space is bounded at admission: trials (screening ones included) x
// (variants + 8) at most 6000, at most about 1.1 MB of status, under etcd's 1.5 MiB object limit.
// +kubebuilder:validation:XValidation:rule="self.algorithm.type != 'Grid' || self.space.strategies.map(s, has(s.template) ? size(s.template.types) * size(s.template.sizes) * (has(s.template.overlaps) ? size(s.template.overlaps) : 1) * (has(s.template.late) ? size(s.template.late) : 1) : 1).sum() * size(self.space.models) <= (has(self.algorithm.maxTrials) ? self.algorithm.maxTrials : 1000)",fieldPath=".algorithm.maxTrials",messageExpression="'the Grid space lists %d trials (strategy combinations x models), more than algorithm.maxTrials (%d; 1000 when unset)'.format([self.space.strategies.map(s, has(s.template) ? size(s.template.types) * size(s.template.sizes) * (has(s.template.overlaps) ? size(s.template.overlaps) : 1) * (has(s.template.late) ? size(s.template.late) : 1) : 1).sum() * size(self.space.models), has(self.algorithm.maxTrials) ? self.algorithm.maxTrials : 1000])"
// +kubebuilder:validation:XValidation:rule="self.algorithm.type != 'Grid' || !has(self.budget) || !has(self.budget.maxTrials) || (has(self.screening) && (has(self.screening.topN) ? self.screening.topN : 3) + (has(self.baseline) ? 1 : 0) <= self.budget.maxTrials) || self.space.strategies.map(s, has(s.template) ? size(s.template.types) * size(s.template.sizes) * (has(s.template.overlaps) ? size(s.template.overlaps) : 1) * (has(s.template.late) ? size(s.template.late) : 1) : 1).sum() * size(self.space.models) <= self.budget.maxTrials",fieldPath=".budget.maxTrials",messageExpression="'the Grid space lists %d trials (strategy combinations x models), more than budget.maxTrials %d (with spec.screening, only screening.topN and the baseline must fit)'.format([self.space.strategies.map(s, has(s.template) ? size(s.template.types) * size(s.template.sizes) * (has(s.template.overlaps) ? size(s.template.overlaps) : 1) * (has(s.template.late) ? size(s.template.late) : 1) : 1).sum() * size(self.space.models), self.budget.maxTrials])"
// +kubebuilder:validation:XValidation:rule="self.algorithm.type != 'Random' || !has(self.budget) || !has(self.budget.maxTrials) || !has(self.algorithm.maxTrials) || (has(self.screening) && (has(self.screening.topN) ? self.screening.topN : 3) + (has(self.baseline) ? 1 : 0) <= self.budget.maxTrials) || self.algorithm.maxTrials <= self.budget.maxTrials",fieldPath=".algorithm.maxTrials",message="algorithm.maxTrials must not exceed budget.maxTrials (with spec.screening, only screening.topN and the baseline must fit)"
// +kubebuilder:validation:XValidation:rule="!has(self.baseline) || !has(self.baseline.model) || self.space.models.exists(m, m.name == self.baseline.model)",fieldPath=".baseline.model",message="baseline.model must name a model of space.models"
// +kubebuilder:validation:XValidation:rule="((self.algorithm.type == 'Grid' ? self.space.strategies.map(s, has(s.template) ? size(s.template.types) * size(s.template.sizes) * (has(s.template.overlaps) ? size(s.template.overlaps) : 1) * (has(s.template.late) ? size(s.template.late) : 1) : 1).sum() * size(self.space.models) : (has(self.algorithm.maxTrials) ? self.algorithm.maxTrials : 1000)) * (has(self.screening) ? 2 : 1)) * ((has(self.space.modes) ? self.space.modes.map(m, (has(m.alphas) ? size(m.alphas) : 1) * (has(m.fusions) ? size(m.fusions) : 1)).sum() : 1) + 8) <= 6000",fieldPath=".space.modes",messageExpression="'status.trials would hold %d trials (screening ones included) x %d retrieval variants: more than an object can hold in etcd (trials x (variants + 8) must not exceed 6000); narrow the space, the modes or algorithm.maxTrials, or split the Experiment'.format([((self.algorithm.type == 'Grid' ? self.space.strategies.map(s, has(s.template) ? size(s.template.types) * size(s.template.sizes) * (has(s.template.overlaps) ? size(s.template.overlaps) : 1) * (has(s.template.late) ? size(s.template.late) : 1) : 1).sum() * size(self.space.models) : (has(self.algorithm.maxTrials) ? self.algorithm.maxTrials : 1000)) * (has(self.screening) ? 2 : 1)), (has(self.space.modes) ? self.space.modes.map(m, (has(m.alphas) ? size(m.alphas) : 1) * (has(m.fusions) ? size(m.fusions) : 1)).sum() : 1)])"
type ExperimentSpec struct {
	// CorpusRef names the Corpus every trial indexes.
	CorpusRef LocalObjectReference `json:"corpusRef"`
	// Dataset of queries and relevance judgements every trial is evaluated on.
	Dataset DatasetSource `json:"dataset"`
	// MaxQueries caps the number of queries (0 means all with qrels).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxQueries int32 `json:"maxQueries,omitempty"`
	// Objective the candidates are ranked by.
	Objective ExperimentObjective `json:"objective"`
	// Space of strategies, models and retrieval modes.
	Space SearchSpace `json:"space"`
	// Algorithm choosing the trials.
	// +optional
	// +kubebuilder:default={type: "Grid", seed: 1}
	Algorithm ExperimentAlgorithm `json:"algorithm,omitempty"`
	// IndexTemplate is what every trial's Index shares.
	IndexTemplate TrialIndexTemplate `json:"indexTemplate"`
	// EvaluationTemplate holds image, resources and scheduling of the evaluation pods.
	// +optional
	EvaluationTemplate JobTemplate `json:"evaluationTemplate,omitempty"`
	// Parallelism is the number of trial builds running at once.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Parallelism int32 `json:"parallelism,omitempty"`
	// Budget bounds tokens and trials.
	// +optional
	Budget *ExperimentBudget `json:"budget,omitempty"`
	// Screening runs a first round on a subset of the corpus.
	// +optional
	Screening *ScreeningRound `json:"screening,omitempty"`
	// Baseline is the candidate every other is compared with; unset means the first
	// strategy, model and retrieval variant of the space.
	// +optional
	Baseline *ExperimentBaseline `json:"baseline,omitempty"`
	// LeaderboardSize is how many candidates status.leaderboard holds.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	LeaderboardSize int32 `json:"leaderboardSize,omitempty"`
	// Cleanup says which trials keep their Index when the Experiment is done.
	// +optional
	// +kubebuilder:default=DeleteLosers
	Cleanup CleanupPolicy `json:"cleanup,omitempty"`
	// MaxFailedTrials is how many trial builds may fail before the Experiment stops
	// (Stalled, reason TooManyFailedTrials).
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MaxFailedTrials int32 `json:"maxFailedTrials,omitempty"`
	// Promote applies the winner to an Index when the Experiment is done.
	// +optional
	Promote *ExperimentPromotion `json:"promote,omitempty"`
}

// TrialPhase is the life-cycle phase of one trial.
// +kubebuilder:validation:Enum=Pending;Building;Evaluating;Succeeded;Failed;Skipped
type TrialPhase string

// Trial phases.
const (
	// TrialPending: not started (parallelism, or waiting for the budget decision).
	TrialPending TrialPhase = "Pending"
	// TrialBuilding: its Index is building.
	TrialBuilding TrialPhase = "Building"
	// TrialEvaluating: built; its Evaluations run.
	TrialEvaluating TrialPhase = "Evaluating"
	// TrialSucceeded: built and every Evaluation finished.
	TrialSucceeded TrialPhase = "Succeeded"
	// TrialFailed: its build or an Evaluation failed.
	TrialFailed TrialPhase = "Failed"
	// TrialSkipped: not run (its estimate would pass the token budget, the trial budget was
	// spent, or screening left it out).
	TrialSkipped TrialPhase = "Skipped"
)

// Experiment condition types and reasons, besides kstatus's Ready, Reconciling and Stalled.
const (
	// ConditionBudgetExhausted is True when a trial was not started because its estimate
	// would pass spec.budget.maxTokens (or the trial budget was spent); the message gives the
	// numbers.
	ConditionBudgetExhausted = "BudgetExhausted"
	// ReasonBudgetExhausted is the reason of the BudgetExhausted condition.
	ReasonBudgetExhausted = "BudgetExhausted"
	// ReasonTooManyFailedTrials is the Stalled reason when more than maxFailedTrials failed.
	ReasonTooManyFailedTrials = "TooManyFailedTrials"
	// ConditionPromoted is True once the winner was applied to spec.promote.indexRef (the
	// Index then rolls out through its own rollout policy) and False, with a reason, when it
	// cannot be: ReasonPromotionIndexNotFound, ReasonPromotionConflict, ReasonNoWinner,
	// ReasonNotBetterThanBaseline.
	// Informational, outside kstatus: Ready says the Experiment is done either way.
	ConditionPromoted = "Promoted"
	// ReasonPromoted: the Index names the winner's strategy and model.
	ReasonPromoted = "Promoted"
	// ReasonPromotionIndexNotFound: spec.promote.indexRef names no Index.
	ReasonPromotionIndexNotFound = "IndexNotFound"
	// ReasonPromotionConflict: a ChunkingStrategy of the winner's name exists with another
	// spec, or the Index is one of the Experiment's own trials.
	ReasonPromotionConflict = "PromotionConflict"
	// ReasonNoWinner: no candidate was measured.
	ReasonNoWinner = "NoWinner"
	// ReasonNotBetterThanBaseline: the winner is not shown better than the baseline (tied
	// with it after the adjustment for the candidates compared, not paired with it, or the
	// baseline itself); the Index is left as it is.
	ReasonNotBetterThanBaseline = "NotBetterThanBaseline"
	// ConditionScreened reports spec.screening's round: False (ReasonScreening) while its
	// builds on the sample run, True (ReasonScreeningDone) once it chose the trials that go
	// on to a full build; absent without spec.screening. Informational.
	ConditionScreened = "Screened"
	// ReasonScreening: screening trials are still building or evaluating.
	ReasonScreening = "Screening"
	// ReasonScreeningDone: every screening trial finished; the message names the trials
	// that go on.
	ReasonScreeningDone = "ScreeningDone"
	// ReasonInvalidSpace is the Stalled reason when the space fails validation the CRD
	// cannot express (names, baseline, grid size after expansion).
	ReasonInvalidSpace = "InvalidSpace"
)

// Experiment labels on every child (ChunkingStrategy, Index, Evaluation).
const (
	// LabelExperiment holds the Experiment's name.
	LabelExperiment = "ragops.dev/experiment"
	// LabelTrial holds the trial's name.
	LabelTrial = "ragops.dev/trial"
	// LabelRetrieval holds an Evaluation's retrieval variant name.
	LabelRetrieval = "ragops.dev/retrieval"
)

// TrialCounts counts the trials by phase.
type TrialCounts struct {
	// Total trials chosen from the space.
	// +optional
	Total int32 `json:"total"`
	// Pending trials (not started).
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// Building trials.
	// +optional
	Building int32 `json:"building,omitempty"`
	// Evaluating trials.
	// +optional
	Evaluating int32 `json:"evaluating,omitempty"`
	// Succeeded trials.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed trials.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Skipped trials.
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
}

// TrialEvaluation is one retrieval variant's Evaluation of a trial.
type TrialEvaluation struct {
	// Retrieval variant name (dense, bm25, hybrid-a0.5-rsf, ...).
	Retrieval string `json:"retrieval"`
	// Evaluation is the Evaluation's name.
	Evaluation string `json:"evaluation"`
	// Objective value of the variant, rounded to 4 decimals, once evaluated.
	// +optional
	Objective *float64 `json:"objective,omitempty"`
}

// TrialStatus is one trial: a (strategy, model) pair and its build.
type TrialStatus struct {
	// Name of the trial (also of its Index).
	Name string `json:"name"`
	// Strategy is the candidate's strategy name; StrategyRef the ChunkingStrategy built with.
	Strategy string `json:"strategy"`
	// +optional
	StrategyRef string `json:"strategyRef,omitempty"`
	// Model name.
	Model string `json:"model"`
	// Parameters of the trial for display (type, size, overlap, late, window, model).
	// +optional
	Parameters map[string]string `json:"parameters,omitempty"`
	// Revision hash of its build; trials with the same revision share one build.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Phase of the trial.
	Phase TrialPhase `json:"phase"`
	// Screening marks a build of the screening subset.
	// +optional
	Screening bool `json:"screening,omitempty"`
	// EstimatedTokens before the start, from EstimateSampleDocuments sampled documents.
	// +optional
	EstimatedTokens int64 `json:"estimatedTokens,omitempty"`
	// +optional
	EstimateSampleDocuments int64 `json:"estimateSampleDocuments,omitempty"`
	// EstimateError says why the trial has no estimate (its estimate Job failed, or could not
	// estimate it); such a trial starts only while no other build runs and the budget is not
	// spent.
	// +optional
	EstimateError string `json:"estimateError,omitempty"`
	// Tokens embedded by its build (the revision's status).
	// +optional
	Tokens int64 `json:"tokens,omitempty"`
	// Chunks stored.
	// +optional
	Chunks int64 `json:"chunks,omitempty"`
	// StorageBytes its build wrote: chunk text plus float32 vectors (the revision's
	// storedBytes; index structures not counted).
	// +optional
	StorageBytes int64 `json:"storageBytes,omitempty"`
	// BuildSeconds from the build's start to its completion.
	// +optional
	BuildSeconds int64 `json:"buildSeconds,omitempty"`
	// Evaluations of the trial, one per retrieval variant.
	// +optional
	// +listType=map
	// +listMapKey=retrieval
	Evaluations []TrialEvaluation `json:"evaluations,omitempty"`
	// Message explains a Failed or Skipped phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// ObjectiveValue is a measured objective with its confidence interval (from the per-query
// values; absent until the Evaluation reports them).
type ObjectiveValue struct {
	// Value is the mean over the queries, rounded to 4 decimals.
	Value float64 `json:"value"`
	// IntervalLower and IntervalUpper bound the confidence interval of the mean.
	// +optional
	IntervalLower *float64 `json:"intervalLower,omitempty"`
	// +optional
	IntervalUpper *float64 `json:"intervalUpper,omitempty"`
	// ConfidenceLevel of the interval, e.g. "0.95".
	// +optional
	ConfidenceLevel string `json:"confidenceLevel,omitempty"`
	// Queries the mean is over.
	// +optional
	Queries int32 `json:"queries,omitempty"`
}

// LeaderboardEntry is one candidate (a trial and a retrieval variant), ranked.
type LeaderboardEntry struct {
	// Rank, 1 is best.
	Rank int32 `json:"rank"`
	// Trial name.
	Trial string `json:"trial"`
	// Retrieval variant name.
	Retrieval string `json:"retrieval"`
	// Parameters of the candidate (the trial's plus mode, alpha, fusion).
	// +optional
	Parameters map[string]string `json:"parameters,omitempty"`
	// Objective with its interval.
	Objective ObjectiveValue `json:"objective"`
	// Metrics at the objective's cut-off.
	// +optional
	Metrics *MetricsAtK `json:"metrics,omitempty"`
	// Tokens, Chunks, StorageBytes and BuildSeconds of the trial's build.
	// +optional
	Tokens int64 `json:"tokens,omitempty"`
	// +optional
	Chunks int64 `json:"chunks,omitempty"`
	// +optional
	StorageBytes int64 `json:"storageBytes,omitempty"`
	// +optional
	BuildSeconds int64 `json:"buildSeconds,omitempty"`
	// VsBest compares the best candidate (rank 1) with this one over the same queries, in
	// one max-range permutation test over every candidate that pairs with the best (so the
	// comparison is adjusted for how many were compared); absent on the best itself and
	// where the two Evaluations' per-query results cannot be paired.
	// +optional
	VsBest *CandidateComparison `json:"vsBest,omitempty"`
	// TiedWithBest is set when the adjusted test does not tell this candidate from the best
	// (vsBest's adjusted p-value at least 0.05, exactly when its simultaneous interval holds
	// 0): its rank below the best is not evidence that it is worse.
	// +optional
	TiedWithBest bool `json:"tiedWithBest,omitempty"`
}

// CandidateComparison is a comparison of a candidate with another over the same queries,
// from the max-range permutation test over all the Experiment's comparable candidates
// (randomized Tukey HSD; Westfall and Young's max-statistic adjustment).
type CandidateComparison struct {
	// Trial and Retrieval name the other candidate.
	Trial     string `json:"trial"`
	Retrieval string `json:"retrieval"`
	// Difference of the objective means (this candidate minus other: the best minus this
	// entry in vsBest), rounded to 4 decimals.
	Difference float64 `json:"difference"`
	// IntervalLower and IntervalUpper bound the difference's simultaneous 95% interval
	// (difference ± the 95th percentile of the permuted largest difference between any two
	// candidates); it holds 0 exactly when the two are tied.
	// +optional
	IntervalLower *float64 `json:"intervalLower,omitempty"`
	// +optional
	IntervalUpper *float64 `json:"intervalUpper,omitempty"`
	// PValue is the adjusted p-value: the share of permutations whose largest difference
	// between any two candidates is at least this one.
	// +optional
	PValue *float64 `json:"pValue,omitempty"`
}

// OptimalTrial is the candidate the Experiment recommends: the cheapest (fewest tokens,
// then storage) of the best and the leaderboard's candidates tied with it.
type OptimalTrial struct {
	// Trial and Retrieval name the candidate.
	Trial     string `json:"trial"`
	Retrieval string `json:"retrieval"`
	// Objective with its interval.
	Objective ObjectiveValue `json:"objective"`
	// VsBaseline compares it with the baseline (absent when it is the baseline); spec.promote
	// applies it only when this tells it apart, better.
	// +optional
	VsBaseline *CandidateComparison `json:"vsBaseline,omitempty"`
	// VsRunnerUp compares it with the strongest other candidate: rank 2 when it is rank 1,
	// else rank 1.
	// +optional
	VsRunnerUp *CandidateComparison `json:"vsRunnerUp,omitempty"`
}

// BudgetStatus is what the Experiment spent against its budget.
type BudgetStatus struct {
	// TokensSpent by the trials' builds (their revisions' token counts).
	// +optional
	TokensSpent int64 `json:"tokensSpent"`
	// MaxTokens copied from spec.budget (absent without a token budget).
	// +optional
	MaxTokens *int64 `json:"maxTokens,omitempty"`
	// TokensReserved are the estimates of trials building now (not yet in TokensSpent).
	// +optional
	TokensReserved int64 `json:"tokensReserved,omitempty"`
	// Display is e.g. "1.2M/5M", for the SPENT column.
	// +optional
	Display string `json:"display,omitempty"`
}

// ExperimentStatus is the observed state of an Experiment.
type ExperimentStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled, BudgetExhausted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// TrialCounts by phase.
	// +optional
	TrialCounts TrialCounts `json:"trialCounts,omitempty"`
	// Progress is a display string, e.g. "5/12 (1 failed)", for the TRIALS column.
	// +optional
	Progress string `json:"progress,omitempty"`
	// Trials in the order they were chosen.
	// +optional
	// +listType=map
	// +listMapKey=name
	Trials []TrialStatus `json:"trials,omitempty"`
	// Leaderboard of the top spec.leaderboardSize candidates, best first.
	// +optional
	// +listType=atomic
	Leaderboard []LeaderboardEntry `json:"leaderboard,omitempty"`
	// CurrentOptimalTrial is the best candidate so far.
	// +optional
	CurrentOptimalTrial *OptimalTrial `json:"currentOptimalTrial,omitempty"`
	// Budget spent.
	// +optional
	Budget BudgetStatus `json:"budget,omitempty"`
	// Promotion records the winner applied to spec.promote.indexRef.
	// +optional
	Promotion *PromotionStatus `json:"promotion,omitempty"`
	// StartTime and CompletionTime of the Experiment.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Experiment sweeps chunking strategies, models and retrieval modes over one corpus and
// dataset under a budget, ranks the candidates with confidence intervals and names the
// winner (after Katib's Experiment: objective, algorithm, maxTrials, currentOptimalTrial).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=exp,categories=rag
// +kubebuilder:printcolumn:name="Trials",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Best",type=string,JSONPath=`.status.currentOptimalTrial.trial`
// +kubebuilder:printcolumn:name="Metric",type=number,JSONPath=`.status.currentOptimalTrial.objective.value`
// +kubebuilder:printcolumn:name="Spent",type=string,JSONPath=`.status.budget.display`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Retrieval",type=string,priority=1,JSONPath=`.status.currentOptimalTrial.retrieval`
// +kubebuilder:printcolumn:name="Status",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Experiment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExperimentSpec   `json:"spec"`
	Status ExperimentStatus `json:"status,omitempty"`
}

// ExperimentList is a list of Experiment.
// +kubebuilder:object:root=true
type ExperimentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Experiment `json:"items"`
}

// GetConditions returns a pointer to the Experiment's conditions.
func (e *Experiment) GetConditions() *[]metav1.Condition { return &e.Status.Conditions }

func init() { SchemeBuilder.Register(&Experiment{}, &ExperimentList{}) }
