package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// EstimateTrial is one trial an estimate Job estimates.
type EstimateTrial struct {
	Name, Revision string
	Strategy       ragopsv1alpha1.ChunkingStrategySpec
	Model          ragopsv1alpha1.ModelSpec
	// Sample is a screening trial's Index's spec.sample (nil: the whole corpus); the trials
	// of one Job share one.
	Sample *ragopsv1alpha1.DocumentSample
}

// EstimateInputs are what an estimate Job is built from, resolved by the Experiment
// controller.
type EstimateInputs struct {
	Experiment *ragopsv1alpha1.Experiment
	Corpus     *ragopsv1alpha1.Corpus
	Trials     []EstimateTrial
	// Fraction and MinDocuments size the sample (plan.Estimate).
	Fraction     float64
	MinDocuments int
}

// EstimateJobName names the estimate Job of an Experiment's trials: <experiment>-estimate-
// and a hash of the seed and the trials' names and revisions, so a new set of trials gets a
// Job of its own while a Corpus revision does not (the Experiment judges whether an estimate
// of an earlier revision still holds). At most MaxNameLength characters.
func EstimateJobName(exp *ragopsv1alpha1.Experiment, trials []EstimateTrial) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d", exp.Spec.Algorithm.Seed)
	for _, t := range trials {
		fmt.Fprintf(h, "\x00%s\x00%s", t.Name, t.Revision)
	}
	return fmt.Sprintf("%s-estimate-%s", ObjectName(exp.Name, 40), hex.EncodeToString(h.Sum(nil))[:10])
}

// Estimate returns the estimate Job of an Experiment: it lists the Corpus, reads a sample
// seeded by the Experiment's algorithm seed and estimates each trial's tokens with its
// strategy and model (`ragops estimate`). Each distinct model is mounted once; a screening
// trial's sample (its judged dataset) too, and the trial is estimated for that sample.
func Estimate(in EstimateInputs, d Defaults) *Workload {
	exp, c := in.Experiment, in.Corpus
	w := &Workload{Owner: exp, Name: EstimateJobName(exp, in.Trials), Component: ComponentEstimate, Deadline: d.Deadline,
		Revision: c.Status.Revision, Args: []string{"estimate"}, Image: d.Image, Shards: 1}
	var src plan.Source
	w.MountCorpus(c, &src)
	pinGit(c, &src)
	p := plan.Estimate{Version: plan.Version, Namespace: exp.Namespace, Experiment: exp.Name, Source: src,
		Seed: exp.Spec.Algorithm.Seed, Fraction: in.Fraction, MinDocuments: in.MinDocuments}
	// The sample comes from (and goes to) the Corpus's extraction cache in the trials' Weaviate.
	if wv := exp.Spec.IndexTemplate.Weaviate; wv.URL != "" {
		w.mountWeaviate(wv)
		p.Weaviate = &plan.Weaviate{URL: wv.URL, GRPCAddress: wv.GRPCAddress}
		p.ExtractionCache, _ = vectorstore.ExtractionCacheName(c.Namespace, c.Name)
	}
	dirs := map[string]string{}
	for _, t := range in.Trials {
		dir, ok := dirs[t.Model.Name]
		if !ok {
			i := len(dirs)
			dir = w.MountModel(fmt.Sprintf("model-%d", i), fmt.Sprintf("%s-%d", plan.ModelDir, i), t.Model, w.Image)
			dirs[t.Model.Name] = dir
		}
		p.Trials = append(p.Trials, plan.EstimateTrial{Name: t.Name, Revision: t.Revision, Strategy: t.Strategy, ModelDir: dir, Sampled: t.Sample != nil})
		if t.Sample != nil && p.Sample == nil {
			p.Sample = w.mountSample(t.Sample)
		}
	}
	w.Plan = p
	return w
}
