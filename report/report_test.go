package report

import (
	"bytes"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

var (
	recallFill = hex(blue.R, blue.G, blue.B)
	ndcgFill   = hex(orange.R, orange.G, orange.B)
	spanFill   = hex(green.R, green.G, green.B)
)

// scifact reads the twelve SciFact Evaluations of the table in docs/results.md.
func scifact(t *testing.T) []ragopsv1alpha1.Evaluation {
	t.Helper()
	b, err := os.ReadFile("testdata/scifact-evaluations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var l ragopsv1alpha1.EvaluationList
	if err := yaml.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 12 {
		t.Fatalf("%d Evaluations in testdata, want 12", len(l.Items))
	}
	return l.Items
}

func TestRowsGroupByModeAndSortByScore(t *testing.T) {
	evals := append(scifact(t), ragopsv1alpha1.Evaluation{ // still running: left out
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "pending"}}})
	rows := Rows(evals)
	if len(rows) != 12 {
		t.Fatalf("%d rows, want the 12 with figures", len(rows))
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if modeOrder[a.Mode] > modeOrder[b.Mode] {
			t.Errorf("row %d (%s) after row %d (%s): modes not grouped Dense, BM25, Hybrid", i, b.Label, i-1, a.Label)
		}
		if a.Mode == b.Mode && a.Recall < b.Recall {
			t.Errorf("%s (%.4f) before %s (%.4f): not sorted by recall@10 within %s", a.Label, a.Recall, b.Label, b.Recall, a.Mode)
		}
	}
	// Equal recall@10 (Hybrid sentence-128-late and recursive-128, both 0.8332): nDCG decides.
	i := slices.IndexFunc(rows, func(r Row) bool { return r.Label == "sentence-128-late hybrid" })
	j := slices.IndexFunc(rows, func(r Row) bool { return r.Label == "recursive-128 hybrid" })
	if i < 0 || j < 0 || i > j {
		t.Errorf("tie on recall@10: sentence-128-late hybrid (nDCG 0.7007) at %d, recursive-128 hybrid (0.6927) at %d", i, j)
	}
	if rows[0].MRR == nil || *rows[0].MRR != 0.6358 || rows[0].SpanHit != nil {
		t.Errorf("first row %+v: want recursive-128 dense with MRR 0.6358 and no span hit", rows[0])
	}
}

func TestZoomHoldsTheDataOnARoundRange(t *testing.T) {
	for _, vals := range [][]float64{
		{0.83, 0.91, 1.0}, {0.6050, 0.8456}, {0.2808, 0.5865}, {0.5, 0.5}, {0.001, 0.02}, {0.97, 0.975, 0.99},
	} {
		r := Zoom(vals)
		lo, hi := slices.Min(vals), slices.Max(vals)
		if r.Min < 0 || r.Max > 1 || r.Min > lo || r.Max < hi {
			t.Errorf("Zoom(%v) = %v does not hold the data within [0,1]", vals, r)
		}
		if r.Min > 0 && r.Min >= lo-math.Max(hi-lo, 0.05)/5+1e-9 {
			t.Errorf("Zoom(%v) = %v: no margin below the lowest value", vals, r)
		}
		for _, edge := range []float64{r.Min, r.Max} {
			if f := edge * 100; math.Abs(f-math.Round(f)) > 1e-6 {
				t.Errorf("Zoom(%v) = %v: edge %v is not on a step of 0.01", vals, r, edge)
			}
		}
		// Zoomed: the data fill at least a third of the axis unless the margins forbid it.
		if hi-lo >= 0.05 && (hi-lo)/(r.Max-r.Min) < 1.0/3 {
			t.Errorf("Zoom(%v) = %v: the data use %.0f%% of the axis", vals, r, 100*(hi-lo)/(r.Max-r.Min))
		}
	}
	if r := Zoom(nil); r != (Range{0, 1}) {
		t.Errorf("Zoom(nil) = %v, want 0-1", r)
	}
}

// TestWriteSVGIsReadable reads the chart of the twelve SciFact Evaluations back from the SVG:
// the score axis is zoomed (ticks from the zoomed range, the range printed in the label), bar
// heights are proportional to score minus the axis minimum, the legend is right of every bar
// and overlaps none, the Index labels run in Rows' order and each mode heading sits over its
// own group.
func TestWriteSVGIsReadable(t *testing.T) {
	rows := Rows(scifact(t))
	var buf bytes.Buffer
	if err := Write(&buf, rows, "SciFact", "svg"); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.String())
	var all []float64
	for _, r := range rows {
		all = append(all, r.Recall, r.NDCG)
	}
	zoom := Zoom(all)
	if zoom.Min <= 0.3 {
		t.Fatalf("zoom %v: SciFact's scores (0.60-0.85) should not need an axis from %v", zoom, zoom.Min)
	}

	// The axis: tick labels are the zoomed range's, the range is printed.
	var ticks []float64
	for _, tx := range doc.texts {
		if v, err := strconv.ParseFloat(tx.s, 64); err == nil && len(tx.s) == 4 && strings.HasPrefix(tx.s, "0.") || tx.s == "1.00" {
			ticks = append(ticks, v)
		}
	}
	if len(ticks) < 3 || slices.Min(ticks) != zoom.Min || slices.Max(ticks) != zoom.Max {
		t.Errorf("axis ticks %v, want from %v to %v", ticks, zoom.Min, zoom.Max)
	}
	if len(doc.text("score, axis "+zoom.String()+" (not from 0)")) != 1 {
		t.Errorf("no axis label printing the range %s", zoom)
	}

	// Bars: one recall and one nDCG bar per row, heights proportional to value - zoom.Min.
	recallBars, ndcgBars := doc.fills(recallFill), doc.fills(ndcgFill)
	// The legend's swatches have the same colours: the bars are the ones left of the legend.
	legendX := doc.text("recall@10")
	if len(legendX) != 1 || len(doc.text("nDCG@10")) != 1 {
		t.Fatalf("legend entries: %d recall@10, %d nDCG@10; want one each", len(legendX), len(doc.text("nDCG@10")))
	}
	var plotBars []svgPath
	for _, set := range [][]svgPath{recallBars, ndcgBars} {
		n := 0
		for _, p := range set {
			if p.maxX < legendX[0].x-20 {
				plotBars = append(plotBars, p)
				n++
			}
		}
		if n != len(rows) {
			t.Errorf("%d bars of one colour left of the legend, want %d", n, len(rows))
		}
	}
	sort.Slice(recallBars, func(i, j int) bool { return recallBars[i].minX < recallBars[j].minX })
	recallBars = recallBars[:len(rows)]
	bottom := recallBars[0].maxY
	unit := (bottom - recallBars[0].minY) / (rows[0].Recall - zoom.Min) // points per score unit
	for i, b := range recallBars {
		if math.Abs(b.maxY-bottom) > 0.5 {
			t.Errorf("bar %d starts at y %.1f, the others at %.1f", i, b.maxY, bottom)
		}
		if want := (rows[i].Recall - zoom.Min) * unit; math.Abs((b.maxY-b.minY)-want) > 0.6 {
			t.Errorf("recall bar of %s is %.1f pt tall, want %.1f (proportional to recall - %.2f)", rows[i].Label, b.maxY-b.minY, want, zoom.Min)
		}
	}
	// A difference of 0.01 in recall is at least 5 pt on the picture (it was 2.5 pt on 0-1).
	if unit*0.01 < 5 {
		t.Errorf("0.01 of score is %.1f pt tall", unit*0.01)
	}

	// The legend is outside the bars: right of all of them, overlapping none.
	for _, s := range []string{"recall@10", "nDCG@10"} {
		tb := textBox(doc.text(s)[0])
		for _, b := range plotBars {
			if b.maxX >= tb.minX || b.overlaps(tb) {
				t.Errorf("legend entry %q at %+v is not right of bar %+v", s, tb, b.box)
			}
		}
	}

	// Index labels (rotated under the axis) in the order of rows, one per bar group; mode
	// headings over their groups, Dense, then BM25, then Hybrid.
	var labels []svgText
	for _, tx := range doc.texts {
		if slices.ContainsFunc(rows, func(r Row) bool { return r.Index == tx.s }) {
			labels = append(labels, tx)
		}
	}
	sort.Slice(labels, func(i, j int) bool { return labels[i].x < labels[j].x })
	if len(labels) != len(rows) {
		t.Fatalf("%d Index labels, want %d", len(labels), len(rows))
	}
	for i, l := range labels {
		if l.s != rows[i].Index {
			t.Errorf("label %d is %q, want %q (rows' order)", i, l.s, rows[i].Index)
		}
	}
	for _, mode := range []string{"Dense", "BM25", "Hybrid"} {
		h := doc.text(mode)
		if len(h) != 1 {
			t.Fatalf("%d headings %q, want 1", len(h), mode)
		}
		var xs []float64
		for i, r := range rows {
			if string(r.Mode) == mode {
				xs = append(xs, (recallBars[i].minX+recallBars[i].maxX)/2)
			}
		}
		if h[0].x < slices.Min(xs)-40 || h[0].x > slices.Max(xs)+40 {
			t.Errorf("heading %s at x %.0f is not over its bars (%.0f-%.0f)", mode, h[0].x, slices.Min(xs), slices.Max(xs))
		}
	}
	if !(doc.text("Dense")[0].x < doc.text("BM25")[0].x && doc.text("BM25")[0].x < doc.text("Hybrid")[0].x) {
		t.Error("mode headings are not in the order Dense, BM25, Hybrid")
	}
	// Each value is printed over its bar.
	for _, r := range rows {
		if len(doc.text(strconv.FormatFloat(r.Recall, 'f', 3, 64))) == 0 {
			t.Errorf("value %.3f of %s is not printed", r.Recall, r.Label)
		}
	}
}

func TestWriteSpanHitOnlyWhenMeasured(t *testing.T) {
	rows := []Row{
		{Label: "a dense", Index: "a", Mode: ragopsv1alpha1.ModeDense, Recall: 0.5, NDCG: 0.4, SpanHit: ptr.To(0.3)},
		{Label: "b dense", Index: "b", Mode: ragopsv1alpha1.ModeDense, Recall: 0.6, NDCG: 0.5},
	}
	var buf bytes.Buffer
	if err := Write(&buf, rows, "QMSum", "svg"); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.String())
	if len(doc.text("span hit@10")) != 1 || len(doc.fills(spanFill)) != 2 { // one bar, one swatch
		t.Errorf("span hit: %d legend entries, %d green shapes; want 1 and 2", len(doc.text("span hit@10")), len(doc.fills(spanFill)))
	}
	buf.Reset()
	if err := Write(&buf, rows[1:], "x", "svg"); err != nil || strings.Contains(buf.String(), "span hit@10") {
		t.Errorf("no spans: legend has span hit@10 (err %v)", err)
	}
	buf.Reset()
	if err := Write(&buf, rows, "x", "png"); err != nil || !bytes.HasPrefix(buf.Bytes(), []byte("\x89PNG")) {
		t.Errorf("png: err %v, header %q", err, buf.Bytes()[:min(8, buf.Len())])
	}
	if err := Write(&buf, nil, "x", "svg"); err == nil {
		t.Error("no rows: want an error")
	}
	if err := Write(&buf, rows, "x", "bmp"); err == nil || !strings.Contains(err.Error(), "svg, png, markdown") {
		t.Errorf("unknown format: err %v, want one naming the formats", err)
	}
}

// parseMarkdown returns a Markdown table's header and rows of cells.
func parseMarkdown(t *testing.T, s string) (head []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) < 3 {
		t.Fatalf("table of %d lines:\n%s", len(lines), s)
	}
	cells := func(l string) []string {
		if !strings.HasPrefix(l, "| ") || !strings.HasSuffix(l, " |") {
			t.Fatalf("not a table row: %q", l)
		}
		return strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |"), " | ")
	}
	head = cells(lines[0])
	for _, c := range cells(lines[1]) {
		if strings.Trim(c, ":-") != "" {
			t.Fatalf("second line %q is not a rule", lines[1])
		}
	}
	for _, l := range lines[2:] {
		r := cells(l)
		if len(r) != len(head) {
			t.Fatalf("row %q has %d cells, header %d", l, len(r), len(head))
		}
		rows = append(rows, r)
	}
	return head, rows
}

func TestWriteMarkdownTable(t *testing.T) {
	rows := Rows(scifact(t))
	var buf bytes.Buffer
	if err := Write(&buf, rows, "ignored", "markdown"); err != nil {
		t.Fatal(err)
	}
	head, cells := parseMarkdown(t, buf.String())
	if want := []string{"mode", "Index", "recall@10", "nDCG@10", "MRR@10"}; !slices.Equal(head, want) {
		t.Fatalf("header %v, want %v (no revision or span column without data)", head, want)
	}
	if len(cells) != len(rows) {
		t.Fatalf("%d table rows, want %d", len(cells), len(rows))
	}
	boldRecall := map[string]string{}
	for i, c := range cells {
		if c[0] != string(rows[i].Mode) || c[1] != rows[i].Index {
			t.Errorf("table row %d is %s %s, want %s %s", i, c[0], c[1], rows[i].Mode, rows[i].Index)
		}
		v, err := strconv.ParseFloat(strings.Trim(c[2], "*"), 64)
		if err != nil || v != rows[i].Recall {
			t.Errorf("row %d recall cell %q, want %.4f", i, c[2], rows[i].Recall)
		}
		if strings.HasPrefix(c[2], "**") {
			if boldRecall[c[0]] != "" {
				t.Errorf("two bold recall@10 cells in mode %s", c[0])
			}
			boldRecall[c[0]] = c[1]
		}
	}
	// The fixture's Evaluations report no intervals: nothing shows a point-best is better.
	if len(boldRecall) != 0 || strings.Contains(buf.String(), "**") || strings.Contains(buf.String(), "(tied)") {
		t.Errorf("bold or tied cells without intervals: %v\n%s", boldRecall, buf.String())
	}
}

// A best whose interval holds another row's value range is not bolded as a winner (issue 55,
// item 20): in Dense, 0.81 ± 0.03 and 0.80 ± 0.03 overlap, so both are "(tied)" and neither
// is bold, while 0.60 ± 0.03 is neither; in BM25, 0.70 ± 0.02 is clear of 0.50 ± 0.02 and
// stands apart in bold.
func TestWriteMarkdownMarksATieForBest(t *testing.T) {
	ci := func(v float64) *ragopsv1alpha1.ConfidenceInterval {
		return &ragopsv1alpha1.ConfidenceInterval{Lower: v - 0.03, Upper: v + 0.03}
	}
	row := func(index string, mode ragopsv1alpha1.RetrievalMode, recall float64) Row {
		return Row{Index: index, Mode: mode, Recall: recall, NDCG: recall - 0.1, RecallCI: ci(recall), NDCGCI: ci(recall - 0.1)}
	}
	rows := []Row{row("a", ragopsv1alpha1.ModeDense, 0.81), row("b", ragopsv1alpha1.ModeDense, 0.80), row("c", ragopsv1alpha1.ModeDense, 0.60),
		row("d", ragopsv1alpha1.ModeBM25, 0.70), row("e", ragopsv1alpha1.ModeBM25, 0.50)}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, rows); err != nil {
		t.Fatal(err)
	}
	_, cells := parseMarkdown(t, buf.String())
	want := []string{"0.8100 ± 0.030 (tied)", "0.8000 ± 0.030 (tied)", "0.6000 ± 0.030", "**0.7000** ± 0.030", "0.5000 ± 0.030"}
	for i, c := range cells {
		if c[2] != want[i] {
			t.Errorf("row %s recall@10 cell %q, want %q", c[1], c[2], want[i])
		}
	}
}

// Span hit at the Evaluations' other cut-offs gets one column per k in ascending order,
// read from status.metrics; a row without that cut-off shows "-".
func TestWriteMarkdownSpanHitPerCutoff(t *testing.T) {
	ev := func(index string, metrics ...ragopsv1alpha1.MetricsAtK) ragopsv1alpha1.Evaluation {
		var e ragopsv1alpha1.Evaluation
		e.Spec.IndexRef.Name, e.Spec.Mode = index, ragopsv1alpha1.ModeDense
		e.Status.RecallAt10, e.Status.NDCGAt10, e.Status.SpanHitRate = ptr.To(1.0), ptr.To(0.9), ptr.To(0.75)
		e.Status.Metrics = metrics
		return e
	}
	rows := Rows([]ragopsv1alpha1.Evaluation{
		ev("heading", ragopsv1alpha1.MetricsAtK{K: 3, SpanHit: ptr.To(0.5)}, ragopsv1alpha1.MetricsAtK{K: 1, SpanHit: ptr.To(0.25)},
			ragopsv1alpha1.MetricsAtK{K: 10, SpanHit: ptr.To(0.75)}),
		ev("fixed", ragopsv1alpha1.MetricsAtK{K: 1, SpanHit: ptr.To(0.125)}, ragopsv1alpha1.MetricsAtK{K: 10, SpanHit: ptr.To(0.75)}),
	})
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, rows); err != nil {
		t.Fatal(err)
	}
	head, cells := parseMarkdown(t, buf.String())
	if want := []string{"span hit@10", "span hit@1", "span hit@3"}; !slices.Equal(head[len(head)-3:], want) {
		t.Fatalf("header %v, want it to end with %v", head, want)
	}
	got := map[string][]string{}
	for _, c := range cells {
		got[c[1]] = c[len(c)-3:]
	}
	if !slices.Equal(got["heading"], []string{"0.7500", "0.2500", "0.5000"}) || !slices.Equal(got["fixed"], []string{"0.7500", "0.1250", "-"}) {
		t.Errorf("span cells %v", got)
	}
}

// Two hybrid Evaluations of one Index that differ only in fusion are told apart in labels
// and in the Markdown mode column.
func TestHybridFusionsAreTold(t *testing.T) {
	ev := func(fusion ragopsv1alpha1.FusionType, recall float64) ragopsv1alpha1.Evaluation {
		var e ragopsv1alpha1.Evaluation
		e.Spec.IndexRef.Name, e.Spec.Mode = "heading-512", ragopsv1alpha1.ModeHybrid
		e.Spec.Hybrid = &ragopsv1alpha1.HybridOptions{Fusion: fusion}
		e.Status.RecallAt10, e.Status.NDCGAt10 = ptr.To(recall), ptr.To(0.5)
		return e
	}
	rows := Rows([]ragopsv1alpha1.Evaluation{ev(ragopsv1alpha1.FusionRanked, 0.9), ev(ragopsv1alpha1.FusionRelativeScore, 0.8)})
	if len(rows) != 2 || rows[0].Label != "heading-512 hybrid rrf" || rows[1].Label != "heading-512 hybrid rsf" {
		t.Fatalf("labels %q", []string{rows[0].Label, rows[1].Label})
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, rows); err != nil {
		t.Fatal(err)
	}
	_, cells := parseMarkdown(t, buf.String())
	if cells[0][0] != "Hybrid RRF" || cells[1][0] != "Hybrid RSF" {
		t.Errorf("mode cells %q and %q, want Hybrid RRF and Hybrid RSF", cells[0][0], cells[1][0])
	}
}
