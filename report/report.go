// Package report renders Evaluations for a person: a comparison chart of recall@10 and nDCG@10
// (and the span hit rate, for datasets with annotated spans) per Index, grouped by retrieval
// mode and sorted by score, a chart of one Index's recall@10 over its revisions (what a GitOps
// rollout changed), and the same figures as a Markdown table. Charts are drawn with
// gonum.org/v1/plot in SVG or PNG.
//
// The score axis is zoomed to the data (Zoom) and the range is printed on the chart, so
// differences of a few hundredths are visible; the legend sits in its own column to the right
// of the plot, never over the bars.
package report

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Formats are the values of Write's and WriteRevisions' format.
var Formats = []string{"svg", "png", "markdown"}

// Row is one Evaluation's @10 figures, as fractions in [0,1].
type Row struct {
	Label string // "<index> <mode>", mode in lower case, then "rrf" or "rsf" for a hybrid fusion
	Index string
	Mode  ragopsv1alpha1.RetrievalMode
	// Fusion is a Hybrid Evaluation's spec.hybrid.fusion; empty otherwise.
	Fusion ragopsv1alpha1.FusionType
	// Revision of the Index that was evaluated (status.revision); empty when not recorded.
	Revision     string
	Recall, NDCG float64
	// MRR is nil when the status has no MRR@10.
	MRR *float64
	// SpanHit is the share of queries whose top 10 chunks overlap an annotated span; nil when
	// the dataset has no spans.
	SpanHit *float64
	// SpanHitAt is spanHit@k at the Evaluation's other cut-offs (spec.k), by k; nil when
	// none.
	SpanHitAt map[int32]float64
	// RecallCI, NDCGCI and SpanHitCI are the 95% intervals of recall@10, nDCG@10 and span
	// hit@10 (status.metrics[k=10]); nil when the status has none.
	RecallCI, NDCGCI, SpanHitCI *ragopsv1alpha1.ConfidenceInterval
}

// modeOrder is the order of the mode groups: the API's order of RetrievalMode.
var modeOrder = map[ragopsv1alpha1.RetrievalMode]int{ragopsv1alpha1.ModeDense: 0, ragopsv1alpha1.ModeBM25: 1, ragopsv1alpha1.ModeHybrid: 2}

// Rows returns the Evaluations that have recall@10 and nDCG@10 in status, grouped by mode
// (Dense, BM25, Hybrid, then any other in name order) and, within a mode, sorted by recall@10
// descending, then nDCG@10 descending, then Index name. An empty mode counts as Dense (the
// API default).
func Rows(evals []ragopsv1alpha1.Evaluation) []Row {
	var rows []Row
	for _, e := range evals {
		if e.Status.RecallAt10 == nil || e.Status.NDCGAt10 == nil {
			continue
		}
		mode := cmp.Or(e.Spec.Mode, ragopsv1alpha1.ModeDense)
		var fusion ragopsv1alpha1.FusionType
		if mode == ragopsv1alpha1.ModeHybrid && e.Spec.Hybrid != nil {
			fusion = e.Spec.Hybrid.Fusion
		}
		label := e.Spec.IndexRef.Name + " " + strings.ToLower(string(mode))
		if f := fusionAbbrev[fusion]; f != "" {
			label += " " + f
		}
		row := Row{Label: label, Fusion: fusion,
			Index: e.Spec.IndexRef.Name, Mode: mode, Revision: e.Status.Revision,
			Recall: *e.Status.RecallAt10, NDCG: *e.Status.NDCGAt10, MRR: e.Status.MRRAt10, SpanHit: e.Status.SpanHitRate,
			SpanHitAt: spanHitsAt(e.Status.Metrics)}
		if i := slices.IndexFunc(e.Status.Metrics, func(m ragopsv1alpha1.MetricsAtK) bool { return m.K == 10 }); i >= 0 {
			m := e.Status.Metrics[i]
			row.RecallCI, row.NDCGCI, row.SpanHitCI = m.RecallInterval, m.NDCGInterval, m.SpanHitInterval
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		return cmp.Or(compareModes(a.Mode, b.Mode), cmp.Compare(b.Recall, a.Recall), cmp.Compare(b.NDCG, a.NDCG),
			cmp.Compare(a.Index, b.Index), cmp.Compare(a.Revision, b.Revision))
	})
	return rows
}

// fusionAbbrev names the hybrid fusions in labels: reciprocal rank fusion (Cormack et al.,
// SIGIR 2009) and Weaviate's relative score fusion.
var fusionAbbrev = map[ragopsv1alpha1.FusionType]string{ragopsv1alpha1.FusionRanked: "rrf", ragopsv1alpha1.FusionRelativeScore: "rsf"}

// spanHitsAt returns spanHit@k of every cut-off but 10 that has one.
func spanHitsAt(ms []ragopsv1alpha1.MetricsAtK) map[int32]float64 {
	var at map[int32]float64
	for _, m := range ms {
		if m.SpanHit != nil && m.K != 10 {
			if at == nil {
				at = map[int32]float64{}
			}
			at[m.K] = *m.SpanHit
		}
	}
	return at
}

func compareModes(a, b ragopsv1alpha1.RetrievalMode) int {
	oa, ka := modeOrder[a]
	ob, kb := modeOrder[b]
	if !ka {
		oa = len(modeOrder)
	}
	if !kb {
		ob = len(modeOrder)
	}
	return cmp.Or(cmp.Compare(oa, ob), cmp.Compare(a, b))
}

// Range is a score axis range [Min, Max] within [0,1].
type Range struct{ Min, Max float64 }

// String prints the range as "0.60–0.90".
func (r Range) String() string { return fmt.Sprintf("%.2f–%.2f", r.Min, r.Max) }

// Zoom returns the axis range that shows values: the smallest range on a step of 0.05 (0.01
// when the values span less than 0.05) that holds every value with a margin of a fifth of
// their spread below and a third above (room for the value labels), clamped to [0,1]. No
// values give [0,1]; equal values get the margin of a spread of 0.05.
func Zoom(values []float64) Range {
	if len(values) == 0 {
		return Range{0, 1}
	}
	lo, hi := slices.Min(values), slices.Max(values)
	spread := max(hi-lo, 0.05)
	step := 0.05
	if hi-lo < 0.05 {
		step = 0.01
	}
	r := Range{Min: math.Floor((lo-spread/5)/step+1e-9) * step, Max: math.Ceil((hi+spread/3)/step-1e-9) * step}
	r.Min, r.Max = max(0, round4(r.Min)), min(1, round4(r.Max))
	return r
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// series is one kind of figure of a chart, with its colour and its interval (nil when the
// row has none).
type series struct {
	label string
	c     color.Color
	value func(Row) (float64, bool)
	ci    func(Row) *ragopsv1alpha1.ConfidenceInterval
}

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	grey   = color.RGBA{R: 150, G: 150, B: 150, A: 255}
)

// seriesOf returns recall@10, nDCG@10 and, when any row has one, span hit@10.
func seriesOf(rows []Row) []series {
	s := []series{
		{"recall@10", blue, func(r Row) (float64, bool) { return r.Recall, true }, func(r Row) *ragopsv1alpha1.ConfidenceInterval { return r.RecallCI }},
		{"nDCG@10", orange, func(r Row) (float64, bool) { return r.NDCG, true }, func(r Row) *ragopsv1alpha1.ConfidenceInterval { return r.NDCGCI }},
	}
	if slices.ContainsFunc(rows, func(r Row) bool { return r.SpanHit != nil }) {
		s = append(s, series{"span hit@10", green, func(r Row) (float64, bool) {
			if r.SpanHit == nil {
				return 0, false
			}
			return *r.SpanHit, true
		}, func(r Row) *ragopsv1alpha1.ConfidenceInterval { return r.SpanHitCI }})
	}
	return s
}

// Write renders rows (in the order Rows returns them) to w as format "svg" or "png" (grouped
// bars on a zoomed axis, one group of bars per Evaluation, a gap and a heading per mode, the
// 95% interval as a whisker on every bar that has one, the value above each bar and its
// whisker, the legend to the right, saying what the whiskers are) or "markdown"
// (WriteMarkdown).
//
// Errors: no rows, an unknown format.
func Write(w io.Writer, rows []Row, title, format string) error {
	if len(rows) == 0 {
		return fmt.Errorf("report: no Evaluation has recall@10 yet")
	}
	if format == "markdown" {
		return WriteMarkdown(w, rows)
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	ss := seriesOf(rows)
	var all []float64
	for _, r := range rows {
		for _, s := range ss {
			if v, ok := s.value(r); ok {
				all = append(all, v)
			}
			if ci := s.ci(r); ci != nil {
				all = append(all, ci.Lower, ci.Upper)
			}
		}
	}
	zoom := Zoom(all)
	p := newPlot(title, zoom)

	// x positions: the rows of one mode side by side, one empty slot between modes.
	xs := make([]float64, len(rows))
	var names []string
	var groups []group
	for i, r := range rows {
		if i > 0 && r.Mode != rows[i-1].Mode {
			names = append(names, "")
		}
		if i == 0 || r.Mode != rows[i-1].Mode {
			groups = append(groups, group{label: string(r.Mode), from: float64(len(names))})
		}
		xs[i] = float64(len(names))
		groups[len(groups)-1].to = xs[i]
		names = append(names, r.Index)
	}
	const slot = 0.8 // share of a slot the bars of one row fill
	width := slot / float64(len(ss))
	b := &bars{zoom: zoom}
	legend := plot.NewLegend()
	for si, s := range ss {
		for i, r := range rows {
			if v, ok := s.value(r); ok {
				br := bar{x0: xs[i] - slot/2 + float64(si)*width, x1: xs[i] - slot/2 + float64(si+1)*width, v: v, c: s.c, ci: s.ci(r)}
				b.bars = append(b.bars, br)
			}
		}
		legend.Add(s.label, swatch{s.c})
	}
	if slices.ContainsFunc(b.bars, func(br bar) bool { return br.ci != nil }) {
		legend.Add("95% interval", whiskerThumb{})
	}
	p.Add(b, &headings{groups: groups, zoom: zoom})
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return render(w, p, legend, vg.Length(max(7, float64(len(names))*0.62+2))*vg.Inch, format)
}

// checkFormat accepts the picture formats.
func checkFormat(format string) error {
	if format != "svg" && format != "png" {
		return fmt.Errorf("report: format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	return nil
}

// newPlot returns a plot with title and a score axis on zoom, its range in the axis label.
func newPlot(title string, zoom Range) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "score, axis " + zoom.String()
	if zoom.Min > 0 {
		p.Y.Label.Text += " (not from 0)"
	}
	p.Y.Min, p.Y.Max = zoom.Min, zoom.Max
	p.Y.Tick.Marker = plot.ConstantTicks(ticks(zoom))
	p.Add(&plotter.Grid{Horizontal: draw.LineStyle{Color: color.Gray{Y: 220}, Width: vg.Points(0.5)}})
	return p
}

// ticks marks the zoomed axis every 0.05 (0.01 on a range under 0.1, 0.1 on one over 0.5).
func ticks(r Range) []plot.Tick {
	step := 0.05
	switch {
	case r.Max-r.Min < 0.1:
		step = 0.01
	case r.Max-r.Min > 0.5:
		step = 0.1
	}
	var ts []plot.Tick
	for i := math.Ceil(r.Min/step - 1e-9); i*step <= r.Max+1e-9; i++ {
		v := round4(i * step)
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%.2f", v)})
	}
	return ts
}

// render draws p on the left of a canvas of width w and the legend in a column to its right,
// then writes the canvas as format.
func render(w io.Writer, p *plot.Plot, legend plot.Legend, width vg.Length, format string) error {
	const legendColumn = 1.5 * vg.Inch
	c, err := draw.NewFormattedCanvas(width+legendColumn, 5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("report: format %q: %w", format, err)
	}
	dc := draw.New(c)
	dc.FillPolygon(color.White, []vg.Point{{X: dc.Min.X, Y: dc.Min.Y}, {X: dc.Min.X, Y: dc.Max.Y}, {X: dc.Max.X, Y: dc.Max.Y}, {X: dc.Max.X, Y: dc.Min.Y}})
	p.Draw(draw.Crop(dc, 0, -legendColumn, 0, 0))
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(11)
	legend.Draw(draw.Crop(dc, width+vg.Points(8), 0, 0, -vg.Points(30)))
	_, err = c.WriteTo(w)
	return err
}

// swatch is a legend thumbnail: a filled square.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(s.c, c.ClipPolygonXY(pts))
}

// bar is one bar from the bottom of the zoomed axis up to v, between x0 and x1 in data units,
// with its interval ci (nil: none).
type bar struct {
	x0, x1, v float64
	c         color.Color
	ci        *ragopsv1alpha1.ConfidenceInterval
}

// whiskerColor draws the intervals: dark enough to read over every bar colour.
var whiskerColor = color.RGBA{R: 40, G: 40, B: 40, A: 255}

// drawWhisker draws interval ci at x as a vertical line clamped to zoom, with caps of half
// width cap, and returns the y of its top.
func drawWhisker(c draw.Canvas, trY func(float64) vg.Length, x, cap vg.Length, ci *ragopsv1alpha1.ConfidenceInterval, zoom Range) vg.Length {
	lo, hi := trY(math.Max(ci.Lower, zoom.Min)), trY(math.Min(ci.Upper, zoom.Max))
	line := draw.LineStyle{Color: whiskerColor, Width: vg.Points(1)}
	c.StrokeLine2(line, x, lo, x, hi)
	c.StrokeLine2(line, x-cap, lo, x+cap, lo)
	c.StrokeLine2(line, x-cap, hi, x+cap, hi)
	return hi
}

// whiskerThumb is the legend thumbnail of an interval: a whisker with its caps.
type whiskerThumb struct{}

func (whiskerThumb) Thumbnail(c *draw.Canvas) {
	sty := draw.LineStyle{Color: whiskerColor, Width: vg.Points(1)}
	x := (c.Min.X + c.Max.X) / 2
	w := (c.Max.X - c.Min.X) / 4
	c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
	c.StrokeLine2(sty, x-w, c.Min.Y, x+w, c.Min.Y)
	c.StrokeLine2(sty, x-w, c.Max.Y, x+w, c.Max.Y)
}

// bars draws bars from the bottom of the axis (a bar does not start at 0 on a zoomed axis:
// the axis label says so) with each value printed above its bar.
type bars struct {
	bars []bar
	zoom Range
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.TextStyle{Color: color.Gray{Y: 60}, Font: plot.DefaultFont, Rotation: math.Pi / 2, XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.Title.TextStyle.Handler}
	sty.Font.Size = vg.Points(7)
	for _, br := range b.bars {
		top := trY(math.Min(br.v, b.zoom.Max))
		bottom := trY(b.zoom.Min)
		x0, x1 := trX(br.x0)+vg.Points(0.5), trX(br.x1)-vg.Points(0.5)
		c.FillPolygon(br.c, c.ClipPolygonXY([]vg.Point{{X: x0, Y: bottom}, {X: x0, Y: top}, {X: x1, Y: top}, {X: x1, Y: bottom}}))
		label := top
		if br.ci != nil {
			// Capped a third of the bar wide.
			label = max(label, drawWhisker(c, trY, (x0+x1)/2, (x1-x0)/6, br.ci, b.zoom))
		}
		if br.v >= b.zoom.Min {
			c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: label + vg.Points(2)}, fmt.Sprintf("%.3f", br.v))
		}
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, br := range b.bars {
		xmin, xmax = min(xmin, br.x0), max(xmax, br.x1)
	}
	return xmin, xmax, b.zoom.Min, b.zoom.Max
}

// group is a run of x slots sharing a heading (a retrieval mode).
type group struct {
	label    string
	from, to float64
}

// headings writes each group's label at the top of the plot, centred over its slots, with a
// dashed line between groups.
type headings struct {
	groups []group
	zoom   Range
}

func (h *headings) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: p.Title.TextStyle.Handler}
	sty.Font.Size = vg.Points(11)
	line := draw.LineStyle{Color: grey, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	for i, g := range h.groups {
		c.FillText(sty, vg.Point{X: (trX(g.from) + trX(g.to)) / 2, Y: trY(h.zoom.Max) - vg.Points(3)}, g.label)
		if i > 0 {
			x := trX(g.from - 1)
			c.StrokeLine2(line, x, trY(h.zoom.Min), x, trY(h.zoom.Max))
		}
	}
}

// WriteMarkdown writes rows as a Markdown table in their order: mode, Index, revision (when
// any row has one), recall@10, nDCG@10, MRR@10, span hit@10 (when any row has one) and span
// hit@k at every other cut-off a row has, in ascending k ("-" where a row lacks it), four
// decimals, with "± h" (half the 95% interval) after recall@10, nDCG@10 and span hit@10
// where status has their interval. The best recall@10 and nDCG@10 of each mode are in bold
// only when they stand apart: the best row's 95% interval overlaps no other row's of the
// mode. Where intervals overlap, the best and every row whose interval overlaps its are
// marked "(tied)" and none is bold; in a mode where a row has no interval nothing is marked
// (nothing shows the point-best is better).
func WriteMarkdown(w io.Writer, rows []Row) error {
	if len(rows) == 0 {
		return fmt.Errorf("report: no Evaluation has recall@10 yet")
	}
	revs := slices.ContainsFunc(rows, func(r Row) bool { return r.Revision != "" })
	spans := slices.ContainsFunc(rows, func(r Row) bool { return r.SpanHit != nil })
	head, rule := []string{"mode", "Index"}, []string{"---", "---"}
	if revs {
		head, rule = append(head, "revision"), append(rule, "---")
	}
	head, rule = append(head, "recall@10", "nDCG@10", "MRR@10"), append(rule, "---:", "---:", "---:")
	if spans {
		head, rule = append(head, "span hit@10"), append(rule, "---:")
	}
	var ks []int32
	for _, r := range rows {
		for k := range r.SpanHitAt {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	for _, k := range ks {
		head, rule = append(head, fmt.Sprintf("span hit@%d", k)), append(rule, "---:")
	}
	recallMarks := bestMarks(rows, func(r Row) (float64, *ragopsv1alpha1.ConfidenceInterval) { return r.Recall, r.RecallCI })
	ndcgMarks := bestMarks(rows, func(r Row) (float64, *ragopsv1alpha1.ConfidenceInterval) { return r.NDCG, r.NDCGCI })
	var sb strings.Builder
	line := func(cells []string) { sb.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	line(head)
	line(rule)
	for i, r := range rows {
		mode := string(r.Mode)
		if f := fusionAbbrev[r.Fusion]; f != "" {
			mode += " " + strings.ToUpper(f)
		}
		cells := []string{mode, r.Index}
		if revs {
			cells = append(cells, cmp.Or(r.Revision, "-"))
		}
		cells = append(cells, recallMarks[i].apply(fmt4(r.Recall), plusMinus(r.RecallCI)), ndcgMarks[i].apply(fmt4(r.NDCG), plusMinus(r.NDCGCI)), fmtPtr(r.MRR))
		if spans {
			cells = append(cells, fmtPtr(r.SpanHit)+plusMinus(r.SpanHitCI))
		}
		for _, k := range ks {
			if v, ok := r.SpanHitAt[k]; ok {
				cells = append(cells, fmt4(v))
			} else {
				cells = append(cells, "-")
			}
		}
		line(cells)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func fmt4(v float64) string { return fmt.Sprintf("%.4f", v) }

// plusMinus is " ± h", h half the interval's width at 3 decimals, or "" without one.
func plusMinus(ci *ragopsv1alpha1.ConfidenceInterval) string {
	if ci == nil {
		return ""
	}
	return fmt.Sprintf(" ± %.3f", (ci.Upper-ci.Lower)/2)
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt4(*v)
}

// mark is how a cell of WriteMarkdown shows a row against its mode's best.
type mark int

const (
	unmarked mark = iota
	standsApart
	tiedForBest
)

// apply writes the value with its "± h" and the mark: bold when it stands apart, "(tied)"
// when tied for best.
func (m mark) apply(value, pm string) string {
	switch m {
	case standsApart:
		return "**" + value + "**" + pm
	case tiedForBest:
		return value + pm + " (tied)"
	}
	return value + pm
}

// bestMarks marks, per row, the best value of its mode (see WriteMarkdown): standsApart
// when the best row's interval overlaps no other row's of the mode, else tiedForBest for
// the best and the rows whose interval overlaps its; nothing in a mode where a row has no
// interval.
// Rows of equal best value are all the best.
func bestMarks(rows []Row, of func(Row) (float64, *ragopsv1alpha1.ConfidenceInterval)) []mark {
	marks := make([]mark, len(rows))
	for _, mode := range uniqueModes(rows) {
		var in []int
		top := math.Inf(-1)
		for i, r := range rows {
			if r.Mode == mode {
				in = append(in, i)
				v, _ := of(r)
				top = max(top, v)
			}
		}
		var bests, tied []int
		known := true
		for _, i := range in {
			if v, _ := of(rows[i]); v == top {
				bests = append(bests, i)
			}
		}
		for _, i := range in {
			if _, ci := of(rows[i]); ci == nil {
				known = false
			}
		}
		if !known {
			continue
		}
		for _, i := range in {
			v, ci := of(rows[i])
			if v == top {
				continue
			}
			for _, b := range bests {
				if _, bci := of(rows[b]); ci.Upper >= bci.Lower && ci.Lower <= bci.Upper {
					tied = append(tied, i)
					break
				}
			}
		}
		m := standsApart
		if len(bests) > 1 || len(tied) > 0 {
			m = tiedForBest
		}
		for _, i := range append(bests, tied...) {
			marks[i] = m
		}
	}
	return marks
}

// uniqueModes are the rows' modes in order of first appearance.
func uniqueModes(rows []Row) []ragopsv1alpha1.RetrievalMode {
	var modes []ragopsv1alpha1.RetrievalMode
	for _, r := range rows {
		if !slices.Contains(modes, r.Mode) {
			modes = append(modes, r.Mode)
		}
	}
	return modes
}
