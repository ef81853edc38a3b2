package embedder

import (
	"context"
	"math/rand"
	"testing"
)

// TestEmbedSequencesEqualsEmbedQueries (issue 56): texts tokenized first (QuerySequences,
// TextSequences, as the model server does on each request's goroutine) and embedded later,
// several calls' sequences together, give exactly the vectors of EmbedQueries and
// EmbedTexts, bit for bit; with cost-planned batches (RunTokens, as the model server runs)
// the vectors agree to cosine 1.000000.
func TestEmbedSequencesEqualsEmbedQueries(t *testing.T) {
	docs := readCorpus(t, "scifact", 12)
	var texts []string
	for i, d := range docs {
		texts = append(texts, d.Text[:min(len(d.Text), 20+i*90)])
	}
	ctx := context.Background()
	m := load(t, Options{})
	wantQ, err := m.EmbedQueries(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	wantD, err := m.EmbedTexts(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	seqs := append(m.QuerySequences(texts[:5]), m.QuerySequences(texts[5:])...)
	gotQ, err := m.EmbedSequences(ctx, seqs)
	if err != nil {
		t.Fatal(err)
	}
	gotD, err := m.EmbedSequences(ctx, m.TextSequences(texts))
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		for j := range wantQ[i] {
			if gotQ[i][j] != wantQ[i][j] || gotD[i][j] != wantD[i][j] {
				t.Fatalf("text %d, value %d: EmbedSequences gave %v (query), %v (document); EmbedQueries %v, EmbedTexts %v",
					i, j, gotQ[i][j], gotD[i][j], wantQ[i][j], wantD[i][j])
			}
		}
	}
	planned := load(t, Options{RunTokens: CPURunTokens})
	got, err := planned.EmbedSequences(ctx, planned.QuerySequences(texts))
	if err != nil {
		t.Fatal(err)
	}
	if len(planBatches(seqs, planned.opts)) == len(planBatches(seqs, m.opts)) {
		t.Errorf("the cost plan has the greedy plan's %d batches: nothing different was run", len(planBatches(seqs, m.opts)))
	}
	for i := range texts {
		if c := cosine(got[i], wantQ[i]); c < 1-1e-6 {
			t.Errorf("text %d: cost-planned batches give cosine %.9f to EmbedQueries", i, c)
		}
	}
}

// TestPlanByCostIsOptimal (issue 56): the cost plan covers every sequence once, keeps each
// batch of several sequences within BatchTokens and MaxBatch, and costs no more than any
// cut of the length-sorted sequences into consecutive batches (checked against all of them)
// nor than the greedy plan.
func TestPlanByCostIsOptimal(t *testing.T) {
	rng := rand.New(rand.NewSource(56))
	cost := func(seqs [][]int64, plan [][]int, run int) int {
		c := 0
		for _, b := range plan {
			longest := 0
			for _, i := range b {
				longest = max(longest, len(seqs[i]))
			}
			c += run + len(b)*longest
		}
		return c
	}
	for trial := range 300 {
		n := 1 + rng.Intn(11)
		seqs := make([][]int64, n)
		for i := range seqs {
			seqs[i] = make([]int64, 3+rng.Intn(70))
		}
		opts := Options{RunTokens: 1 + rng.Intn(40), BatchTokens: 64 + rng.Intn(300), MaxBatch: 1 + rng.Intn(8)}
		plan := planBatches(seqs, opts)
		seen := make([]bool, n)
		for _, b := range plan {
			longest := 0
			for _, i := range b {
				if seen[i] {
					t.Fatalf("trial %d: sequence %d planned twice: %v", trial, i, plan)
				}
				seen[i] = true
				longest = max(longest, len(seqs[i]))
			}
			if len(b) > opts.MaxBatch || (len(b) > 1 && len(b)*longest > opts.BatchTokens) {
				t.Fatalf("trial %d: batch %v of %d x %d tokens is over MaxBatch %d or BatchTokens %d", trial, b, len(b), longest, opts.MaxBatch, opts.BatchTokens)
			}
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("trial %d: sequence %d is in no batch: %v", trial, i, plan)
			}
		}
		got := cost(seqs, plan, opts.RunTokens)
		greedy := opts
		greedy.RunTokens = 0
		if g := cost(seqs, planBatches(seqs, greedy), opts.RunTokens); got > g {
			t.Fatalf("trial %d: cost plan %d > greedy plan %d", trial, got, g)
		}
		// Every cut of the sorted order into consecutive batches within the limits.
		sorted := planBatches(seqs, Options{FixedBatch: n}) // one batch, input order
		order := sorted[0]
		for a := 1; a < len(order); a++ {
			for b := a; b > 0 && len(seqs[order[b]]) > len(seqs[order[b-1]]); b-- {
				order[b], order[b-1] = order[b-1], order[b]
			}
		}
		for mask := 0; mask < 1<<(n-1); mask++ {
			var alt [][]int
			start, ok := 0, true
			for i := 1; i <= n; i++ {
				if i == n || mask&(1<<(i-1)) != 0 {
					b := order[start:i]
					if len(b) > opts.MaxBatch || (len(b) > 1 && len(b)*len(seqs[b[0]]) > opts.BatchTokens) {
						ok = false
					}
					alt = append(alt, b)
					start = i
				}
			}
			if c := cost(seqs, alt, opts.RunTokens); ok && c < got {
				t.Fatalf("trial %d: plan %v costs %d, but %v costs %d", trial, plan, got, alt, c)
			}
		}
	}
}
