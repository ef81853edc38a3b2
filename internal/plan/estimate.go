package plan

import (
	"encoding/json"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Estimate asks `ragops estimate` for the tokens each trial of an Experiment would embed:
// it lists the corpus as a scan does, reads a seeded sample of its documents as a build
// reads them, and chunks the sample with every trial's strategy and model (package
// experiment/budget), scaled to the whole corpus. It exists for corpora the operator cannot
// read itself (PVC, S3, HTTP, Git).
type Estimate struct {
	// Version is [Version].
	Version    string `json:"version"`
	Namespace  string `json:"namespace"`
	Experiment string `json:"experiment"`
	Source     Source `json:"source"`
	// Seed draws the sample (budget.Sample); Fraction of the documents is sampled, at least
	// MinDocuments of them (all when the corpus has fewer).
	Seed         int64   `json:"seed"`
	Fraction     float64 `json:"fraction"`
	MinDocuments int     `json:"minDocuments"`
	// Trials to estimate; trials of one model share its folder.
	Trials []EstimateTrial `json:"trials"`
	// Weaviate is the trials' Weaviate (the Experiment's indexTemplate) and ExtractionCache
	// the Corpus's extraction cache there (as in [Build]): the sample is taken from it and
	// extracts stored in it. Either empty: the sample is extracted without a cache.
	Weaviate        *Weaviate `json:"weaviate,omitempty"`
	ExtractionCache string    `json:"extractionCache,omitempty"`
	// Sample is the screening trials' document sample (an Index's spec.sample): a trial with
	// Sampled set is scaled to the documents it keeps instead of the whole corpus.
	Sample *Sample `json:"sample,omitempty"`
}

// EstimateTrial is one trial to estimate.
type EstimateTrial struct {
	// Name of the trial.
	Name string `json:"name"`
	// Revision the trial builds; its estimate is kept for that revision only.
	Revision string                              `json:"revision"`
	Strategy ragopsv1alpha1.ChunkingStrategySpec `json:"strategy"`
	// ModelDir is the model folder in the pod.
	ModelDir string `json:"modelDir"`
	// Sampled trials build Estimate.Sample's documents only.
	Sampled bool `json:"sampled,omitempty"`
}

// EstimateResult is the termination message of an estimate pod.
type EstimateResult struct {
	// Documents and Bytes of the whole corpus as listed (the population scaled to).
	Documents int64 `json:"documents"`
	Bytes     int64 `json:"bytes"`
	// SampleDocuments read and chunked.
	SampleDocuments int `json:"sampleDocuments"`
	// SampledDocuments and SampledBytes are what the plan's Sample keeps (the population
	// of its Sampled trials); 0 without a Sample.
	SampledDocuments int64 `json:"sampledDocuments,omitempty"`
	SampledBytes     int64 `json:"sampledBytes,omitempty"`
	// Trials in the plan's order.
	Trials []TrialEstimate `json:"trials"`
	// Reads says how the sample's text was come by (extracted, cache hits and misses).
	Reads *ragopsv1alpha1.DocumentReads `json:"reads,omitempty"`
	Error string                        `json:"error,omitempty"`
}

// TrialEstimate is one trial's estimate, or why there is none.
type TrialEstimate struct {
	Name     string `json:"name"`
	Revision string `json:"revision"`
	// Tokens and Chunks estimated for the whole corpus.
	Tokens int64 `json:"tokens"`
	Chunks int64 `json:"chunks"`
	// RelativeStandardError of Tokens (see budget.Estimate).
	RelativeStandardError float64 `json:"relativeStandardError,omitempty"`
	// Error is set when this trial could not be estimated (its model folder, its strategy);
	// cut by CutTrialError, so that a Job's result fits a termination message.
	Error string `json:"error,omitempty"`
}

// MaxTrialErrorBytes bounds TrialEstimate.Error as JSON-encoded (CutTrialError).
const MaxTrialErrorBytes = 120

// CutTrialError returns msg, or its longest prefix of whole characters followed by "..."
// whose JSON encoding (quotes and escapes included) is at most MaxTrialErrorBytes.
func CutTrialError(msg string) string {
	encoded := func(s string) int { b, _ := json.Marshal(s); return len(b) }
	if encoded(msg) <= MaxTrialErrorBytes {
		return msg
	}
	runes := []rune(msg)
	for n := len(runes); n > 0; n-- {
		if s := string(runes[:n]) + "..."; encoded(s) <= MaxTrialErrorBytes {
			return s
		}
	}
	return "..."
}
