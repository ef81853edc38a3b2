package stats

import (
	"math"
	"strings"
	"testing"
)

// round6 rounds as per-query results are stored (evaluator/results.Round6).
func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// graded returns n per-query recall values k/10 spread over [0.2, 1].
func graded(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(2+i%9) / 10
	}
	return v
}

// A run exactly maxDrop worse on every query is a tie: held at every maxDrop, not left to
// float rounding; a run the same amount worse against a smaller allowance is a drop; an
// identical run is held even at maxDrop 0.
func TestDriftTiesAtMaxDropAreHeld(t *testing.T) {
	base := graded(300)
	o := Options{Seed: Seed("drift-ties")}
	for _, m := range []float64{0.01, 0.02, 0.05, 0.10} {
		run := make([]float64, len(base))
		for i, v := range base {
			run[i] = round6(v - m)
		}
		d, err := DriftTest(run, base, m, o)
		if err != nil {
			t.Fatal(err)
		}
		if d.Dropped {
			t.Errorf("every query exactly %.2f worse, maxDrop %.2f: Dropped (%s), want held", m, m, d.Message("recall@10"))
		}
		if d, _ = DriftTest(run, base, m-0.005, o); !d.Dropped {
			t.Errorf("every query %.2f worse, maxDrop %.3f: held (%s), want Dropped", m, m-0.005, d.Message("recall@10"))
		}
	}
	d, err := DriftTest(base, base, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.Dropped || !strings.Contains(d.Message("recall@10"), "is within the allowed 0.000") {
		t.Errorf("identical run at maxDrop 0: %+v %q, want held", d, d.Message("recall@10"))
	}
}

// The test is one-sided against maxDrop, not a test of a zero difference: a run whose mean
// drop (0.05) is beyond maxDrop 0.02 and significantly different from zero (p < 0.05, the
// rule before) is held while its interval reaches above −0.02, and the same proportions over
// ten times the queries are a drop.
func TestDriftNeedsEvidenceOfADropBeyondMaxDrop(t *testing.T) {
	// 300 queries: 26 lose a relevant document (−1), 11 gain one (+1), the rest tie.
	pairs := func(copies int) (run, base []float64) {
		for range copies {
			for i := range 300 {
				b, r := 0.5, 0.5
				switch {
				case i < 26:
					b, r = 1, 0
				case i < 37:
					b, r = 0, 1
				}
				run, base = append(run, r), append(base, b)
			}
		}
		return run, base
	}
	o := Options{Seed: Seed("drift-evidence")}
	run, base := pairs(1)
	cmp, err := Compare(run, base, o)
	if err != nil {
		t.Fatal(err)
	}
	if !(cmp.P < 0.05 && cmp.Diff.Mean < -0.02) {
		t.Fatalf("fixture: p %.4f, mean %.4f; want a significant mean drop beyond 0.02", cmp.P, cmp.Diff.Mean)
	}
	d, err := DriftTest(run, base, 0.02, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.Dropped || d.Diff.Hi < -0.02 {
		t.Errorf("300 queries: %s; want held (the interval reaches above −0.02)", d.Message("recall@10"))
	}
	if msg := d.Message("recall@10"); !strings.Contains(msg, "too few to call a drop") {
		t.Errorf("message %q does not say the evidence is thin", msg)
	}
	run, base = pairs(10)
	if d, _ = DriftTest(run, base, 0.02, o); !d.Dropped {
		t.Errorf("3000 queries: %s; want Dropped", d.Message("recall@10"))
	}
	if msg := d.Message("recall@10"); !strings.Contains(msg, "with 97.5% confidence: quality dropped") {
		t.Errorf("message %q", msg)
	}
}

func TestDriftTestErrors(t *testing.T) {
	for _, m := range []float64{-0.01, math.NaN(), math.Inf(1)} {
		if _, err := DriftTest([]float64{1}, []float64{1}, m, Options{}); err == nil {
			t.Errorf("maxDrop %v accepted", m)
		}
	}
	if _, err := DriftTest([]float64{1, 0}, []float64{1}, 0.01, Options{}); err == nil {
		t.Error("different lengths accepted")
	}
}
