package winner_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/winner"
)

// The recommended candidate is the cheapest of the best and those tied with it: fewest
// tokens, then storage, then rank; an unmeasured cost (0) never wins, and a cheaper entry
// that is told apart from the best is not a candidate.
func TestChoosePicksTheCheapestTiedWithTheBest(t *testing.T) {
	e := func(trial string, tied bool, tokens, storage int64) ragopsv1alpha1.LeaderboardEntry {
		return ragopsv1alpha1.LeaderboardEntry{Trial: trial, Retrieval: "dense", TiedWithBest: tied, Tokens: tokens, StorageBytes: storage}
	}
	for _, tc := range []struct {
		name  string
		board []ragopsv1alpha1.LeaderboardEntry
		want  int
	}{
		{"a cheaper tie wins", []ragopsv1alpha1.LeaderboardEntry{e("best", false, 1000, 10), e("tied-500", true, 500, 10), e("tied-700", true, 700, 1), e("worse-100", false, 100, 1)}, 1},
		{"nothing tied: the best", []ragopsv1alpha1.LeaderboardEntry{e("best", false, 1000, 10), e("worse-100", false, 100, 1)}, 0},
		{"unmeasured cost never wins", []ragopsv1alpha1.LeaderboardEntry{e("best", false, 1000, 10), e("unmeasured", true, 0, 0)}, 0},
		{"equal tokens: less storage", []ragopsv1alpha1.LeaderboardEntry{e("best", false, 1000, 10), e("tied-a", true, 800, 9), e("tied-b", true, 800, 5)}, 2},
		{"equal cost: the better rank", []ragopsv1alpha1.LeaderboardEntry{e("best", false, 1000, 10), e("tied-a", true, 1000, 10)}, 0},
	} {
		if got := winner.Choose(tc.board); got != tc.want {
			t.Errorf("%s: Choose = %d (%s), want %d (%s)", tc.name, got, tc.board[max(got, 0)].Trial, tc.want, tc.board[tc.want].Trial)
		}
	}
	if winner.Choose(nil) != -1 {
		t.Errorf("empty board: want -1")
	}
}

// A winner is promoted only on evidence: tied with the baseline (adjusted p 0.6), not
// paired with it, or the baseline itself, it is not; told apart and better, it is.
func TestEvidenceRefusesAWinnerTiedWithTheBaseline(t *testing.T) {
	exp := func(vs *ragopsv1alpha1.CandidateComparison) *ragopsv1alpha1.Experiment {
		e := &ragopsv1alpha1.Experiment{}
		e.Status.CurrentOptimalTrial = &ragopsv1alpha1.OptimalTrial{Trial: "t96", Retrieval: "dense", VsBaseline: vs}
		return e
	}
	vs := func(diff float64, p *float64) *ragopsv1alpha1.CandidateComparison {
		return &ragopsv1alpha1.CandidateComparison{Trial: "t64", Retrieval: "dense", Difference: diff, PValue: p,
			IntervalLower: ptr.To(diff - 0.05), IntervalUpper: ptr.To(diff + 0.05)}
	}
	for _, tc := range []struct {
		name string
		exp  *ragopsv1alpha1.Experiment
		ok   bool
		msg  string
	}{
		{"tied, p 0.6", exp(vs(0.025, ptr.To(0.6))), false, "not told apart from the baseline t64/dense: +0.0250 [-0.0250, +0.0750], adjusted p 0.600"},
		{"at the level", exp(vs(0.06, ptr.To(0.05))), false, "not told apart"},
		{"not paired", exp(vs(0.3, nil)), false, "could not be paired"},
		{"the baseline itself", exp(nil), false, "is the baseline"},
		{"worse", exp(vs(-0.2, ptr.To(0.001))), false, "not told apart"},
		{"better", exp(vs(0.3, ptr.To(0.001))), true, "better than the baseline t64/dense"},
	} {
		ok, reason, msg := winner.Evidence(tc.exp, 0.05)
		if ok != tc.ok || !strings.Contains(msg, tc.msg) || (!ok && reason != ragopsv1alpha1.ReasonNotBetterThanBaseline) {
			t.Errorf("%s: Evidence = %v, %q, %q; want %v and a message with %q", tc.name, ok, reason, msg, tc.ok, tc.msg)
		}
	}
	if ok, reason, _ := winner.Evidence(&ragopsv1alpha1.Experiment{}, 0.05); ok || reason != ragopsv1alpha1.ReasonNoWinner {
		t.Errorf("no candidate: %v %s", ok, reason)
	}
}

// The promotion carries the configuration that was measured, as far as an Index holds it:
// strategy, model, the embedder's precision and the vector index; a hybrid retrieval
// variant, which no Index field holds, is named as left out.
func TestFromObjectsCarriesTheMeasuredConfiguration(t *testing.T) {
	exp := &ragopsv1alpha1.Experiment{ObjectMeta: metav1.ObjectMeta{Name: "sweep", Namespace: "ns"}}
	exp.Status.CurrentOptimalTrial = &ragopsv1alpha1.OptimalTrial{Trial: "sweep-fixed-96", Retrieval: "hybrid-a0.5-rsf"}
	exp.Status.Trials = []ragopsv1alpha1.TrialStatus{{Name: "sweep-fixed-96", Strategy: "fixed-96"}}
	idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "sweep-fixed-96", Namespace: "ns"}}
	idx.Spec.StrategyRef.Name = "sweep-fixed-96"
	idx.Spec.Model = ragopsv1alpha1.ModelSpec{Name: "e5", ImagePath: "/models/e5"}
	idx.Spec.Embedder.Precision = ragopsv1alpha1.PrecisionFP16
	idx.Spec.Embedder.Shards = 4
	idx.Spec.VectorIndex = ragopsv1alpha1.VectorIndexSpec{Type: ragopsv1alpha1.VectorIndexType("flat"), Distance: "cosine"}
	cs := &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Name: "sweep-fixed-96", Namespace: "ns"}}
	res, err := winner.FromObjects(exp, idx, cs)
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Spec struct {
			StrategyRef ragopsv1alpha1.LocalObjectReference `json:"strategyRef"`
			Model       ragopsv1alpha1.ModelSpec            `json:"model"`
			Embedder    map[string]any                      `json:"embedder"`
			VectorIndex ragopsv1alpha1.VectorIndexSpec      `json:"vectorIndex"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(res.IndexPatch, &patch); err != nil {
		t.Fatal(err)
	}
	if s := patch.Spec; s.StrategyRef.Name != "fixed-96" || s.Model.Name != "e5" || len(s.Embedder) != 1 || s.Embedder["precision"] != "fp16" ||
		s.VectorIndex.Type != ragopsv1alpha1.VectorIndexType("flat") || s.VectorIndex.Distance != "cosine" {
		t.Errorf("patch %s: want the strategy, model, precision fp16 only of the embedder, and the flat vector index", res.IndexPatch)
	}
	if len(res.LeftOut) != 1 || !strings.Contains(res.LeftOut[0], "hybrid-a0.5-rsf") {
		t.Errorf("left out %q, want the retrieval variant named", res.LeftOut)
	}
	exp.Status.CurrentOptimalTrial.Retrieval = "dense"
	if res, _ := winner.FromObjects(exp, idx, cs); len(res.LeftOut) != 0 {
		t.Errorf("dense: left out %q, want nothing", res.LeftOut)
	}
}
