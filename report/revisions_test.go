package report

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// rollout is an Index after three GitOps changes: r1 (served, then replaced), r2 (rejected by
// its gate), r3 (active), listed newest first as the controller keeps them.
func rollout() (ragopsv1alpha1.Index, []ragopsv1alpha1.Evaluation) {
	t0 := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	at := func(h int) *metav1.Time { return ptr.To(metav1.NewTime(t0.Add(time.Duration(h) * time.Hour))) }
	idx := ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: "besluiten"}}
	idx.Status.ActiveRevision = "r3c0ffee11"
	idx.Status.Revisions = []ragopsv1alpha1.RevisionStatus{
		{Name: "r3c0ffee11", Phase: ragopsv1alpha1.RevisionActive, CreationTime: at(48), GateRecall: ptr.To(0.861)},
		{Name: "r2badbad22", Phase: ragopsv1alpha1.RevisionRejected, CreationTime: at(24), GateRecall: ptr.To(0.702)},
		{Name: "r1abcdef33", Phase: ragopsv1alpha1.RevisionReady, CreationTime: at(0)},
	}
	ev := func(name, index string, mode ragopsv1alpha1.RetrievalMode, rev string, recall float64, done int) ragopsv1alpha1.Evaluation {
		e := ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: "rag", Name: name}}
		e.Spec.IndexRef.Name, e.Spec.Mode = index, mode
		e.Status.Revision, e.Status.RecallAt10, e.Status.NDCGAt10, e.Status.CompletionTime = rev, ptr.To(recall), ptr.To(recall-0.1), at(done)
		return e
	}
	evals := []ragopsv1alpha1.Evaluation{
		ev("dense-r1", "besluiten", ragopsv1alpha1.ModeDense, "r1abcdef33", 0.80, 1),
		ev("hybrid-r1", "besluiten", ragopsv1alpha1.ModeHybrid, "r1abcdef33", 0.84, 1),
		ev("dense-r3-old", "besluiten", ragopsv1alpha1.ModeDense, "r3c0ffee11", 0.10, 49), // an older run, replaced below
		ev("dense-r3", "besluiten", ragopsv1alpha1.ModeDense, "r3c0ffee11", 0.86, 50),
		ev("other", "notulen", ragopsv1alpha1.ModeDense, "r3c0ffee11", 0.99, 50),   // another Index
		ev("pruned", "besluiten", ragopsv1alpha1.ModeDense, "r0pruned44", 0.50, 0), // a revision no longer listed
		ev("hybrid-r2", "besluiten", ragopsv1alpha1.ModeHybrid, "r2badbad22", 0.71, 25),
	}
	return idx, evals
}

func TestRevisionsOldestFirstWithTheirRecall(t *testing.T) {
	idx, evals := rollout()
	rows := Revisions(idx, evals)
	if len(rows) != 3 || rows[0].Revision != "r1abcdef33" || rows[1].Revision != "r2badbad22" || rows[2].Revision != "r3c0ffee11" {
		t.Fatalf("revisions %+v, want r1, r2, r3 (by creation time)", rows)
	}
	if !rows[2].Active || rows[0].Active || rows[1].Active {
		t.Errorf("active flags %v %v %v, want only r3", rows[0].Active, rows[1].Active, rows[2].Active)
	}
	want := []map[ragopsv1alpha1.RetrievalMode]float64{
		{ragopsv1alpha1.ModeDense: 0.80, ragopsv1alpha1.ModeHybrid: 0.84},
		{ragopsv1alpha1.ModeHybrid: 0.71},
		{ragopsv1alpha1.ModeDense: 0.86}, // the newer of two runs; the other Index's 0.99 left out
	}
	for i, r := range rows {
		if len(r.Recall) != len(want[i]) {
			t.Errorf("%s: recall %v, want %v", r.Revision, r.Recall, want[i])
		}
		for m, v := range want[i] {
			if r.Recall[m] != v {
				t.Errorf("%s %s: recall %v, want %v", r.Revision, m, r.Recall[m], v)
			}
		}
	}
	if rows[0].Gate != nil || *rows[1].Gate != 0.702 || rows[0].Created != "2026-11-03T09:00:00Z" {
		t.Errorf("gate/created of r1 %v %q, r2 gate %v", rows[0].Gate, rows[0].Created, *rows[1].Gate)
	}
}

func TestWriteRevisionsMarkdownAndSVG(t *testing.T) {
	idx, evals := rollout()
	rows := Revisions(idx, evals)
	var buf bytes.Buffer
	if err := WriteRevisions(&buf, rows, "", "markdown"); err != nil {
		t.Fatal(err)
	}
	head, cells := parseMarkdown(t, buf.String())
	if want := []string{"revision", "created", "phase", "recall@10 dense", "recall@10 hybrid", "gate recall@10"}; !slices.Equal(head, want) {
		t.Fatalf("header %v, want %v", head, want)
	}
	wantCells := [][]string{
		{"r1abcdef", "2026-11-03T09:00:00Z", "Ready", "0.8000", "0.8400", "-"},
		{"r2badbad", "2026-11-04T09:00:00Z", "Rejected", "-", "0.7100", "0.7020"},
		{"r3c0ffee", "2026-11-05T09:00:00Z", "Active", "0.8600", "-", "0.8610"},
	}
	for i := range wantCells {
		if !slices.Equal(cells[i], wantCells[i]) {
			t.Errorf("row %d %v, want %v", i, cells[i], wantCells[i])
		}
	}

	buf.Reset()
	if err := WriteRevisions(&buf, rows, "besluiten", "svg"); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.String())
	var ticks []svgText
	for _, tx := range doc.texts {
		if strings.HasPrefix(tx.s, "r") && len(tx.s) >= 8 && !strings.HasPrefix(tx.s, "recall") && !strings.HasPrefix(tx.s, "revision") {
			ticks = append(ticks, tx)
		}
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].x < ticks[j].x })
	var got []string
	for _, tx := range ticks {
		got = append(got, tx.s)
	}
	if want := []string{"r1abcdef", "r2badbad (rejected)", "r3c0ffee (active)"}; !slices.Equal(got, want) {
		t.Errorf("x labels %v, want %v", got, want)
	}
	zoom := Zoom([]float64{0.80, 0.84, 0.71, 0.86, 0.702, 0.861})
	if len(doc.text("score, axis "+zoom.String()+" (not from 0)")) != 1 {
		t.Errorf("no axis label with the zoomed range %s", zoom)
	}
	legend := []string{"recall@10 dense", "recall@10 hybrid", "gate recall@10"}
	for _, s := range legend {
		if len(doc.text(s)) != 1 {
			t.Fatalf("legend entry %q: %d, want 1", s, len(doc.text(s)))
		}
		if tb := textBox(doc.text(s)[0]); tb.minX < ticks[len(ticks)-1].x+40 {
			t.Errorf("legend entry %q at x %.0f is not right of the last revision (x %.0f)", s, tb.minX, ticks[len(ticks)-1].x)
		}
	}
	for _, v := range []string{"0.800", "0.840", "0.710", "0.860", "0.702", "0.861"} {
		if len(doc.text(v)) != 1 {
			t.Errorf("point value %s printed %d times, want once", v, len(doc.text(v)))
		}
	}

	empty := Revisions(ragopsv1alpha1.Index{Status: ragopsv1alpha1.IndexStatus{Revisions: []ragopsv1alpha1.RevisionStatus{{Name: "r1"}}}}, nil)
	if err := WriteRevisions(&buf, empty, "x", "svg"); err == nil {
		t.Error("no figures: want an error")
	}
}

// Issue 51, visible: with reads recorded, the Markdown table says per revision what its last
// build or sync extracted, found unchanged, took from the extraction cache, ran OCR on and
// fetched from the source.
func TestWriteRevisionsMarkdownShowsReads(t *testing.T) {
	idx, evals := rollout()
	idx.Status.Revisions[0].Reads = &ragopsv1alpha1.DocumentReads{Extracted: 10, Unchanged: 1000, CacheMisses: 10, BytesFetched: 52144}
	idx.Status.Revisions[0].OCR = &ragopsv1alpha1.OCRStatus{Pages: 4}
	idx.Status.Revisions[2].Reads = &ragopsv1alpha1.DocumentReads{CacheHits: 1010}
	var buf bytes.Buffer
	if err := WriteRevisions(&buf, Revisions(idx, evals), "", "markdown"); err != nil {
		t.Fatal(err)
	}
	head, cells := parseMarkdown(t, buf.String())
	if head[len(head)-1] != "last build or sync read" {
		t.Fatalf("header %v: no reads column", head)
	}
	want := []string{
		"cache 1010 hit",
		"-",
		"10 extracted, 1000 unchanged, cache 0 hit / 10 miss, 4 OCR pages, 52144 bytes fetched",
	}
	for i, w := range want {
		if got := cells[i][len(cells[i])-1]; !strings.Contains(got, w) {
			t.Errorf("row %d (%s): reads %q, want %q", i, cells[i][0], got, w)
		}
	}
}
