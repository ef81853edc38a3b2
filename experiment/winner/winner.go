// Package winner turns a finished Experiment's optimal candidate into what a GitOps repository
// commits: the winner's ChunkingStrategy (renamed, without the Experiment's ownership) and the
// merge patch that points an Index at it and the winner's model. The leaderboard printer is
// Leaderboard.
package winner

import (
	"cmp"
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
	// IndexPatch is a JSON merge patch for an Index: spec.strategyRef, spec.model,
	// spec.embedder.precision and spec.vectorIndex, as the winner's trial was built.
	IndexPatch []byte
	// LeftOut says what of the measured configuration the patch cannot carry (the retrieval
	// variant: an Index has no field for how clients query it); empty when nothing.
	LeftOut []string
}

// FromObjects builds the Result from the Experiment and the winner trial's Index and
// ChunkingStrategy: the measured configuration whole, as far as an Index holds it (the
// strategy, the model, the embedder's precision and the vector index); a retrieval variant
// other than dense is named in LeftOut. It fails when the Experiment has no optimal candidate yet, or idx is
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
	spec := map[string]any{"strategyRef": ragopsv1alpha1.LocalObjectReference{Name: name}, "model": idx.Spec.Model,
		"vectorIndex": idx.Spec.VectorIndex}
	if p := idx.Spec.Embedder.Precision; p != "" {
		spec["embedder"] = map[string]any{"precision": p}
	}
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return nil, err
	}
	res := &Result{Trial: o.Trial, Retrieval: o.Retrieval, Strategy: strategy, IndexPatch: patch}
	if o.Retrieval != "" && !strings.EqualFold(o.Retrieval, string(ragopsv1alpha1.ModeDense)) {
		res.LeftOut = append(res.LeftOut, fmt.Sprintf("retrieval variant %s: an Index has no field for how clients query it; query it that way", o.Retrieval))
	}
	return res, nil
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
	var notes string
	for _, l := range r.LeftOut {
		notes += "# not applied: " + l + "\n"
	}
	_, err = fmt.Fprintf(w, "# winner: trial %s, retrieval %s\n%s---\n%s# kubectl patch index INDEX --type merge -p '%s'\n%s", r.Trial, r.Retrieval, doc, notes, r.IndexPatch, patch)
	return err
}

// Leaderboard prints the Experiment's leaderboard as a table: rank, trial, retrieval, the
// objective, tokens and chunks, the comparison with the best (VS BEST: "best", or
// "tied-for-best" when an entry is tied with it; "tied", "worse" or "-" when not compared,
// from the adjusted test; ";winner" on status.currentOptimalTrial) and the candidate's
// parameters.
func Leaderboard(w io.Writer, exp *ragopsv1alpha1.Experiment) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RANK\tTRIAL\tRETRIEVAL\t%s@%d\tTOKENS\tCHUNKS\tVS BEST\tPARAMETERS\n", strings.ToUpper(string(exp.Spec.Objective.Metric)), exp.Spec.Objective.K)
	tied := false
	for _, e := range exp.Status.Leaderboard {
		tied = tied || e.TiedWithBest
	}
	o := exp.Status.CurrentOptimalTrial
	for _, e := range exp.Status.Leaderboard {
		vs := "-"
		switch {
		case e.Rank == 1 && tied:
			vs = "tied-for-best"
		case e.Rank == 1:
			vs = "best"
		case e.TiedWithBest:
			vs = "tied"
		case e.VsBest != nil && e.VsBest.PValue != nil:
			vs = "worse"
		}
		if o != nil && o.Trial == e.Trial && o.Retrieval == e.Retrieval {
			vs += ";winner"
		}
		keys := make([]string, 0, len(e.Parameters))
		for k := range e.Parameters {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ps []string
		for _, k := range keys {
			ps = append(ps, k+"="+e.Parameters[k])
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.4f\t%d\t%d\t%s\t%s\n", e.Rank, e.Trial, e.Retrieval, e.Objective.Value, e.Tokens, e.Chunks, vs, strings.Join(ps, ","))
	}
	return tw.Flush()
}

// Choose returns the index in board (a leaderboard, best first) of the candidate to
// recommend: the cheapest of the best and the entries tied with it (TiedWithBest), so that
// cost decides where the objective does not. Cheapest is fewest tokens, then fewest storage
// bytes, then the better rank; a cost of 0 (not measured) counts as higher than any
// measured one. -1 for an empty board.
func Choose(board []ragopsv1alpha1.LeaderboardEntry) int {
	if len(board) == 0 {
		return -1
	}
	unknownLast := func(v int64) uint64 {
		if v <= 0 {
			return ^uint64(0)
		}
		return uint64(v)
	}
	best := 0
	for i := 1; i < len(board); i++ {
		e, b := board[i], board[best]
		if !e.TiedWithBest {
			continue
		}
		if c := cmp.Compare(unknownLast(e.Tokens), unknownLast(b.Tokens)); c < 0 ||
			(c == 0 && unknownLast(e.StorageBytes) < unknownLast(b.StorageBytes)) {
			best = i
		}
	}
	return best
}

// Evidence says whether exp's optimal candidate (status.currentOptimalTrial) may replace
// the baseline: only when its paired comparison with the baseline (vsBaseline, adjusted for
// the candidates compared) tells it apart, better, at level alpha (p-value below alpha and
// a positive difference). reason and msg say why not: ReasonNoWinner without a candidate,
// ReasonNotBetterThanBaseline when it is the baseline, was not paired with it, or is tied
// with or worse than it.
func Evidence(exp *ragopsv1alpha1.Experiment, alpha float64) (ok bool, reason, msg string) {
	o := exp.Status.CurrentOptimalTrial
	if o == nil {
		return false, ragopsv1alpha1.ReasonNoWinner, "no candidate was measured"
	}
	c := o.VsBaseline
	switch {
	case c == nil:
		return false, ragopsv1alpha1.ReasonNotBetterThanBaseline, fmt.Sprintf("the winner %s/%s is the baseline, or the baseline was not measured: nothing shows it is better than the baseline", o.Trial, o.Retrieval)
	case c.PValue == nil:
		return false, ragopsv1alpha1.ReasonNotBetterThanBaseline, fmt.Sprintf("the winner %s/%s could not be paired with the baseline %s/%s (no per-query results): its %+.4f is no evidence", o.Trial, o.Retrieval, c.Trial, c.Retrieval, c.Difference)
	case *c.PValue >= alpha || c.Difference <= 0:
		return false, ragopsv1alpha1.ReasonNotBetterThanBaseline, fmt.Sprintf("the winner %s/%s is not told apart from the baseline %s/%s: %s", o.Trial, o.Retrieval, c.Trial, c.Retrieval, describe(c))
	}
	return true, "", fmt.Sprintf("better than the baseline %s/%s: %s", c.Trial, c.Retrieval, describe(c))
}

// describe is "+0.0123 [+0.0010, +0.0236], adjusted p 0.012".
func describe(c *ragopsv1alpha1.CandidateComparison) string {
	s := fmt.Sprintf("%+.4f", c.Difference)
	if c.IntervalLower != nil && c.IntervalUpper != nil {
		s += fmt.Sprintf(" [%+.4f, %+.4f]", *c.IntervalLower, *c.IntervalUpper)
	}
	if c.PValue != nil {
		s += fmt.Sprintf(", adjusted p %.3f", *c.PValue)
	}
	return s
}
