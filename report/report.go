// Package report renders Evaluations as a comparison chart: recall@10 and nDCG@10 (and the span
// hit rate, for datasets with annotated spans) per Index and retrieval mode, as grouped bars
// (gonum.org/v1/plot), in SVG or PNG.
package report

import (
	"fmt"
	"image/color"
	"io"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Row is one Evaluation's figures.
type Row struct {
	Label        string // "<index> <mode>"
	Recall, NDCG float64
	// SpanHit is the share of queries whose top 10 chunks overlap an annotated span; nil when
	// the dataset has no spans.
	SpanHit *float64
}

// Rows returns the Ready Evaluations with @10 figures, sorted by label.
func Rows(evals []ragopsv1alpha1.Evaluation) []Row {
	var rows []Row
	for _, e := range evals {
		if e.Status.RecallAt10 == nil || e.Status.NDCGAt10 == nil {
			continue
		}
		rows = append(rows, Row{Label: e.Spec.IndexRef.Name + " " + strings.ToLower(string(e.Spec.Mode)),
			Recall: *e.Status.RecallAt10, NDCG: *e.Status.NDCGAt10, SpanHit: e.Status.SpanHitRate})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Label < rows[j].Label })
	return rows
}

// Write renders rows as a grouped bar chart to w in format "svg" or "png".
//
// Errors: no rows, an unknown format.
func Write(w io.Writer, rows []Row, title, format string) error {
	if len(rows) == 0 {
		return fmt.Errorf("report: no Evaluation has recall@10 yet")
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "score"
	p.Y.Min, p.Y.Max = 0, 1
	recall, ndcg, span := make(plotter.Values, len(rows)), make(plotter.Values, len(rows)), make(plotter.Values, len(rows))
	names := make([]string, len(rows))
	spans := false
	for i, r := range rows {
		recall[i], ndcg[i], names[i] = r.Recall, r.NDCG, r.Label
		if r.SpanHit != nil {
			span[i], spans = *r.SpanHit, true
		}
	}
	type series struct {
		v   plotter.Values
		lbl string
		c   color.Color
	}
	bars := []series{
		{recall, "recall@10", color.RGBA{R: 31, G: 119, B: 180, A: 255}},
		{ndcg, "nDCG@10", color.RGBA{R: 255, G: 127, B: 14, A: 255}},
	}
	if spans {
		bars = append(bars, series{span, "span hit@10", color.RGBA{R: 44, G: 160, B: 44, A: 255}})
	}
	width := vg.Points(14)
	for i, b := range bars {
		bc, err := plotter.NewBarChart(b.v, width)
		if err != nil {
			return err
		}
		bc.Color, bc.LineStyle.Width = b.c, 0
		bc.Offset = width * vg.Length(2*i-len(bars)+1) / 2
		p.Add(bc)
		p.Legend.Add(b.lbl, bc)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(rows))-0.5 // room for the outer bars of each group
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	wt, err := p.WriterTo(vg.Length(max(6, len(rows)))*vg.Inch*0.9, 5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("report: format %q: %w", format, err)
	}
	_, err = wt.WriteTo(w)
	return err
}
