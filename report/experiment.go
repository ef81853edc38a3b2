package report

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Cost is what the Pareto chart of an Experiment puts on its cost axis.
type Cost string

// Costs of a candidate: both are its trial's build's, so every retrieval variant of one
// trial costs the same.
const (
	// CostTokens is the tokens the build embedded (status.leaderboard[].tokens).
	CostTokens Cost = "tokens"
	// CostStorage is the bytes of the build's collection (status.leaderboard[].storageBytes).
	CostStorage Cost = "storage"
)

// Costs are the values of Cost.
var Costs = []Cost{CostTokens, CostStorage}

// Candidate is one leaderboard entry of an Experiment on the objective/cost plane.
type Candidate struct {
	// Entry is the candidate's index in status.leaderboard; Rank its rank (1 is best);
	// Label is "<trial> <retrieval>".
	Entry int
	Rank  int32
	Label string
	// Objective is the objective's mean; Interval its confidence interval, nil without one.
	Objective float64
	Interval  *ragopsv1alpha1.ConfidenceInterval
	// Cost is the candidate's tokens or storage bytes.
	Cost float64
}

// costOf returns e's cost on axis cost.
func costOf(e ragopsv1alpha1.LeaderboardEntry, cost Cost) float64 {
	if cost == CostStorage {
		return float64(e.StorageBytes)
	}
	return float64(e.Tokens)
}

// objectiveInterval returns the objective's interval, nil unless status has both bounds.
func objectiveInterval(o ragopsv1alpha1.ObjectiveValue) *ragopsv1alpha1.ConfidenceInterval {
	if o.IntervalLower == nil || o.IntervalUpper == nil {
		return nil
	}
	return &ragopsv1alpha1.ConfidenceInterval{Lower: *o.IntervalLower, Upper: *o.IntervalUpper}
}

// Candidates returns exp's leaderboard entries in leaderboard order as Candidates on cost,
// and how many entries were left out because their cost is 0 (not measured: a cost of 0
// would dominate every measured candidate).
func Candidates(exp *ragopsv1alpha1.Experiment, cost Cost) ([]Candidate, int) {
	var cs []Candidate
	left := 0
	for i, e := range exp.Status.Leaderboard {
		c := costOf(e, cost)
		if c <= 0 {
			left++
			continue
		}
		cs = append(cs, Candidate{Entry: i, Rank: e.Rank, Label: e.Trial + " " + e.Retrieval, Objective: e.Objective.Value,
			Interval: objectiveInterval(e.Objective), Cost: c})
	}
	return cs, left
}

// Dominates reports whether a dominates b when the objective is maximised and the cost
// minimised: a is at least as good in both (a.Objective >= b.Objective, a.Cost <= b.Cost)
// and strictly better in one (Pareto dominance; Deb, Multi-Objective Optimization using
// Evolutionary Algorithms, 2001, Definition 2.4).
func Dominates(a, b Candidate) bool {
	return a.Objective >= b.Objective && a.Cost <= b.Cost && (a.Objective > b.Objective || a.Cost < b.Cost)
}

// ParetoFront returns the indexes into cs of the candidates no other candidate dominates
// (Dominates): the Pareto front, or the maxima of the set in the sense of Kung, Luccio and
// Preparata (J. ACM 22(4), 1975). On it a higher objective is bought only with a higher
// cost; a candidate off it is beaten on both by one on it. Candidates equal in objective
// and cost do not dominate each other, so an undominated pair is on the front together;
// of candidates at one cost only those with the highest objective can be on it. The
// indexes are in drawing order: cost ascending, then objective ascending, then index.
func ParetoFront(cs []Candidate) []int {
	var front []int
	for i, c := range cs {
		if !slices.ContainsFunc(cs, func(o Candidate) bool { return Dominates(o, c) }) {
			front = append(front, i)
		}
	}
	slices.SortStableFunc(front, func(a, b int) int {
		return cmp.Or(cmp.Compare(cs[a].Cost, cs[b].Cost), cmp.Compare(cs[a].Objective, cs[b].Objective))
	})
	return front
}

// ObjectiveName is the Experiment's objective at its cut-off, e.g. "recall@10" or "spanHit@5".
func ObjectiveName(exp *ragopsv1alpha1.Experiment) string {
	return fmt.Sprintf("%s@%d", exp.Spec.Objective.Metric, cmp.Or(exp.Spec.Objective.K, 10))
}

// costLabel is the cost axis's and column's name.
func costLabel(cost Cost) string {
	if cost == CostStorage {
		return "storage bytes"
	}
	return "embedded tokens"
}

// otherMetric is a metric of MetricsAtK printed beside the objective.
type otherMetric struct {
	name   ragopsv1alpha1.ObjectiveMetric
	header string
	value  func(m *ragopsv1alpha1.MetricsAtK) *float64
}

var otherMetrics = []otherMetric{
	{ragopsv1alpha1.ObjectiveRecall, "recall", func(m *ragopsv1alpha1.MetricsAtK) *float64 { return &m.Recall }},
	{ragopsv1alpha1.ObjectiveNDCG, "nDCG", func(m *ragopsv1alpha1.MetricsAtK) *float64 { return &m.NDCG }},
	{ragopsv1alpha1.ObjectiveMRR, "MRR", func(m *ragopsv1alpha1.MetricsAtK) *float64 { return &m.MRR }},
	{ragopsv1alpha1.ObjectiveSpanHit, "span hit", func(m *ragopsv1alpha1.MetricsAtK) *float64 { return m.SpanHit }},
}

// WriteLeaderboard writes exp's status.leaderboard as a Markdown table, best first: rank,
// trial, retrieval, parameters (key=value, sorted), the objective at four decimals with
// its interval in brackets where status has one, the other metrics at the objective's
// cut-off (recall, nDCG, MRR, and span hit when an entry has it; "-" where an entry has no
// metrics), tokens, chunks, storage (bytes in KiB/MiB/GiB), build seconds, the comparison
// with the best and whether the candidate is on the Pareto front of cost (ParetoFront of
// Candidates; "-" for an entry whose cost is not measured). The comparison is the
// controller's adjusted one (vsBest: difference, simultaneous interval, adjusted p-value;
// tiedWithBest exactly when the interval holds 0), so a tie is never shown as a win: rank 1
// is "best" only when no entry is tied with it, else "tied for best with N"; a tied entry
// is "tied with best" with its p-value; any other shows the difference to the best as this
// minus best with its interval and p-value ("p < 0.001" below that; "-" without one). The
// entry status.currentOptimalTrial names gets "; winner", and "(cheapest tied)" when it is
// not rank 1.
//
// Errors: an empty leaderboard.
func WriteLeaderboard(w io.Writer, exp *ragopsv1alpha1.Experiment, cost Cost) error {
	lb := exp.Status.Leaderboard
	if len(lb) == 0 {
		return fmt.Errorf("report: Experiment %s has no leaderboard yet", exp.Name)
	}
	level := "95%"
	for _, e := range lb {
		if l, err := strconv.ParseFloat(e.Objective.ConfidenceLevel, 64); err == nil && objectiveInterval(e.Objective) != nil {
			level = strconv.FormatFloat(l*100, 'f', -1, 64) + "%"
			break
		}
	}
	var others []otherMetric
	for _, m := range otherMetrics {
		if m.name == exp.Spec.Objective.Metric {
			continue
		}
		if m.name == ragopsv1alpha1.ObjectiveSpanHit && !slices.ContainsFunc(lb, func(e ragopsv1alpha1.LeaderboardEntry) bool {
			return e.Metrics != nil && e.Metrics.SpanHit != nil
		}) {
			continue
		}
		others = append(others, m)
	}
	k := cmp.Or(exp.Spec.Objective.K, 10)
	head := []string{"rank", "trial", "retrieval", "parameters", fmt.Sprintf("%s [%s interval]", ObjectiveName(exp), level)}
	rule := []string{"---:", "---", "---", "---", "---:"}
	for _, m := range others {
		head, rule = append(head, fmt.Sprintf("%s@%d", m.header, k)), append(rule, "---:")
	}
	head = append(head, "tokens", "chunks", "storage", "build s", "vs best", "Pareto front ("+string(cost)+")")
	rule = append(rule, "---:", "---:", "---:", "---:", "---", "---")

	tied := 0
	for _, e := range lb {
		if e.TiedWithBest {
			tied++
		}
	}
	cands, _ := Candidates(exp, cost)
	onFront := map[int]bool{}
	for _, i := range ParetoFront(cands) {
		onFront[cands[i].Entry] = true
	}
	var sb strings.Builder
	line := func(cells []string) { sb.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	line(head)
	line(rule)
	for i, e := range lb {
		obj := fmt4(e.Objective.Value)
		if ci := objectiveInterval(e.Objective); ci != nil {
			obj += fmt.Sprintf(" [%s, %s]", fmt4(ci.Lower), fmt4(ci.Upper))
		}
		cells := []string{strconv.Itoa(int(e.Rank)), e.Trial, e.Retrieval, parameters(e.Parameters), obj}
		for _, m := range others {
			if e.Metrics == nil {
				cells = append(cells, "-")
			} else {
				cells = append(cells, fmtPtr(m.value(e.Metrics)))
			}
		}
		front := "-"
		if costOf(e, cost) > 0 {
			front = map[bool]string{true: "yes", false: "no"}[onFront[i]]
		}
		cells = append(cells, strconv.FormatInt(e.Tokens, 10), strconv.FormatInt(e.Chunks, 10), humanBytes(e.StorageBytes),
			strconv.FormatInt(e.BuildSeconds, 10), vsBest(e, tied, exp.Status.CurrentOptimalTrial), front)
		line(cells)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// parameters is "k1=v1, k2=v2" in key order, "-" when none.
func parameters(ps map[string]string) string {
	if len(ps) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(ps))
	for k := range ps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + ps[k]
	}
	return strings.Join(keys, ", ")
}

// vsBest is the "vs best" cell of e (see WriteLeaderboard), tied the number of entries tied
// with the best and opt the optimal candidate. VsBest's difference is best minus e; the cell
// prints e minus best, its interval negated.
func vsBest(e ragopsv1alpha1.LeaderboardEntry, tied int, opt *ragopsv1alpha1.OptimalTrial) string {
	s := comparedWithBest(e, tied)
	if opt != nil && opt.Trial == e.Trial && opt.Retrieval == e.Retrieval {
		s += "; winner"
		if e.Rank != 1 {
			s += " (cheapest tied)"
		}
	}
	return s
}

func comparedWithBest(e ragopsv1alpha1.LeaderboardEntry, tied int) string {
	c := e.VsBest
	p := ""
	switch {
	case c != nil && c.PValue != nil && *c.PValue < 0.001:
		p = ", p < 0.001"
	case c != nil && c.PValue != nil:
		p = fmt.Sprintf(", p %.3f", *c.PValue)
	}
	switch {
	case e.Rank == 1 && c == nil && tied > 0:
		return fmt.Sprintf("tied for best with %d", tied)
	case e.Rank == 1 && c == nil:
		return "best"
	case e.TiedWithBest:
		return "tied with best" + p
	case c == nil:
		return "-"
	}
	s := fmt.Sprintf("%+.4f", -c.Difference)
	if c.IntervalLower != nil && c.IntervalUpper != nil {
		s += fmt.Sprintf(" [%+.4f, %+.4f]", -*c.IntervalUpper, -*c.IntervalLower)
	}
	return s + p
}

// humanBytes writes n as 512 B, 1.5 KiB, 12.0 MiB or 1.2 GiB; 0 (not measured) as "-".
func humanBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 2 {
		v, i = v/unit, i+1
	}
	return fmt.Sprintf("%.1f %s", v, []string{"KiB", "MiB", "GiB"}[i])
}

// humanCount writes a token count as 950, 12.5k or 1.2M.
func humanCount(v float64) string {
	f := func(x float64, unit string) string {
		return strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0") + unit
	}
	switch a := math.Abs(v); {
	case a >= 1e6:
		return f(v/1e6, "M")
	case a >= 1e3:
		return f(v/1e3, "k")
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Pareto chart colours: candidates on the front and its line in orange, the others blue.
var (
	frontColor = orange
	otherColor = blue
)

// WritePareto draws exp's leaderboard as format "svg" or "png": the objective (y, zoomed
// as Zoom does, with the intervals as whiskers) against cost (x, tokens or storage bytes,
// zoomed to the data with a tenth of its spread as margin), one square per candidate
// labelled with its rank, the candidates on the Pareto front (ParetoFront) in orange and
// joined by a line in cost order, the others blue. Format "markdown" writes
// WriteLeaderboard instead. Entries whose cost is 0 (not measured) are left out of the
// chart, and the title says how many.
//
// Errors: an unknown format or cost, no entry with a measured cost.
func WritePareto(w io.Writer, exp *ragopsv1alpha1.Experiment, cost Cost, title, format string) error {
	if !slices.Contains(Costs, cost) {
		return fmt.Errorf("report: cost %q: want tokens or storage", cost)
	}
	if format == "markdown" {
		return WriteLeaderboard(w, exp, cost)
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	cands, left := Candidates(exp, cost)
	if len(cands) == 0 {
		return fmt.Errorf("report: Experiment %s has no leaderboard entry with %s yet", exp.Name, costLabel(cost))
	}
	if left > 0 {
		title += fmt.Sprintf(" (%d without %s left out)", left, costLabel(cost))
	}
	var ys, xs []float64
	for _, c := range cands {
		ys, xs = append(ys, c.Objective), append(xs, c.Cost)
		if c.Interval != nil {
			ys = append(ys, c.Interval.Lower, c.Interval.Upper)
		}
	}
	zoom := Zoom(ys)
	p := newPlot(title, zoom)
	p.Y.Label.Text = ObjectiveName(exp) + ", axis " + zoom.String()
	if zoom.Min > 0 {
		p.Y.Label.Text += " (not from 0)"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	margin := max(hi-lo, hi*0.1) / 10
	p.X.Min, p.X.Max = max(0, lo-margin), hi+margin
	p.X.Label.Text = costLabel(cost)
	if p.X.Min > 0 {
		p.X.Label.Text += " (axis not from 0)"
	}
	p.X.Tick.Marker = costTicks{cost}
	p.Add(&paretoPoints{cands: cands, front: ParetoFront(cands), zoom: zoom, xmin: p.X.Min, xmax: p.X.Max})

	legend := plot.NewLegend()
	legend.Add("Pareto front", frontThumb{})
	legend.Add("dominated", markerThumb{otherColor})
	if slices.ContainsFunc(cands, func(c Candidate) bool { return c.Interval != nil }) {
		legend.Add("95% interval", whiskerThumb{})
	}
	legend.Add("labels: ranks", noThumb{})
	return render(w, p, legend, 7*vg.Inch, format)
}

// costTicks puts the default ticks on the cost axis, labelled with humanCount for tokens;
// for storage they are chosen in the binary unit (KiB, MiB, GiB) of the axis's maximum, so
// that they fall on round numbers of it.
type costTicks struct{ cost Cost }

func (t costTicks) Ticks(min, max float64) []plot.Tick {
	if t.cost != CostStorage {
		ts := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = humanCount(ts[i].Value)
			}
		}
		return ts
	}
	unit, name := 1.0, "B"
	for _, u := range []string{"KiB", "MiB", "GiB"} {
		if max < unit*1024 {
			break
		}
		unit, name = unit*1024, u
	}
	ts := plot.DefaultTicks{}.Ticks(min/unit, max/unit)
	for i := range ts {
		ts[i].Value *= unit
		if ts[i].Label != "" {
			ts[i].Label += " " + name
		}
	}
	return ts
}

// markerHalf is half the side of a candidate's square.
const markerHalf = 3.5

// paretoPoints draws the candidates: whiskers, then the front's line, then the squares with
// their ranks.
type paretoPoints struct {
	cands      []Candidate
	front      []int
	zoom       Range
	xmin, xmax float64
}

func (pp *paretoPoints) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, cd := range pp.cands {
		if cd.Interval != nil {
			drawWhisker(c, trY, trX(cd.Cost), vg.Points(markerHalf), cd.Interval, pp.zoom)
		}
	}
	if len(pp.front) > 1 {
		line := make([]vg.Point, len(pp.front))
		for i, f := range pp.front {
			line[i] = vg.Point{X: trX(pp.cands[f].Cost), Y: trY(pp.cands[f].Objective)}
		}
		c.StrokeLines(draw.LineStyle{Color: frontColor, Width: vg.Points(1.5)}, line)
	}
	h := vg.Points(markerHalf)
	for i, cd := range pp.cands {
		col := otherColor
		if slices.Contains(pp.front, i) {
			col = frontColor
		}
		c.FillPolygon(col, square(vg.Point{X: trX(cd.Cost), Y: trY(cd.Objective)}, h))
	}
	// Ranks right of their squares; candidates at one point share a label ("5, 6"), and a
	// label that would cover one already placed moves down below it.
	sty := draw.TextStyle{Color: color.Gray{Y: 40}, Font: plot.DefaultFont, XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.Title.TextStyle.Handler}
	sty.Font.Size = vg.Points(8)
	type label struct {
		at    vg.Point
		ranks []string
	}
	var labels []label
	for _, cd := range pp.cands {
		at := vg.Point{X: trX(cd.Cost) + h + vg.Points(1), Y: trY(cd.Objective)}
		if i := slices.IndexFunc(labels, func(l label) bool { return l.at == at }); i >= 0 {
			labels[i].ranks = append(labels[i].ranks, strconv.Itoa(int(cd.Rank)))
			continue
		}
		labels = append(labels, label{at: at, ranks: []string{strconv.Itoa(int(cd.Rank))}})
	}
	slices.SortStableFunc(labels, func(a, b label) int { return cmp.Compare(b.at.Y, a.at.Y) })
	var placed []vg.Rectangle
	for _, l := range labels {
		text := strings.Join(l.ranks, ", ")
		for slices.ContainsFunc(placed, func(o vg.Rectangle) bool { return overlaps(sty.Rectangle(text).Add(l.at), o) }) {
			l.at.Y -= vg.Points(1)
		}
		placed = append(placed, sty.Rectangle(text).Add(l.at))
		c.FillText(sty, l.at, text)
	}
}

// overlaps reports whether rectangles a and b share an inner point.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// square returns the corners of the square of half side h around p.
func square(p vg.Point, h vg.Length) []vg.Point {
	return []vg.Point{{X: p.X - h, Y: p.Y - h}, {X: p.X - h, Y: p.Y + h}, {X: p.X + h, Y: p.Y + h}, {X: p.X + h, Y: p.Y - h}}
}

func (pp *paretoPoints) DataRange() (xmin, xmax, ymin, ymax float64) {
	return pp.xmin, pp.xmax, pp.zoom.Min, pp.zoom.Max
}

// frontThumb is the legend thumbnail of the front: a line through an orange square.
type frontThumb struct{}

func (frontThumb) Thumbnail(c *draw.Canvas) {
	mid := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	c.StrokeLine2(draw.LineStyle{Color: frontColor, Width: vg.Points(1.5)}, c.Min.X, mid.Y, c.Max.X, mid.Y)
	c.FillPolygon(frontColor, square(mid, vg.Points(markerHalf)))
}

// markerThumb is the legend thumbnail of a candidate: its square.
type markerThumb struct{ c color.Color }

func (m markerThumb) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(m.c, square(vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}, vg.Points(markerHalf)))
}

// noThumb is a legend entry without a thumbnail (a note).
type noThumb struct{}

func (noThumb) Thumbnail(*draw.Canvas) {}
