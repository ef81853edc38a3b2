package workload

import (
	"path"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// A screening trial is estimated for its sample (issue 55 item 19): the estimate Job mounts
// the sample's judged dataset as a sampled build does, the plan carries the sample, and only
// the screening trial is marked Sampled.
func TestEstimateJobOfAScreeningTrialCarriesItsSample(t *testing.T) {
	minilm := ragopsv1alpha1.ModelSpec{Name: "minilm", PVC: &ragopsv1alpha1.PVCSource{ClaimName: "models", Path: "minilm"}}
	strategy := ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 128}
	sample := &ragopsv1alpha1.DocumentSample{Fraction: 0.1, Seed: 4,
		Judged: &ragopsv1alpha1.DatasetSource{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "legalqa", Path: "nl"}, Split: "dev"}}
	w := Estimate(EstimateInputs{Experiment: experiment(), Corpus: corpus(), Fraction: 0.05, MinDocuments: 32, Trials: []EstimateTrial{
		{Name: "fixed-128", Revision: "r1", Model: minilm, Strategy: strategy},
		{Name: "fixed-128-screen", Revision: "r2", Model: minilm, Strategy: strategy, Sample: sample},
	}}, defaults)
	p := planOf[plan.Estimate](t, w)
	if p.Sample == nil || p.Sample.Fraction != 0.1 || p.Sample.Seed != 4 || p.Sample.Split != "dev" || p.Sample.Judged == nil ||
		p.Sample.Judged.Dir != path.Join(plan.DatasetDir, "nl") {
		t.Fatalf("estimate plan sample %+v (judged %+v)", p.Sample, p.Sample.Judged)
	}
	if p.Trials[0].Sampled || !p.Trials[1].Sampled {
		t.Fatalf("sampled trials %v %v, want the screening trial's only", p.Trials[0].Sampled, p.Trials[1].Sampled)
	}
	if v := volume(w.Job(), "judged"); v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "legalqa" {
		t.Fatalf("judged dataset volume %+v", v)
	}
}
