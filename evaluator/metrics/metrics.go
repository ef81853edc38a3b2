// Package metrics computes the standard ranked-retrieval measures at a cut-off k, per query
// and as means over queries, exactly as trec_eval 9.x does them (the implementation behind
// pytrec_eval and BEIR's EvaluateRetrieval; Van Gysel & de Rijke 2018, "pytrec_eval: An
// Extremely Fast Python Interface to trec_eval"):
//
//	recall@k   trec_eval recall_k
//	ndcg@k     trec_eval ndcg_cut_k (graded gains)
//	mrr@k      trec_eval recip_rank on the top k (ir_measures RR@k)
//	success@k  trec_eval success_k
//	map@k      trec_eval map_cut_k
//
// A ranking is a query's document IDs, best first, without duplicates; Rank orders scored
// documents the way trec_eval does (score descending, ties by document ID descending).
// Judgements map document ID -> graded relevance; a document is relevant when its grade is
// at least 1 (trec_eval's default relevance level) and unjudged documents are not relevant.
// The parity test compares every value with pytrec_eval within 1e-6
// (hack/metrics-reference).
package metrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Measure names one of the measures; with a cut-off it makes a metric name "ndcg@10".
type Measure string

// The measures, in the order Evaluate reports them.
const (
	Recall  Measure = "recall"
	NDCG    Measure = "ndcg"
	MRR     Measure = "mrr"
	Success Measure = "success"
	MAP     Measure = "map"
)

// Measures lists every measure in report order.
var Measures = []Measure{NDCG, Recall, MRR, MAP, Success}

// DefaultK is the cut-off used when none is given, and the one always reported.
const DefaultK = 10

// Name returns the metric name of m at cut-off k, e.g. "ndcg@10".
func Name(m Measure, k int) string { return string(m) + "@" + strconv.Itoa(k) }

// ParseName splits a metric name such as "recall@100" into its measure and cut-off.
func ParseName(name string) (Measure, int, error) {
	m, kText, ok := strings.Cut(name, "@")
	k, err := strconv.Atoi(kText)
	if !ok || err != nil || k < 1 {
		return "", 0, fmt.Errorf("metrics: %q is not <measure>@<k> with k >= 1", name)
	}
	for _, known := range Measures {
		if Measure(m) == known {
			return known, k, nil
		}
	}
	return "", 0, fmt.Errorf("metrics: unknown measure %q in %q (want one of %v)", m, name, Measures)
}

// Func computes one measure for one query at cut-off k (k >= 1).
type Func func(ranking []string, judgements map[string]int, k int) float64

// Of returns the function computing m.
func Of(m Measure) Func {
	switch m {
	case Recall:
		return RecallAt
	case NDCG:
		return NDCGAt
	case MRR:
		return ReciprocalRankAt
	case Success:
		return SuccessAt
	case MAP:
		return AveragePrecisionAt
	}
	panic("metrics: unknown measure " + string(m))
}

// numRelevant counts the judged documents with grade >= 1.
func numRelevant(judgements map[string]int) int {
	n := 0
	for _, g := range judgements {
		if g >= 1 {
			n++
		}
	}
	return n
}

func top(ranking []string, k int) []string {
	if k < len(ranking) {
		return ranking[:k]
	}
	return ranking
}

// RecallAt returns |relevant ∩ top k| / |relevant|, in [0, 1]; 0 when nothing is relevant.
// Definition: trec_eval recall_k ("Recall after k documents retrieved").
func RecallAt(ranking []string, judgements map[string]int, k int) float64 {
	nrel := numRelevant(judgements)
	if nrel == 0 {
		return 0
	}
	hit := 0
	for _, d := range top(ranking, k) {
		if judgements[d] >= 1 {
			hit++
		}
	}
	return float64(hit) / float64(nrel)
}

// NDCGAt returns DCG@k / IDCG@k with graded gains, in [0, 1]:
// DCG@k = Σ_{i=1..k} gain_i / log2(i+1), gain_i = the grade of the document at rank i when
// positive, else 0; IDCG@k is the DCG@k of the judgements sorted by grade. 0 when nothing is
// relevant. Definition: Järvelin & Kekäläinen 2002 ("Cumulated gain-based evaluation of IR
// techniques") with linear gains, as trec_eval ndcg_cut_k and BEIR compute it.
func NDCGAt(ranking []string, judgements map[string]int, k int) float64 {
	var grades []int
	for _, g := range judgements {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	if len(grades) == 0 {
		return 0
	}
	sort.Sort(sort.Reverse(sort.IntSlice(grades)))
	idcg := 0.0
	for i := 0; i < len(grades) && i < k; i++ {
		idcg += float64(grades[i]) / math.Log2(float64(i+2))
	}
	dcg := 0.0
	for i, d := range top(ranking, k) {
		if g := judgements[d]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	return dcg / idcg
}

// ReciprocalRankAt returns 1/r for the rank r <= k of the first relevant document, else 0;
// its mean over queries is MRR@k. Definition: Voorhees 1999 (TREC-8 QA track report,
// "mean reciprocal rank"); trec_eval recip_rank over the top k, ir_measures RR@k.
func ReciprocalRankAt(ranking []string, judgements map[string]int, k int) float64 {
	for i, d := range top(ranking, k) {
		if judgements[d] >= 1 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// SuccessAt returns 1 when a relevant document is in the top k, else 0 (hit rate / success@k).
// Definition: trec_eval success_k ("Success at k: 1 if a relevant document is in the top k").
func SuccessAt(ranking []string, judgements map[string]int, k int) float64 {
	if ReciprocalRankAt(ranking, judgements, k) > 0 {
		return 1
	}
	return 0
}

// AveragePrecisionAt returns (Σ over relevant documents at rank r <= k of precision@r) /
// |relevant|, in [0, 1]; its mean over queries is MAP@k. The denominator counts every
// relevant document, retrieved or not. 0 when nothing is relevant. Definition: trec_eval
// map_cut_k (Buckley & Voorhees 2005, "Retrieval System Evaluation", in TREC: Experiment and
// Evaluation in Information Retrieval).
func AveragePrecisionAt(ranking []string, judgements map[string]int, k int) float64 {
	nrel := numRelevant(judgements)
	if nrel == 0 {
		return 0
	}
	hit, sum := 0, 0.0
	for i, d := range top(ranking, k) {
		if judgements[d] >= 1 {
			hit++
			sum += float64(hit) / float64(i+1)
		}
	}
	return sum / float64(nrel)
}

// Scored is a document with its retrieval score.
type Scored struct {
	DocID string
	Score float64
}

// Rank sorts docs in place the way trec_eval orders a run: score descending, equal scores
// by document ID descending (byte order), and returns the IDs. The ranks in a run file come
// from this order, so trec_eval reading the file sees the same ranking.
func Rank(docs []Scored) []string {
	sort.SliceStable(docs, func(i, j int) bool {
		if docs[i].Score != docs[j].Score {
			return docs[i].Score > docs[j].Score
		}
		return docs[i].DocID > docs[j].DocID
	})
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.DocID
	}
	return ids
}
