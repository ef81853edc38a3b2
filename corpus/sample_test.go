package corpus

import (
	"fmt"
	"math"
	"testing"
)

func TestSampleKeepsJudgedAndAFractionOfTheRest(t *testing.T) {
	const n = 20000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%05d", i)
	}
	judged := map[string]bool{"doc-00001": true, "doc-00002": true, "doc-19999": true}
	s := Sample{Fraction: 0.1, Seed: 7, Judged: judged}
	kept := 0
	for id := range judged {
		if !s.Keep(id) {
			t.Errorf("judged %s left out", id)
		}
	}
	for _, id := range ids {
		if s.Keep(id) && !judged[id] {
			kept++
		}
	}
	// Binomial(n, 0.1): sd = sqrt(n 0.1 0.9) ~ 42; 5 sd either side.
	if want := 0.1 * n; math.Abs(float64(kept)-want) > 5*math.Sqrt(n*0.1*0.9) {
		t.Errorf("kept %d unjudged of %d at fraction 0.1, want about %.0f", kept, n, want)
	}

	larger := Sample{Fraction: 0.3, Seed: 7}
	other := Sample{Fraction: 0.1, Seed: 8}
	same := 0
	for _, id := range ids {
		if s.Keep(id) && !judged[id] && !larger.Keep(id) {
			t.Fatalf("%s kept at fraction 0.1 but not at 0.3: a larger fraction must keep a superset", id)
		}
		if s.Keep(id) == (Sample{Fraction: 0.1, Seed: 7, Judged: judged}).Keep(id) {
			same++
		}
	}
	if same != n {
		t.Errorf("the same sample decided %d of %d documents alike; it must be deterministic", same, n)
	}
	overlap := 0
	for _, id := range ids {
		if s.Keep(id) && other.Keep(id) && !judged[id] {
			overlap++
		}
	}
	// Independent seeds: about 0.1 x 0.1 x n = 200 in both, far from the 2,000 of one seed.
	if overlap > 400 {
		t.Errorf("seeds 7 and 8 share %d documents; another seed must draw another sample", overlap)
	}
	if (Sample{Fraction: 1}).Keep("x") != true || (Sample{Fraction: 0}).Keep("x") != false {
		t.Error("fraction 1 must keep every document and 0 only the judged ones")
	}
}
