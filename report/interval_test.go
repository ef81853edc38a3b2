package report

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// withIntervals gives every SciFact Evaluation a 95% interval on recall@10 and nDCG@10 at
// k=10: 0.030 below and 0.020 above recall, 0.025 either side of nDCG (asymmetric, as a
// percentile interval may be).
func withIntervals(t *testing.T) []ragopsv1alpha1.Evaluation {
	t.Helper()
	evals := scifact(t)
	for i := range evals {
		st := &evals[i].Status
		r, n := *st.RecallAt10, *st.NDCGAt10
		found := false
		for j := range st.Metrics {
			if st.Metrics[j].K == 10 {
				st.Metrics[j].RecallInterval = &ragopsv1alpha1.ConfidenceInterval{Lower: r - 0.03, Upper: r + 0.02, StdErr: 0.0127}
				st.Metrics[j].NDCGInterval = &ragopsv1alpha1.ConfidenceInterval{Lower: n - 0.025, Upper: n + 0.025, StdErr: 0.0128}
				found = true
			}
		}
		if !found {
			st.Metrics = append(st.Metrics, ragopsv1alpha1.MetricsAtK{K: 10, Recall: r, NDCG: n,
				RecallInterval: &ragopsv1alpha1.ConfidenceInterval{Lower: r - 0.03, Upper: r + 0.02, StdErr: 0.0127},
				NDCGInterval:   &ragopsv1alpha1.ConfidenceInterval{Lower: n - 0.025, Upper: n + 0.025, StdErr: 0.0128}})
		}
	}
	return evals
}

// Every bar carries its interval: a vertical whisker centred on the bar from the lower to
// the upper bound on the bar's scale, the value printed above the whisker, the axis zoomed
// to hold the whiskers, and a legend entry saying what they are.
func TestWriteSVGDrawsTheIntervalOnEveryBar(t *testing.T) {
	rows := Rows(withIntervals(t))
	var buf bytes.Buffer
	if err := Write(&buf, rows, "SciFact", "svg"); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.String())
	if len(doc.text("95% interval")) != 1 {
		t.Fatal("no legend entry for the intervals")
	}
	legendX := doc.text("recall@10")[0].x
	var whiskers, caps []svgPath
	for _, p := range doc.strokes(hex(whiskerColor.R, whiskerColor.G, whiskerColor.B)) {
		if p.maxX >= legendX-20 {
			continue // the legend's thumbnail
		}
		if p.maxX-p.minX < 0.01 {
			whiskers = append(whiskers, p)
		} else {
			caps = append(caps, p)
		}
	}
	if len(whiskers) != 2*len(rows) || len(caps) != 4*len(rows) {
		t.Fatalf("%d whiskers and %d caps, want %d and %d (one capped whisker per bar)", len(whiskers), len(caps), 2*len(rows), 4*len(rows))
	}
	var all []float64
	for _, r := range rows {
		all = append(all, r.RecallCI.Lower, r.RecallCI.Upper, r.NDCGCI.Lower, r.NDCGCI.Upper, r.Recall, r.NDCG)
	}
	zoom := Zoom(all)
	recallBars := doc.fills(recallFill)
	sort.Slice(recallBars, func(i, j int) bool { return recallBars[i].minX < recallBars[j].minX })
	recallBars = recallBars[:len(rows)]
	bottom := recallBars[0].maxY
	unit := (bottom - recallBars[0].minY) / (rows[0].Recall - zoom.Min)
	for i, b := range recallBars {
		cx := (b.minX + b.maxX) / 2
		var w *svgPath
		for j := range whiskers {
			if math.Abs(whiskers[j].minX-cx) < 0.6 {
				w = &whiskers[j]
			}
		}
		if w == nil {
			t.Errorf("no whisker centred on the recall bar of %s (x %.1f)", rows[i].Label, cx)
			continue
		}
		wantTop, wantBottom := bottom-(rows[i].RecallCI.Upper-zoom.Min)*unit, bottom-(rows[i].RecallCI.Lower-zoom.Min)*unit
		if math.Abs(w.minY-wantTop) > 0.6 || math.Abs(w.maxY-wantBottom) > 0.6 {
			t.Errorf("whisker of %s spans y %.1f-%.1f, want %.1f-%.1f (%.3f to %.3f)", rows[i].Label, w.minY, w.maxY, wantTop, wantBottom, rows[i].RecallCI.Lower, rows[i].RecallCI.Upper)
		}
		// The recall value is printed above its whisker, not across it.
		printed := false
		for _, tx := range doc.texts {
			if tx.s == strconv.FormatFloat(rows[i].Recall, 'f', 3, 64) && math.Abs(tx.x-cx) < 6 && tx.y < w.minY+0.5 {
				printed = true
			}
		}
		if !printed {
			t.Errorf("value %.3f of %s is not printed above its whisker", rows[i].Recall, rows[i].Label)
		}
	}
	if zoom.Min > rows[len(rows)-1].RecallCI.Lower {
		t.Errorf("zoom %v cuts the lowest whisker at %.3f", zoom, rows[len(rows)-1].RecallCI.Lower)
	}
}

// Without intervals in status no whisker or legend entry is drawn; the Markdown table puts
// "± h" after the figures that have one.
func TestIntervalsOnlyWhereMeasured(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, Rows(scifact(t)), "SciFact", "svg"); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.String())
	if len(doc.text("95% interval")) != 0 || len(doc.strokes(hex(whiskerColor.R, whiskerColor.G, whiskerColor.B))) != 0 {
		t.Error("whiskers drawn for Evaluations without intervals")
	}
	buf.Reset()
	rows := Rows(withIntervals(t))
	if err := WriteMarkdown(&buf, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(rows)+2 {
		t.Fatalf("%d lines, want %d", len(lines), len(rows)+2)
	}
	for i, l := range lines[2:] {
		if want := strconv.FormatFloat(rows[i].Recall, 'f', 4, 64); !strings.Contains(l, want) || strings.Count(l, " ± 0.025") != 2 {
			t.Errorf("row %q: want recall %s and ± 0.025 after recall@10 and nDCG@10", l, want)
		}
	}
}

// The revisions chart draws each measured point's interval (the newest run's, as its
// figure), and the Markdown table puts "± h" after it; an older run's interval is not kept.
func TestRevisionsChartDrawsIntervals(t *testing.T) {
	idx, evals := rollout()
	for i := range evals {
		r := *evals[i].Status.RecallAt10
		evals[i].Status.Metrics = []ragopsv1alpha1.MetricsAtK{{K: 10, Recall: r, RecallInterval: &ragopsv1alpha1.ConfidenceInterval{Lower: r - 0.02, Upper: r + 0.02, StdErr: 0.01}}}
	}
	evals[3].Status.Metrics = nil // dense-r3, the newer run of r3, has none: the older one's must not show
	rows := Revisions(idx, evals)
	if ci := rows[2].RecallCI[ragopsv1alpha1.ModeDense]; ci != nil {
		t.Errorf("r3 dense shows the older run's interval %+v", ci)
	}
	if ci := rows[0].RecallCI[ragopsv1alpha1.ModeDense]; ci == nil || ci.Lower != 0.78 {
		t.Errorf("r1 dense interval %+v, want [0.78, 0.82]", ci)
	}
	var buf bytes.Buffer
	if err := WriteRevisions(&buf, rows, "besluiten", "svg"); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.String())
	legendX := doc.text("95% interval")
	if len(legendX) != 1 {
		t.Fatal("no legend entry for the intervals")
	}
	n := 0
	for _, p := range doc.strokes(hex(whiskerColor.R, whiskerColor.G, whiskerColor.B)) {
		if p.maxX < legendX[0].x-20 && p.maxX-p.minX < 0.01 {
			n++
		}
	}
	if n != 3 { // r1 dense, r1 hybrid, r2 hybrid
		t.Errorf("%d whiskers, want 3", n)
	}
	buf.Reset()
	if err := WriteRevisions(&buf, rows, "besluiten", "markdown"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), " ± 0.020"); got != 3 {
		t.Errorf("%d figures with ± 0.020 in\n%s\nwant 3", got, buf.String())
	}
}
