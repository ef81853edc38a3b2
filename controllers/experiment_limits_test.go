package controllers

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// The largest status the CRD's bound admits (trials x (variants + 8) <= 6000, see
// ExperimentSpec) fits etcd's 1.5 MiB object limit with room for the spec: every trial's
// names at their 63-character limit, its longest message, ten parameters, and a full
// 50-entry leaderboard. At the measured point (768 trials x 24 variants, 2.75 MB)
// the bound refuses.
func TestLargestAdmittedExperimentStatusFitsEtcd(t *testing.T) {
	const etcdLimit, specRoom = 1572864, 256 << 10
	long := func(prefix string, i int) string {
		s := fmt.Sprintf("%s-%d-", prefix, i)
		return s + strings.Repeat("x", 63-len(s))
	}
	for _, variants := range []int{1, 2, 8, 24, 176} {
		trials := 6000 / (variants + 8)
		st := ragopsv1alpha1.ExperimentStatus{Progress: "1000/1000 (1000 failed, 1000 skipped)"}
		for i := range trials {
			ts := ragopsv1alpha1.TrialStatus{Name: long("trial", i), Strategy: long("strategy", i), StrategyRef: long("ref", i),
				Model: long("model", i), Revision: "0123456789abcdef", Phase: ragopsv1alpha1.TrialSkipped, Tokens: 1 << 40, Chunks: 1 << 30,
				StorageBytes: 1 << 40, BuildSeconds: 1 << 20, EstimatedTokens: 1 << 40, EstimateSampleDocuments: 1 << 20,
				Message:    "screened out: its screening trial " + long("trial", i) + " ranked 1000 of 1000 on the subset (spanHit@1000 0.1234, mean over its retrievals 0.1234); spec.screening.topN 100 go on; tied on both with " + long("trial", i+1) + ", which went on for its fewer tokens (1099511627776 against 1099511627776)",
				Parameters: map[string]string{}}
			for _, k := range []string{"type", "unit", "size", "overlap", "late", "model", "threshold", "window", "levels", "clusters"} {
				ts.Parameters[k] = long(k, i)[:24]
			}
			for v := range variants {
				ts.Evaluations = append(ts.Evaluations, ragopsv1alpha1.TrialEvaluation{Retrieval: long("hybrid", v), Evaluation: long("ev", i*1000+v), Objective: ptr.To(0.123456789)})
			}
			st.Trials = append(st.Trials, ts)
		}
		for i := range 50 {
			st.Leaderboard = append(st.Leaderboard, ragopsv1alpha1.LeaderboardEntry{Rank: int32(i + 1), Trial: long("trial", i), Retrieval: long("hybrid", i),
				Parameters: st.Trials[0].Parameters, Objective: ragopsv1alpha1.ObjectiveValue{Value: 0.123456789, Queries: 100000},
				Metrics: &ragopsv1alpha1.MetricsAtK{K: 1000, Recall: 0.1234567, NDCG: 0.1234567, MRR: 0.1234567}})
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d trials x %d variants: %d bytes", trials, variants, len(b))
		if len(b) > etcdLimit-specRoom {
			t.Errorf("%d trials x %d variants: status %d bytes, more than etcd's %d less %d for the spec", trials, variants, len(b), etcdLimit, specRoom)
		}
	}
	if 768*(24+8) <= 6000 || 440*(24+8) <= 6000 {
		t.Errorf("the bound admits the issue's measured oversized statuses")
	}
}

// An estimate Job's result for estimateBatch trials fits the kubelet's 4 KiB termination
// message at its worst: 63-character names, every figure at its widest, and half the trials
// with an error cut to plan.MaxTrialErrorBytes (plan.CutTrialError).
func TestEstimateBatchResultFitsATerminationMessage(t *testing.T) {
	res := plan.EstimateResult{Documents: math.MaxInt64, Bytes: math.MaxInt64, SampleDocuments: math.MaxInt32}
	for i := range estimateBatch {
		te := plan.TrialEstimate{Name: strings.Repeat("x", 60) + fmt.Sprintf("%03d", i), Revision: "0123456789abcdef"}
		if i%2 == 0 {
			te.Error = plan.CutTrialError(strings.Repeat("<\"é", 1000)) // "<" is 6 bytes in JSON
		} else {
			te.Tokens, te.Chunks, te.RelativeStandardError = math.MaxInt64, math.MaxInt64, 0.12345678901234567
		}
		res.Trials = append(res.Trials, te)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4096 {
		t.Fatalf("the worst result of %d trials is %d bytes, more than 4096", estimateBatch, len(b))
	}
	t.Logf("worst result of %d trials: %d bytes", estimateBatch, len(b))
}
