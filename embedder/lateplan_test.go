package embedder

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ragops/ragops/chunkers"
)

// threeAbstracts joins the first three SciFact abstracts of 400 to 800 bytes with blank
// lines: a text of several 128-token windows that fits one 512-token pass.
func threeAbstracts(t *testing.T) (string, []string) {
	t.Helper()
	var parts []string
	for _, d := range readCorpus(t, "scifact", 40) {
		if len(d.Text) > 400 && len(d.Text) < 800 {
			parts = append(parts, d.Text)
		}
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, "\n\n"), parts
}

// TestPlanLateNamesThePoolingWindow checks PlanLate against what Late mode computes: a
// chunk that PlanLate assigns to one window (and that holds neither the document's first
// nor its last token) must get the mean of that window's own token states at the chunk's
// positions. Chunks of 24 tokens over a SciFact text in 128-token windows.
func TestPlanLateNamesThePoolingWindow(t *testing.T) {
	text, _ := threeAbstracts(t)
	opts := Options{WindowTokens: 128, WindowOverlap: 32}
	m := load(t, opts)
	enc := m.Tokenizer().Encode(text, false)
	var chunks []chunkers.Chunk
	for a := 0; a < len(enc.IDs); a += 24 {
		b := min(a+24, len(enc.IDs))
		chunks = append(chunks, chunkers.Chunk{Ordinal: len(chunks), Start: enc.Offsets[a].Start, End: enc.Offsets[b-1].End})
	}
	plan, err := PlanLate(m.Tokenizer(), m.Config(), opts, text, chunks)
	if err != nil {
		t.Fatal(err)
	}
	wins := planWindows(len(enc.IDs), 126, 32)
	if len(plan.Windows) != len(wins) || plan.Tokens != len(enc.IDs) {
		t.Fatalf("%d windows over %d tokens, want %d over %d", len(plan.Windows), plan.Tokens, len(wins), len(enc.IDs))
	}
	for i, w := range wins {
		pw := plan.Windows[i]
		if pw.TokenStart != w[0] || pw.TokenEnd != w[1] || pw.Start != enc.Offsets[w[0]].Start || pw.End != enc.Offsets[w[1]-1].End {
			t.Errorf("window %d: %+v, want tokens %v", i, pw, w)
		}
	}
	late, err := m.EmbedChunks(context.Background(), text, chunks, Late)
	if err != nil {
		t.Fatal(err)
	}
	d := m.Dimension()
	checked := map[int]int{}
	for ci := range chunks {
		cw := plan.ChunkWindows[ci]
		if len(cw) == 0 || !slices.IsSorted(cw) {
			t.Fatalf("chunk %d: windows %v", ci, cw)
		}
		a := ci * 24
		b := min(a+24, len(enc.IDs))
		if len(cw) != 1 || a == 0 || b == len(enc.IDs) {
			continue
		}
		w := wins[cw[0]]
		if a < w[0] || b > w[1] {
			t.Fatalf("chunk %d: tokens [%d,%d) outside its window %d %v", ci, a, b, cw[0], w)
		}
		st, err := m.runBatch(context.Background(), [][]int64{m.wrap(enc.IDs[w[0]:w[1]])})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, d)
		meanInto(want, st[0], d, 1+a-w[0], 1+b-w[0])
		if c := cosine(late[ci], m.finish(want)); c < 0.9999 {
			t.Errorf("chunk %d: PlanLate names window %d, but its vector has cosine %.6f with that window's states", ci, cw[0], c)
		}
		checked[cw[0]]++
	}
	if len(checked) < len(wins)-1 {
		t.Errorf("single-window chunks checked in %d of %d windows: %v", len(checked), len(wins), checked)
	}

	// Window settings are checked as Load checks them.
	_, perr := PlanLate(m.Tokenizer(), m.Config(), Options{WindowTokens: m.Config().MaxPositions + 1}, text, chunks)
	_, lerr := Load(modelDir(t), Options{WindowTokens: m.Config().MaxPositions + 1})
	if perr == nil || lerr == nil || perr.Error() != lerr.Error() {
		t.Errorf("PlanLate error %v, Load error %v", perr, lerr)
	}
}
