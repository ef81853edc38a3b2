package metrics

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// Worked example: ranking x, a, y, b; a has grade 2, b grade 1, c grade 0 (judged, not relevant).
func TestWorkedExample(t *testing.T) {
	ranking := Rank([]Scored{{"b", 0.5}, {"a", 1}, {"y", 0.5}, {"x", 2}})
	if strings.Join(ranking, ",") != "x,a,y,b" {
		t.Fatalf("trec_eval order: got %v, want x,a,y,b (ties by document ID descending)", ranking)
	}
	j := map[string]int{"a": 2, "b": 1, "c": 0}
	idcg3 := 2 + 1/math.Log2(3)
	cases := []struct {
		name string
		got  float64
		want float64
	}{
		{"ndcg@1", NDCGAt(ranking, j, 1), 0},
		{"ndcg@3", NDCGAt(ranking, j, 3), (2 / math.Log2(3)) / idcg3},
		{"ndcg@4", NDCGAt(ranking, j, 4), (2/math.Log2(3) + 1/math.Log2(5)) / idcg3},
		{"recall@3", RecallAt(ranking, j, 3), 0.5},
		{"recall@4", RecallAt(ranking, j, 4), 1},
		{"mrr@1", ReciprocalRankAt(ranking, j, 1), 0},
		{"mrr@2", ReciprocalRankAt(ranking, j, 2), 0.5},
		{"success@1", SuccessAt(ranking, j, 1), 0},
		{"success@2", SuccessAt(ranking, j, 2), 1},
		{"map@2", AveragePrecisionAt(ranking, j, 2), 0.25},
		{"map@4", AveragePrecisionAt(ranking, j, 4), (0.5 + 0.5) / 2},
	}
	for _, c := range cases {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestEvaluateCountsAndErrors(t *testing.T) {
	qrels := map[string]map[string]int{
		"q1": {"a": 1},
		"q2": {"b": 2},
		"q3": {"c": 0}, // no relevant document: skipped, counted
	}
	run := map[string][]string{"q1": {"a", "z"}, "q9": {"a"}}
	res, err := Evaluate(run, qrels, []int{1, 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.PerQuery) != 2 || res.NoRelevant != 1 || res.Unretrieved != 1 {
		t.Fatalf("per-query %d, no relevant %d, unretrieved %d", len(res.PerQuery), res.NoRelevant, res.Unretrieved)
	}
	if got := strings.Join(res.Names, ","); !strings.HasPrefix(got, "ndcg@1,ndcg@5,ndcg@10,recall@1") {
		t.Fatalf("names %s: @10 must be added and cut-offs sorted", got)
	}
	// q1 perfect, q2 retrieved nothing: means are 0.5.
	for _, name := range res.Names {
		if !near(res.Mean[name], 0.5) {
			t.Errorf("mean %s = %v, want 0.5", name, res.Mean[name])
		}
	}
	if _, err := Evaluate(map[string][]string{"q1": {"a", "b", "a"}}, qrels, nil); err == nil ||
		!strings.Contains(err.Error(), `query "q1" ranks document "a" twice (ranks 1 and 3)`) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := Cutoffs([]int{5, 0}); err == nil {
		t.Fatal("k=0 accepted")
	}
}

func TestParseName(t *testing.T) {
	m, k, err := ParseName("recall@100")
	if err != nil || m != Recall || k != 100 {
		t.Fatalf("%v %v %v", m, k, err)
	}
	for _, bad := range []string{"recall", "recall@0", "p@10", "ndcg@x"} {
		if _, _, err := ParseName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
