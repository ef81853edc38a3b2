package report

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// TestParetoFrontHandMade: a cheaper point, a tie in both objective and cost, equal costs
// with different objectives and equal objectives with different costs.
func TestParetoFrontHandMade(t *testing.T) {
	cs := []Candidate{
		{Label: "a", Objective: 0.80, Cost: 100},
		{Label: "b", Objective: 0.85, Cost: 200},
		{Label: "c", Objective: 0.85, Cost: 250}, // b is as good and cheaper
		{Label: "d", Objective: 0.70, Cost: 100}, // a costs the same and is better
		{Label: "e", Objective: 0.90, Cost: 300},
		{Label: "f", Objective: 0.90, Cost: 300}, // e's twin: neither dominates the other
		{Label: "g", Objective: 0.60, Cost: 50},
		{Label: "h", Objective: 0.75, Cost: 150}, // a is better and cheaper
	}
	var got []string
	for _, i := range ParetoFront(cs) {
		got = append(got, cs[i].Label)
	}
	if want := []string{"g", "a", "b", "e", "f"}; !slices.Equal(got, want) {
		t.Errorf("front %v, want %v (cheapest first)", got, want)
	}
	for _, c := range []struct {
		a, b Candidate
		want bool
	}{
		{cs[1], cs[2], true}, {cs[2], cs[1], false}, // equal objective, cost decides
		{cs[0], cs[3], true}, {cs[3], cs[0], false}, // equal cost, objective decides
		{cs[4], cs[5], false}, {cs[5], cs[4], false}, // equal in both
		{cs[0], cs[0], false},
		{cs[6], cs[0], false}, {cs[0], cs[6], false}, // a trade-off
	} {
		if got := Dominates(c.a, c.b); got != c.want {
			t.Errorf("Dominates(%s, %s) = %v, want %v", c.a.Label, c.b.Label, got, c.want)
		}
	}
	if f := ParetoFront(nil); len(f) != 0 {
		t.Errorf("front of nothing: %v", f)
	}
	if f := ParetoFront(cs[3:4]); !slices.Equal(f, []int{0}) {
		t.Errorf("front of one candidate: %v", f)
	}
}

// TestParetoFrontProperties checks the definition on seeded random sets drawn from a small
// grid, so that ties in objective, in cost and in both are frequent: nothing on the front is
// dominated, everything off it is dominated by something on it, and along the front (in its
// order) cost never falls and the objective rises with every rise in cost.
func TestParetoFrontProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	for round := range 300 {
		cs := make([]Candidate, 1+rng.IntN(12))
		for i := range cs {
			cs[i] = Candidate{Label: strconv.Itoa(i), Objective: float64(rng.IntN(5)) / 4, Cost: float64(1 + rng.IntN(5))}
		}
		front := ParetoFront(cs)
		if len(front) == 0 {
			t.Fatalf("round %d: empty front of %v", round, cs)
		}
		on := map[int]bool{}
		for _, i := range front {
			if on[i] {
				t.Fatalf("round %d: %d twice on the front", round, i)
			}
			on[i] = true
		}
		for i, c := range cs {
			dominatedByFront := slices.ContainsFunc(front, func(j int) bool { return Dominates(cs[j], c) })
			dominated := slices.ContainsFunc(cs, func(o Candidate) bool { return Dominates(o, c) })
			switch {
			case on[i] && dominated:
				t.Errorf("round %d: %v on the front but dominated in %v", round, c, cs)
			case !on[i] && !dominatedByFront:
				t.Errorf("round %d: %v off the front but no front candidate dominates it in %v", round, c, cs)
			}
		}
		for k := 1; k < len(front); k++ {
			a, b := cs[front[k-1]], cs[front[k]]
			if b.Cost < a.Cost || (b.Cost > a.Cost && b.Objective <= a.Objective) || (b.Cost == a.Cost && b.Objective != a.Objective) {
				t.Errorf("round %d: front not in order at %v then %v", round, a, b)
			}
		}
	}
}

// loadExperiment reads testdata/experiment.yaml.
func loadExperiment(t *testing.T) *ragopsv1alpha1.Experiment {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var exp ragopsv1alpha1.Experiment
	if err := yaml.UnmarshalStrict(b, &exp); err != nil {
		t.Fatal(err)
	}
	return &exp
}

// table splits a Markdown table into its header cells and rows of cells, by header.
func table(t *testing.T, md string) ([]string, []map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(md), "\n")
	cells := func(l string) []string {
		return strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |"), " | ")
	}
	head := cells(lines[0])
	var rows []map[string]string
	for _, l := range lines[2:] {
		cs := cells(l)
		if len(cs) != len(head) {
			t.Fatalf("row %q has %d cells, header %d", l, len(cs), len(head))
		}
		row := map[string]string{}
		for i, h := range head {
			row[h] = cs[i]
		}
		rows = append(rows, row)
	}
	return head, rows
}

// TestWriteLeaderboard: one row per entry in leaderboard order; the objective's column is
// named with its interval's level and not repeated among the other metrics; intervals,
// "tied for best" on rank 1 when entries are tied with it, "tied with best" and the adjusted
// difference (as this minus best) where status has them, the winner marked;
// the Pareto column agrees with ParetoFront, and an entry without the cost gets "-".
func TestWriteLeaderboard(t *testing.T) {
	exp := loadExperiment(t)
	var buf bytes.Buffer
	if err := WriteLeaderboard(&buf, exp, CostTokens); err != nil {
		t.Fatal(err)
	}
	head, rows := table(t, buf.String())
	if len(rows) != len(exp.Status.Leaderboard) {
		t.Fatalf("%d rows for %d entries:\n%s", len(rows), len(exp.Status.Leaderboard), buf.String())
	}
	if !slices.Contains(head, "recall@10 [95% interval]") || slices.Contains(head, "recall@10") ||
		!slices.Contains(head, "nDCG@10") || !slices.Contains(head, "MRR@10") || slices.Contains(head, "span hit@10") {
		t.Errorf("header %q: want the objective with its interval, nDCG and MRR beside it, no span hit (no entry has one)", head)
	}
	cands, _ := Candidates(exp, CostTokens)
	front := map[int]bool{}
	for _, i := range ParetoFront(cands) {
		front[cands[i].Entry] = true
	}
	for i, e := range exp.Status.Leaderboard {
		r := rows[i]
		if r["rank"] != strconv.Itoa(int(e.Rank)) || r["trial"] != e.Trial || r["retrieval"] != e.Retrieval {
			t.Errorf("row %d %v: want entry %d %s %s", i, r, e.Rank, e.Trial, e.Retrieval)
		}
		obj := r["recall@10 [95% interval]"]
		if lo, hi := e.Objective.IntervalLower, e.Objective.IntervalUpper; !strings.HasPrefix(obj, strconv.FormatFloat(e.Objective.Value, 'f', 4, 64)) ||
			(lo != nil && !strings.HasSuffix(obj, " ["+strconv.FormatFloat(*lo, 'f', 4, 64)+", "+strconv.FormatFloat(*hi, 'f', 4, 64)+"]")) {
			t.Errorf("row %d objective %q, want %v", i, obj, e.Objective)
		}
		if want := strconv.FormatFloat(e.Metrics.NDCG, 'f', 4, 64); r["nDCG@10"] != want {
			t.Errorf("row %d nDCG@10 %q, want %s", i, r["nDCG@10"], want)
		}
		if r["tokens"] != strconv.FormatInt(e.Tokens, 10) || r["chunks"] != strconv.FormatInt(e.Chunks, 10) || r["build s"] != strconv.FormatInt(e.BuildSeconds, 10) {
			t.Errorf("row %d tokens/chunks/build %v, want %d/%d/%d", i, r, e.Tokens, e.Chunks, e.BuildSeconds)
		}
		vs := r["vs best"]
		if o := exp.Status.CurrentOptimalTrial; o.Trial == e.Trial && o.Retrieval == e.Retrieval {
			if !strings.HasSuffix(vs, "; winner") {
				t.Errorf("row %d is the winner: %q", i, vs)
			}
			vs = strings.TrimSuffix(vs, "; winner")
		}
		switch {
		case e.Rank == 1:
			if vs != "tied for best with 2" { // the fixture's ranks 2 and 3 are tied with it
				t.Errorf("rank 1 vs best %q", vs)
			}
		case e.TiedWithBest:
			if vs != "tied with best, p "+strconv.FormatFloat(*e.VsBest.PValue, 'f', 3, 64) {
				t.Errorf("row %d tied with best: %q", i, vs)
			}
		default:
			want := strconv.FormatFloat(-e.VsBest.Difference, 'f', 4, 64) + " [" + strconv.FormatFloat(-*e.VsBest.IntervalUpper, 'f', 4, 64) + ", "
			if !strings.HasPrefix(vs, want) || strings.Contains(vs, "tied") {
				t.Errorf("row %d vs best %q, want it to start %q (this minus best)", i, vs, want)
			}
		}
		if want := map[bool]string{true: "yes", false: "no"}[front[i]]; r["Pareto front (tokens)"] != want {
			t.Errorf("row %d Pareto front %q, want %s", i, r["Pareto front (tokens)"], want)
		}
	}
	// The fixture's shape: rank 1 on the front, rank 2 (same build, lower objective) and
	// both twins of rank 5 and 6 as the test of ties.
	if rows[0]["Pareto front (tokens)"] != "yes" || rows[1]["Pareto front (tokens)"] != "no" ||
		rows[4]["Pareto front (tokens)"] != "yes" || rows[5]["Pareto front (tokens)"] != "yes" {
		t.Errorf("fixture front: %v", buf.String())
	}

	buf.Reset()
	if err := WriteLeaderboard(&buf, exp, CostStorage); err != nil {
		t.Fatal(err)
	}
	_, rows = table(t, buf.String())
	last := rows[len(rows)-1]
	if last["storage"] != "-" || last["Pareto front (storage)"] != "-" || rows[0]["storage"] != "41.0 MiB" {
		t.Errorf("storage: the unmeasured last entry %v, rank 1 %q (want 41.0 MiB)", last, rows[0]["storage"])
	}
	if err := WriteLeaderboard(&buf, &ragopsv1alpha1.Experiment{}, CostTokens); err == nil {
		t.Error("an empty leaderboard: no error")
	}
}

// TestWriteParetoSVG reads the chart back: one square per candidate with a measured cost,
// placed at (cost, objective) by one linear map per axis, orange exactly for the front, and
// one orange line whose vertices are exactly the front's squares' centres, cheapest first.
func TestWriteParetoSVG(t *testing.T) {
	exp := loadExperiment(t)
	orangeHex, blueHex := hex(255, 127, 14), hex(31, 119, 180)
	for _, cost := range Costs {
		t.Run(string(cost), func(t *testing.T) {
			var buf bytes.Buffer
			if err := WritePareto(&buf, exp, cost, "grid", "svg"); err != nil {
				t.Fatal(err)
			}
			doc := parseSVG(t, buf.String())
			plotRight := doc.width - 108 // the legend column
			cands, left := Candidates(exp, cost)
			if want := map[Cost]int{CostTokens: 0, CostStorage: 1}[cost]; left != want {
				t.Errorf("%d left out, want %d", left, want)
			}
			front := ParetoFront(cands)
			var markers []svgPath
			for _, p := range doc.paths {
				if (p.fill == orangeHex || p.fill == blueHex) && p.maxX < plotRight {
					markers = append(markers, p)
				}
			}
			if len(markers) != len(cands) {
				t.Fatalf("%d markers for %d candidates", len(markers), len(cands))
			}
			centre := func(p svgPath) [2]float64 { return [2]float64{(p.minX + p.maxX) / 2, (p.minY + p.maxY) / 2} }
			// Markers are drawn in candidate order; x and y are linear in cost and objective.
			lo, hi := 0, 0
			for i, c := range cands {
				if c.Cost < cands[lo].Cost {
					lo = i
				}
				if c.Cost > cands[hi].Cost {
					hi = i
				}
			}
			ax := (centre(markers[hi])[0] - centre(markers[lo])[0]) / (cands[hi].Cost - cands[lo].Cost)
			ay := (centre(markers[hi])[1] - centre(markers[lo])[1]) / (cands[hi].Objective - cands[lo].Objective)
			if ax <= 0 || ay >= 0 {
				t.Fatalf("cost must grow rightwards (%g), objective upwards (%g)", ax, ay)
			}
			var frontCentres [][2]float64
			for i, c := range cands {
				m := centre(markers[i])
				if math.Abs(m[0]-centre(markers[lo])[0]-ax*(c.Cost-cands[lo].Cost)) > 0.05 ||
					math.Abs(m[1]-centre(markers[lo])[1]-ay*(c.Objective-cands[lo].Objective)) > 0.05 {
					t.Errorf("candidate %s (%g, %g) drawn at %v, off the axes' maps", c.Label, c.Cost, c.Objective, m)
				}
				wantFill := blueHex
				if slices.Contains(front, i) {
					wantFill = orangeHex
				}
				if markers[i].fill != wantFill {
					t.Errorf("candidate %s filled %s, want %s", c.Label, markers[i].fill, wantFill)
				}
				// Its rank is in one label just right of its square, at most a few lines below.
				var beside []svgText
				for _, tx := range doc.texts {
					if slices.Contains(strings.Split(tx.s, ", "), strconv.Itoa(int(c.Rank))) && tx.x < plotRight {
						beside = append(beside, tx)
					}
				}
				if len(beside) != 1 || math.Abs(beside[0].x-markers[i].maxX-1) > 0.5 || beside[0].y < m[1] || beside[0].y > m[1]+4*beside[0].size {
					t.Errorf("candidate %s: rank %d labelled %v, want once just right of its marker at %v", c.Label, c.Rank, beside, m)
				}
			}
			for _, i := range front {
				frontCentres = append(frontCentres, centre(markers[i]))
			}
			var lines []svgPath
			for _, p := range doc.paths {
				if p.stroke == orangeHex && p.fill == "" && p.maxX < plotRight {
					lines = append(lines, p)
				}
			}
			if len(lines) != 1 {
				t.Fatalf("%d orange lines in the plot, want the front's one", len(lines))
			}
			if len(lines[0].pts) != len(frontCentres) {
				t.Fatalf("front line through %d points, front has %d", len(lines[0].pts), len(frontCentres))
			}
			for k, p := range lines[0].pts {
				if math.Hypot(p[0]-frontCentres[k][0], p[1]-frontCentres[k][1]) > 0.05 {
					t.Errorf("front line vertex %d at %v, front candidate %s at %v", k, p, cands[front[k]].Label, frontCentres[k])
				}
			}
			if cost == CostStorage && len(doc.text("grid (1 without storage bytes left out)")) != 1 {
				t.Error("the title does not say one entry was left out")
			}
		})
	}
}

// TestWriteParetoErrors: an unknown cost or format, and a leaderboard with no measured cost.
func TestWriteParetoErrors(t *testing.T) {
	exp := loadExperiment(t)
	var buf bytes.Buffer
	if err := WritePareto(&buf, exp, "dollars", "t", "svg"); err == nil || !strings.Contains(err.Error(), "tokens or storage") {
		t.Errorf("cost dollars: %v", err)
	}
	if err := WritePareto(&buf, exp, CostTokens, "t", "gif"); err == nil {
		t.Error("format gif: no error")
	}
	unmeasured := exp.DeepCopy()
	for i := range unmeasured.Status.Leaderboard {
		unmeasured.Status.Leaderboard[i].StorageBytes = 0
	}
	if err := WritePareto(&buf, unmeasured, CostStorage, "t", "svg"); err == nil || !strings.Contains(err.Error(), "storage bytes") {
		t.Errorf("no storage measured: %v", err)
	}
}
