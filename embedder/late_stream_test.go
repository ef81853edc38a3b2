package embedder

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/ragops/ragops/chunkers"
)

// embedLateWhole is embedLate as of 7eb6a4b, kept as the reference of the streaming
// pooling: it holds every window's token states of every document, assembles each
// document's states, then pools its chunks.
func (m *Model) embedLateWhole(ctx context.Context, docs []Document) ([][][]float32, error) {
	d := m.cfg.Dimension
	seqs, encs := m.lateSeqs(docs)
	states := make([][]float32, len(seqs))
	if err := m.encode(ctx, seqs, func(i int, s []float32) { states[i] = s }); err != nil {
		return nil, err
	}
	out := make([][][]float32, len(docs))
	for di, doc := range docs {
		if len(doc.Chunks) == 0 {
			out[di] = [][]float32{}
			continue
		}
		e := encs[di]
		n := len(e.content)
		wins := e.wins
		best := bestWindow(n, wins)
		tokStates := make([]float32, n*d)
		for i := 0; i < n; i++ {
			w := best[i]
			ws := states[e.first+w]
			pos := 1 + i - wins[w][0]
			copy(tokStates[i*d:(i+1)*d], ws[pos*d:(pos+1)*d])
		}
		firstWin := states[e.first]
		lastWin := states[e.first+len(wins)-1]
		cls := firstWin[:d]
		sep := lastWin[len(lastWin)-d:]
		pre := len(m.docPre)
		docTok := tokStates[pre*d:]
		nDoc := n - pre
		vecs := make([][]float32, len(doc.Chunks))
		for ci, c := range doc.Chunks {
			pool := poolOf(e.offsets, c, nDoc)
			var extra [][]float32
			acc := make([]float64, d)
			count := 0
			for _, r := range pool.ranges {
				for t := r[0]; t < r[1]; t++ {
					row := docTok[t*d : (t+1)*d]
					for j, x := range row {
						acc[j] += float64(x)
					}
					count++
				}
			}
			for range pool.heads {
				extra = append(extra, cls)
				for p := 0; p < pre; p++ {
					extra = append(extra, tokStates[p*d:(p+1)*d])
				}
			}
			for range pool.tails {
				extra = append(extra, sep)
			}
			for _, row := range extra {
				for j, x := range row {
					acc[j] += float64(x)
				}
			}
			v := make([]float32, d)
			for j := range v {
				v[j] = float32(acc[j] / float64(count+len(extra)))
			}
			vecs[ci] = m.finish(v)
		}
		out[di] = vecs
	}
	return out, nil
}

// legalText joins legalqa-nl laws (bodies in corpus order, from the skip-th, a blank line
// apart) and cuts the text after its words-th word.
func legalText(tb testing.TB, skip, words int) string {
	tb.Helper()
	var b strings.Builder
	n := 0
	for _, d := range readCorpus(tb, "legalqa-nl", 272)[skip:] {
		text := d.Text
		f := strings.Fields(text)
		if n+len(f) >= words {
			// Cut after word words-n of this law: the end of its last field.
			end, k := 0, 0
			for k < words-n {
				i := strings.IndexFunc(text[end:], func(r rune) bool { return !unicode.IsSpace(r) })
				end += i
				j := strings.IndexFunc(text[end:], unicode.IsSpace)
				if j < 0 {
					j = len(text) - end
				}
				end += j
				k++
			}
			b.WriteString(text[:end])
			return b.String()
		}
		n += len(f)
		b.WriteString(text)
		b.WriteString("\n\n")
	}
	tb.Fatalf("legalqa-nl has %d words, want %d", n, words)
	return ""
}

// peakHeap runs fn and returns the largest Go heap (live and unswept objects, runtime/metrics
// /memory/classes/heap/objects:bytes) seen while it ran, above the heap after a GC before it.
func peakHeap(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	peak = max(peak, read())
	return peak - min(peak, base)
}

// TestLateChunkingStreams: documents of many windows (legalqa-nl laws joined), a short one
// and one without chunks in one call get bit-identical late vectors through the streaming
// pooling and through the whole-document computation of 7eb6a4b (embedLateWhole), and the
// streaming call's peak Go heap stays under a third of the whole-document one's (which holds
// every window's states: about 0.8 MB per 512-token window of MiniLM).
func TestLateChunkingStreams(t *testing.T) {
	m := load(t, Options{})
	ch, err := chunkers.NewRecursive(m.Tokenizer(), 200, 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var docs []Document
	for _, text := range []string{legalText(t, 0, 6000), "Artikel 1. Deze wet treedt in werking.", "", legalText(t, 40, 2000)} {
		cs, err := ch.Chunk(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, Document{Text: text, Chunks: cs})
	}
	if w := len(prepareLate(m.tok, m.docPre, m.opts, docs[0].Text).wins); w < 40 {
		t.Fatalf("long document has %d windows, want >= 40", w)
	}
	prev := debug.SetGCPercent(10) // GC often, so the heap follows what is live
	defer debug.SetGCPercent(prev)
	var got, want [][][]float32
	var errGot, errWant error
	streamed := peakHeap(func() { got, errGot = m.EmbedDocuments(ctx, docs, Late) })
	whole := peakHeap(func() { want, errWant = m.embedLateWhole(ctx, docs) })
	if errGot != nil || errWant != nil {
		t.Fatalf("streaming: %v; whole document: %v", errGot, errWant)
	}
	for di := range docs {
		if len(got[di]) != len(docs[di].Chunks) || len(want[di]) != len(docs[di].Chunks) {
			t.Fatalf("document %d: %d and %d vectors, want %d", di, len(got[di]), len(want[di]), len(docs[di].Chunks))
		}
		for ci := range got[di] {
			for j := range got[di][ci] {
				if math.Float32bits(got[di][ci][j]) != math.Float32bits(want[di][ci][j]) {
					t.Fatalf("document %d chunk %d dimension %d: streaming %v, whole document %v", di, ci, j, got[di][ci][j], want[di][ci][j])
				}
			}
		}
	}
	t.Logf("peak Go heap above baseline: streaming %.1f MiB, whole document %.1f MiB", float64(streamed)/(1<<20), float64(whole)/(1<<20))
	if streamed*3 > whole {
		t.Errorf("streaming peak heap %d bytes, want under a third of the whole-document computation's %d", streamed, whole)
	}
}

// TestLateStreamingWithPrefixAndWindowsOutOfOrder: with a document prefix ("passage: " of
// multilingual-e5-small) the streaming vectors equal the whole-document computation's bit
// for bit, also when a document's windows reach its latePooler last first.
func TestLateStreamingWithPrefixAndWindowsOutOfOrder(t *testing.T) {
	dir := need(t, "RAGOPS_ME5_SMALL_DIR", prepModels)
	m, err := Load(dir, Options{IntraOpThreads: 1, BatchTokens: 2048})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(m.docPre) == 0 {
		t.Fatal("multilingual-e5-small has no document prefix")
	}
	ch, err := chunkers.NewRecursive(m.Tokenizer(), 120, 30, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text := legalText(t, 10, 1500)
	cs, err := ch.Chunk(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	docs := []Document{{Text: text, Chunks: cs}, {Text: "Artikel 2. Deze wet heet: Wet op de proef.", Chunks: []chunkers.Chunk{{Start: 0, End: 11}, {Ordinal: 1, Start: 0, End: 42}}}}
	want, err := m.embedLateWhole(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.EmbedDocuments(ctx, docs, Late)
	if err != nil {
		t.Fatal(err)
	}
	// The first document's windows, handed to a pooler in reverse order.
	seqs, encs := m.lateSeqs(docs[:1])
	if len(encs[0].wins) < 4 {
		t.Fatalf("document has %d windows, want >= 4", len(encs[0].wins))
	}
	states := make([][]float32, len(seqs))
	if err := m.encode(ctx, seqs, func(i int, s []float32) { states[i] = s }); err != nil {
		t.Fatal(err)
	}
	p, err := newLatePooler(0, docs[0], encs[0], len(m.docPre), m.Dimension())
	if err != nil {
		t.Fatal(err)
	}
	for w := len(states) - 1; w >= 0; w-- {
		if done := p.consume(w, states[w]); done != (w == 0) {
			t.Fatalf("window %d: done %v", w, done)
		}
	}
	reversed := p.vectors(m)
	for di := range docs {
		for ci := range want[di] {
			for j := range want[di][ci] {
				w := math.Float32bits(want[di][ci][j])
				if math.Float32bits(got[di][ci][j]) != w || (di == 0 && math.Float32bits(reversed[ci][j]) != w) {
					t.Fatalf("document %d chunk %d dimension %d: whole document %v, streaming %v", di, ci, j, want[di][ci][j], got[di][ci][j])
				}
			}
		}
	}
}
