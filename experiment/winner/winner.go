// Package winner turns a finished Experiment's optimal candidate into what a GitOps repository
// commits: the winner's ChunkingStrategy (renamed, without the Experiment's ownership) and the
// merge patch that points an Index at it and the winner's model. The leaderboard printer is
// Leaderboard.
package winner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Result is the winner of an Experiment.
type Result struct {
	// Trial and Retrieval name the optimal candidate.
	Trial, Retrieval string
	// Strategy is the ChunkingStrategy to commit: the winner's spec under the name its trial
	// gave it in the Experiment, with no owner, labels or status.
	Strategy *ragopsv1alpha1.ChunkingStrategy
	// IndexPatch is a JSON merge patch for an Index: spec.strategyRef and spec.model.
	IndexPatch []byte
}

// FromObjects builds the Result from the Experiment and the winner trial's Index and
// ChunkingStrategy. It fails when the Experiment has no optimal candidate yet, or idx is
// not the optimal trial's Index.
func FromObjects(exp *ragopsv1alpha1.Experiment, idx *ragopsv1alpha1.Index, cs *ragopsv1alpha1.ChunkingStrategy) (*Result, error) {
	o := exp.Status.CurrentOptimalTrial
	if o == nil {
		return nil, fmt.Errorf("experiment %s has no measured candidate yet", exp.Name)
	}
	if idx.Name != o.Trial || cs.Name != idx.Spec.StrategyRef.Name {
		return nil, fmt.Errorf("index %s / strategy %s are not the optimal trial %s's", idx.Name, cs.Name, o.Trial)
	}
	name := cs.Name
	for _, ts := range exp.Status.Trials {
		if ts.Name == o.Trial && ts.Strategy != "" {
			name = ts.Strategy
		}
	}
	strategy := &ragopsv1alpha1.ChunkingStrategy{
		TypeMeta:   metav1.TypeMeta{APIVersion: ragopsv1alpha1.GroupVersion.String(), Kind: "ChunkingStrategy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cs.Namespace},
		Spec:       *cs.Spec.DeepCopy(),
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"strategyRef": ragopsv1alpha1.LocalObjectReference{Name: name}, "model": idx.Spec.Model}})
	if err != nil {
		return nil, err
	}
	return &Result{Trial: o.Trial, Retrieval: o.Retrieval, Strategy: strategy, IndexPatch: patch}, nil
}

// Get reads the Experiment and its winner's Index and ChunkingStrategy through c.
func Get(ctx context.Context, c client.Reader, namespace, name string) (*Result, error) {
	var exp ragopsv1alpha1.Experiment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &exp); err != nil {
		return nil, err
	}
	o := exp.Status.CurrentOptimalTrial
	if o == nil {
		return nil, fmt.Errorf("experiment %s has no measured candidate yet", name)
	}
	var idx ragopsv1alpha1.Index
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: o.Trial}, &idx); err != nil {
		return nil, fmt.Errorf("the winner's Index: %w", err)
	}
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: idx.Spec.StrategyRef.Name}, &cs); err != nil {
		return nil, fmt.Errorf("the winner's ChunkingStrategy: %w", err)
	}
	return FromObjects(&exp, &idx, &cs)
}

// Write prints the ChunkingStrategy as YAML, a document separator, and the Index patch as a
// commented `kubectl patch` line followed by the patch in YAML.
func (r *Result) Write(w io.Writer) error {
	doc, err := yaml.Marshal(r.Strategy)
	if err != nil {
		return err
	}
	patch, err := yaml.JSONToYAML(r.IndexPatch)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "# winner: trial %s, retrieval %s\n%s---\n# kubectl patch index INDEX --type merge -p '%s'\n%s", r.Trial, r.Retrieval, doc, r.IndexPatch, patch)
	return err
}

// Leaderboard prints the Experiment's leaderboard as a table: rank, trial, retrieval, the
// objective, tokens and chunks, and the candidate's parameters.
func Leaderboard(w io.Writer, exp *ragopsv1alpha1.Experiment) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RANK\tTRIAL\tRETRIEVAL\t%s@%d\tTOKENS\tCHUNKS\tPARAMETERS\n", strings.ToUpper(string(exp.Spec.Objective.Metric)), exp.Spec.Objective.K)
	for _, e := range exp.Status.Leaderboard {
		keys := make([]string, 0, len(e.Parameters))
		for k := range e.Parameters {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ps []string
		for _, k := range keys {
			ps = append(ps, k+"="+e.Parameters[k])
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.4f\t%d\t%d\t%s\n", e.Rank, e.Trial, e.Retrieval, e.Objective.Value, e.Tokens, e.Chunks, strings.Join(ps, ","))
	}
	return tw.Flush()
}
