package metrics

import (
	"fmt"
	"sort"
)

// Cutoffs returns ks sorted and deduplicated with DefaultK always included; a k below 1 is
// an error. Nil or empty ks gives [DefaultK].
func Cutoffs(ks []int) ([]int, error) {
	set := map[int]bool{DefaultK: true}
	for _, k := range ks {
		if k < 1 {
			return nil, fmt.Errorf("metrics: cut-off k=%d, want k >= 1", k)
		}
		set[k] = true
	}
	out := make([]int, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Ints(out)
	return out, nil
}

// Names returns the metric names of every measure at every cut-off, measures in Measures
// order, then cut-offs ascending: ndcg@5, ndcg@10, recall@5, ...
func Names(cutoffs []int) []string {
	var names []string
	for _, m := range Measures {
		for _, k := range cutoffs {
			names = append(names, Name(m, k))
		}
	}
	return names
}

// QueryValues holds one query's metric values, keyed by metric name.
type QueryValues struct {
	QueryID string             `json:"queryId"`
	Values  map[string]float64 `json:"values"`
}

// Result is the outcome of Evaluate.
type Result struct {
	// Cutoffs are the cut-offs evaluated, ascending (DefaultK included).
	Cutoffs []int
	// Names are the metric names, in report order (see Names).
	Names []string
	// PerQuery has one entry per evaluated query, ordered by query ID.
	PerQuery []QueryValues
	// Mean is the arithmetic mean over PerQuery of each metric (trec_eval's "all" line).
	Mean map[string]float64
	// NoRelevant counts judged queries skipped because no judgement has grade >= 1.
	NoRelevant int
	// Unretrieved counts evaluated queries with an empty ranking; they score 0 everywhere
	// (trec_eval -c semantics) rather than being left out of the means.
	Unretrieved int
}

// Evaluate scores run (query ID -> ranking, best first) against qrels (query ID -> document
// ID -> grade) at the given cut-offs (normalised by Cutoffs). Every query of qrels with at
// least one relevant document is evaluated, whether or not run has it; queries of run that
// qrels lacks are ignored. A ranking that lists a document twice is an error naming both.
func Evaluate(run map[string][]string, qrels map[string]map[string]int, ks []int) (Result, error) {
	cutoffs, err := Cutoffs(ks)
	if err != nil {
		return Result{}, err
	}
	res := Result{Cutoffs: cutoffs, Names: Names(cutoffs), Mean: map[string]float64{}}
	qids := make([]string, 0, len(qrels))
	for qid, j := range qrels {
		if numRelevant(j) == 0 {
			res.NoRelevant++
			continue
		}
		qids = append(qids, qid)
	}
	sort.Strings(qids)
	for _, qid := range qids {
		ranking := run[qid]
		seen := make(map[string]int, len(ranking))
		for i, d := range ranking {
			if prev, dup := seen[d]; dup {
				return Result{}, fmt.Errorf("metrics: query %q ranks document %q twice (ranks %d and %d)", qid, d, prev+1, i+1)
			}
			seen[d] = i
		}
		if len(ranking) == 0 {
			res.Unretrieved++
		}
		qv := QueryValues{QueryID: qid, Values: make(map[string]float64, len(res.Names))}
		for _, m := range Measures {
			f := Of(m)
			for _, k := range cutoffs {
				v := f(ranking, qrels[qid], k)
				qv.Values[Name(m, k)] = v
				res.Mean[Name(m, k)] += v
			}
		}
		res.PerQuery = append(res.PerQuery, qv)
	}
	if n := len(res.PerQuery); n > 0 {
		for name := range res.Mean {
			res.Mean[name] /= float64(n)
		}
	}
	return res, nil
}
