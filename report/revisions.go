package report

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// RevisionRow is one revision of an Index with the recall@10 measured on it.
type RevisionRow struct {
	// Revision is the revision hash; Phase its phase (Ready, Failed, Rejected, ...).
	Revision string
	Phase    ragopsv1alpha1.RevisionPhase
	// Active marks the revision the Index's alias points at.
	Active bool
	// Created is the build's start (RFC 3339), empty when unknown.
	Created string
	// Gate is the gating Evaluation's recall@10 of the revision (status.revisions[].gateRecall).
	Gate *float64
	// Recall holds recall@10 by retrieval mode, from the Evaluations whose status.revision is
	// this revision (the newest completion wins when several measured the same mode).
	Recall map[ragopsv1alpha1.RetrievalMode]float64
	// RecallCI holds the 95% interval of each Recall that has one (the same Evaluation's).
	RecallCI map[ragopsv1alpha1.RetrievalMode]*ragopsv1alpha1.ConfidenceInterval
	// Reads is how the revision's last build or sync came by its documents' text
	// (status.revisions[].reads), OCRPages the pages it ran OCR on; nil and 0 when unknown.
	Reads    *ragopsv1alpha1.DocumentReads
	OCRPages int64
}

// Revisions returns idx's revisions oldest first (by status.revisions[].creationTime, then
// name) with the recall@10 of every Evaluation of idx in evals that recorded one of them;
// Evaluations of other Indexes, or of revisions the Index no longer lists, are left out.
func Revisions(idx ragopsv1alpha1.Index, evals []ragopsv1alpha1.Evaluation) []RevisionRow {
	revs := slices.Clone(idx.Status.Revisions)
	slices.SortStableFunc(revs, func(a, b ragopsv1alpha1.RevisionStatus) int {
		var ta, tb int64
		if a.CreationTime != nil {
			ta = a.CreationTime.UnixNano()
		}
		if b.CreationTime != nil {
			tb = b.CreationTime.UnixNano()
		}
		return cmp.Or(cmp.Compare(ta, tb), cmp.Compare(a.Name, b.Name))
	})
	out := make([]RevisionRow, len(revs))
	at := map[string]int{}
	for i, r := range revs {
		out[i] = RevisionRow{Revision: r.Name, Phase: r.Phase, Active: r.Name == idx.Status.ActiveRevision, Gate: r.GateRecall,
			Recall: map[ragopsv1alpha1.RetrievalMode]float64{}, Reads: r.Reads}
		if r.OCR != nil {
			out[i].OCRPages = r.OCR.Pages
		}
		if r.CreationTime != nil {
			out[i].Created = r.CreationTime.UTC().Format("2006-01-02T15:04:05Z")
		}
		at[r.Name] = i
	}
	// The newest completion per (revision, mode) wins.
	evals = slices.Clone(evals)
	slices.SortStableFunc(evals, func(a, b ragopsv1alpha1.Evaluation) int {
		var ta, tb int64
		if a.Status.CompletionTime != nil {
			ta = a.Status.CompletionTime.UnixNano()
		}
		if b.Status.CompletionTime != nil {
			tb = b.Status.CompletionTime.UnixNano()
		}
		return cmp.Or(cmp.Compare(ta, tb), cmp.Compare(a.Name, b.Name))
	})
	for _, e := range evals {
		i, ok := at[e.Status.Revision]
		if !ok || e.Spec.IndexRef.Name != idx.Name || e.Namespace != idx.Namespace || e.Status.RecallAt10 == nil {
			continue
		}
		mode := cmp.Or(e.Spec.Mode, ragopsv1alpha1.ModeDense)
		out[i].Recall[mode] = *e.Status.RecallAt10
		delete(out[i].RecallCI, mode)
		if j := slices.IndexFunc(e.Status.Metrics, func(m ragopsv1alpha1.MetricsAtK) bool { return m.K == 10 }); j >= 0 && e.Status.Metrics[j].RecallInterval != nil {
			if out[i].RecallCI == nil {
				out[i].RecallCI = map[ragopsv1alpha1.RetrievalMode]*ragopsv1alpha1.ConfidenceInterval{}
			}
			out[i].RecallCI[mode] = e.Status.Metrics[j].RecallInterval
		}
	}
	return out
}

// shortRevision is the first 8 characters of a revision hash.
func shortRevision(r string) string { return r[:min(len(r), 8)] }

// tick is the x label of a revision: its short hash, and "active" or its phase when not Ready.
func (r RevisionRow) tick() string {
	switch {
	case r.Active:
		return shortRevision(r.Revision) + " (active)"
	case r.Phase != "" && r.Phase != ragopsv1alpha1.RevisionReady && r.Phase != ragopsv1alpha1.RevisionActive:
		return shortRevision(r.Revision) + " (" + strings.ToLower(string(r.Phase)) + ")"
	}
	return shortRevision(r.Revision)
}

// modesOf returns the modes measured on any revision, in group order.
func modesOf(rows []RevisionRow) []ragopsv1alpha1.RetrievalMode {
	var modes []ragopsv1alpha1.RetrievalMode
	for _, r := range rows {
		for m := range r.Recall {
			if !slices.Contains(modes, m) {
				modes = append(modes, m)
			}
		}
	}
	slices.SortFunc(modes, compareModes)
	return modes
}

// WriteRevisions renders the recall@10 of one Index over its revisions (rows as Revisions
// returns them) to w: in "svg" or "png" a line per retrieval mode and the gate's recall, the
// revisions oldest to newest on the x axis, the axis zoomed to the data; in "markdown" a table
// with a row per revision and, when any revision reports them, what its last build or sync
// read (see readsCell).
//
// Errors: no revision with a figure, an unknown format.
func WriteRevisions(w io.Writer, rows []RevisionRow, title, format string) error {
	modes := modesOf(rows)
	gates := slices.ContainsFunc(rows, func(r RevisionRow) bool { return r.Gate != nil })
	if len(modes) == 0 && !gates {
		return fmt.Errorf("report: no revision of the Index has a recall@10 yet")
	}
	if format == "markdown" {
		return writeRevisionsMarkdown(w, rows, modes, gates)
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	type line struct {
		label string
		c     color.Color
		value func(RevisionRow) (float64, bool)
		ci    func(RevisionRow) *ragopsv1alpha1.ConfidenceInterval
	}
	palette := []color.Color{blue, green, orange, color.RGBA{R: 148, G: 103, B: 189, A: 255}}
	var lines []line
	for i, m := range modes {
		lines = append(lines, line{"recall@10 " + strings.ToLower(string(m)), palette[i%len(palette)], func(r RevisionRow) (float64, bool) {
			v, ok := r.Recall[m]
			return v, ok
		}, func(r RevisionRow) *ragopsv1alpha1.ConfidenceInterval { return r.RecallCI[m] }})
	}
	if gates {
		lines = append(lines, line{"gate recall@10", grey, func(r RevisionRow) (float64, bool) {
			if r.Gate == nil {
				return 0, false
			}
			return *r.Gate, true
		}, func(RevisionRow) *ragopsv1alpha1.ConfidenceInterval { return nil }})
	}
	var all []float64
	for _, l := range lines {
		for _, r := range rows {
			if v, ok := l.value(r); ok {
				all = append(all, v)
			}
			if ci := l.ci(r); ci != nil {
				all = append(all, ci.Lower, ci.Upper)
			}
		}
	}
	zoom := Zoom(all)
	ws := &pointWhiskers{zoom: zoom}
	p := newPlot(title, zoom)
	legend := plot.NewLegend()
	for li, l := range lines {
		var pts plotter.XYs
		for i, r := range rows {
			if v, ok := l.value(r); ok {
				pts = append(pts, plotter.XY{X: float64(i), Y: v})
			}
			if ci := l.ci(r); ci != nil {
				ws.at = append(ws.at, pointWhisker{x: float64(i), ci: ci})
			}
		}
		if len(pts) == 0 {
			continue
		}
		ln, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		ln.Color, ln.Width = l.c, vg.Points(1.5)
		if l.c == grey {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		sc.Color, sc.Radius = l.c, vg.Points(3)
		sc.Shape = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{}}[li%4]
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: valueLabels(pts)})
		if err != nil {
			return err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font.Size = vg.Points(7)
			labels.TextStyle[i].XAlign = draw.XCenter
		}
		labels.Offset = vg.Point{Y: vg.Points(5)}
		p.Add(ln, sc, labels)
		legend.Add(l.label, ln, sc)
	}
	if len(ws.at) > 0 {
		p.Add(ws)
		legend.Add("95% interval", whiskerThumb{})
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.tick()
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(rows))-0.5
	p.X.Label.Text = "revision, oldest to newest"
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return render(w, p, legend, vg.Length(max(6, float64(len(rows))*0.9+2))*vg.Inch, format)
}

// pointWhisker is the interval of a point at x.
type pointWhisker struct {
	x  float64
	ci *ragopsv1alpha1.ConfidenceInterval
}

// pointWhiskers draws the intervals of a line chart's points.
type pointWhiskers struct {
	at   []pointWhisker
	zoom Range
}

func (w *pointWhiskers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, a := range w.at {
		drawWhisker(c, trY, trX(a.x), vg.Points(3), a.ci, w.zoom)
	}
}

func valueLabels(pts plotter.XYs) []string {
	out := make([]string, len(pts))
	for i, p := range pts {
		out[i] = fmt.Sprintf("%.3f", p.Y)
	}
	return out
}

func writeRevisionsMarkdown(w io.Writer, rows []RevisionRow, modes []ragopsv1alpha1.RetrievalMode, gates bool) error {
	head := []string{"revision", "created", "phase"}
	rule := []string{"---", "---", "---"}
	for _, m := range modes {
		head, rule = append(head, "recall@10 "+strings.ToLower(string(m))), append(rule, "---:")
	}
	if gates {
		head, rule = append(head, "gate recall@10"), append(rule, "---:")
	}
	withReads := slices.ContainsFunc(rows, func(r RevisionRow) bool { return r.Reads != nil })
	if withReads {
		head, rule = append(head, "last build or sync read"), append(rule, "---")
	}
	var sb strings.Builder
	line := func(cells []string) { sb.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	line(head)
	line(rule)
	for _, r := range rows {
		phase := string(r.Phase)
		if r.Active && r.Phase != ragopsv1alpha1.RevisionActive {
			phase += " (active)"
		}
		cells := []string{shortRevision(r.Revision), cmp.Or(r.Created, "-"), cmp.Or(phase, "-")}
		for _, m := range modes {
			if v, ok := r.Recall[m]; ok {
				cells = append(cells, fmt4(v)+plusMinus(r.RecallCI[m]))
			} else {
				cells = append(cells, "-")
			}
		}
		if gates {
			cells = append(cells, fmtPtr(r.Gate))
		}
		if withReads {
			cells = append(cells, readsCell(r))
		}
		line(cells)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// readsCell says what a revision's last build or sync read: "E extracted, U unchanged, cache
// H hit / M miss, P OCR pages, B bytes fetched" ("-" when unknown).
func readsCell(r RevisionRow) string {
	if r.Reads == nil {
		return "-"
	}
	return fmt.Sprintf("%d extracted, %d unchanged, cache %d hit / %d miss, %d OCR pages, %d bytes fetched",
		r.Reads.Extracted, r.Reads.Unchanged, r.Reads.CacheHits, r.Reads.CacheMisses, r.OCRPages, r.Reads.BytesFetched)
}
