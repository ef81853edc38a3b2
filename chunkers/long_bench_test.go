package chunkers

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// longDocument joins QMSum meeting transcripts until the text holds at least words words
// (QMSum transcripts are 5,000-20,000 words each).
func longDocument(tb testing.TB, words int) string {
	var b strings.Builder
	n := 0
	for n < words {
		for _, d := range loadDocs(tb, "qmsum", 0) {
			b.WriteString(d)
			b.WriteString("\n\n")
			n += WordSizer{}.Size(d)
			if n >= words {
				break
			}
		}
	}
	return b.String()
}

// peakHeap runs f and returns the largest live heap growth seen while it ran, in bytes:
// runtime/metrics' heap object bytes, sampled every millisecond, minus the value before f.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	peak := base
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				peak = max(peak, read())
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	peak = max(peak, read())
	return peak - base
}

// semanticAllAtOnce is Semantic's distance step as it was before issue 22: every window
// embedded in one call and all vectors kept. BenchmarkLongDocument runs it beside the
// blocked version.
func (s *semantic) semanticAllAtOnce(ctx context.Context, text string) ([]Chunk, error) {
	ps := s.split(text)
	windows := make([]string, len(ps))
	b := s.opts.BufferSentences
	for i := range ps {
		windows[i] = text[ps[max(0, i-b)].Start:ps[min(len(ps)-1, i+b)].End]
	}
	vs, err := s.embed(ctx, windows)
	if err != nil {
		return nil, err
	}
	dist := make([]float64, len(ps)-1)
	for i := range dist {
		dist[i] = 1 - dot(vs[i], vs[i+1])
	}
	th := threshold(dist, s.opts.Threshold, s.opts.Amount)
	var out []Chunk
	start := 0
	for i, d := range dist {
		if d > th {
			out = s.pack(text, ps[start:i+1], out)
			start = i + 1
		}
	}
	return number(s.pack(text, ps[start:], out)), nil
}

// BenchmarkLongDocument chunks one 100,000-word document (QMSum transcripts joined) with
// Cluster (Contiguous) and Semantic, each before issue 22 ("quadratic": the n×n similarity
// matrix; "allAtOnce": every window embedded in one call) and after ("linear", "blocks"),
// side by side. Sizes in words (200), the hashed bag-of-words embedder. It reports
// peak-heap-MB (live heap growth while chunking) and the chunk count, which is equal before
// and after.
//
//	go test ./chunkers -run '^$' -bench LongDocument -benchtime 3x
func BenchmarkLongDocument(b *testing.B) {
	text := longDocument(b, 100_000)
	ctx := context.Background()
	cl := must(NewCluster(WordSizer{}, 200, &bowEmbedder{}, ClusterOptions{})).(*cluster)
	se := must(NewSemantic(WordSizer{}, 200, &bowEmbedder{}, SemanticOptions{Amount: 95, BufferSentences: 1})).(*semantic)
	clusterWith := func(f func(string, []Chunk, [][]float64) []Chunk) func() ([]Chunk, error) {
		return func() ([]Chunk, error) {
			ps := cl.split(text)
			texts := make([]string, len(ps))
			for i, p := range ps {
				texts[i] = text[p.Start:p.End]
			}
			vs, err := cl.embed(ctx, texts)
			if err != nil {
				return nil, err
			}
			return number(f(text, ps, vs)), nil
		}
	}
	cases := []struct {
		name string
		f    func() ([]Chunk, error)
	}{
		{"Cluster/quadratic", clusterWith(cl.contiguousQuadratic)},
		{"Cluster/linear", clusterWith(cl.contiguous)},
		{"Semantic/allAtOnce", func() ([]Chunk, error) { return se.semanticAllAtOnce(ctx, text) }},
		{"Semantic/blocks", func() ([]Chunk, error) { return se.Chunk(ctx, text) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var chunks []Chunk
			var peak uint64
			for b.Loop() {
				peak = max(peak, peakHeap(func() {
					var err error
					if chunks, err = c.f(); err != nil {
						b.Fatal(err)
					}
				}))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(len(chunks)), "chunks")
		})
	}
}

// TestClusterLinearMatchesQuadratic checks the linear Contiguous clustering against the
// quadratic reference on real documents (SciFact abstracts and QMSum transcripts) at several
// sizes: the same partition, or, where rounding breaks a tie differently (sums taken in
// another order), a partition whose objective equals the reference optimum to 1e-9
// relative. At most 1% of documents may take the tie the other way.
func TestClusterLinearMatchesQuadratic(t *testing.T) {
	docs := append(loadDocs(t, "scifact", 200), loadDocs(t, "qmsum", 2)...)
	ctx := context.Background()
	for _, size := range []int{20, 120} {
		cl := must(NewCluster(WordSizer{}, size, &bowEmbedder{}, ClusterOptions{})).(*cluster)
		differ := 0
		for di, d := range docs {
			ps := cl.split(d)
			if len(ps) < 2 {
				continue
			}
			texts := make([]string, len(ps))
			for i, p := range ps {
				texts[i] = d[p.Start:p.End]
			}
			vs, err := cl.embed(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			got, want := cl.contiguousCuts(ps, vs), cl.contiguousCutsQuadratic(ps, vs)
			if reflect.DeepEqual(got, want) {
				continue
			}
			differ++
			g, w := partitionScore(vs, got), partitionScore(vs, want)
			if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
				t.Errorf("size %d doc %d: linear partition scores %v, quadratic optimum %v", size, di, g, w)
			}
		}
		if differ*100 > len(docs) {
			t.Errorf("size %d: %d of %d documents partitioned differently", size, differ, len(docs))
		}
	}
}

// TestSemanticBlocksMatchAllAtOnce checks that embedding windows in blocks gives the same
// chunks as one call, on a document long enough for several blocks.
func TestSemanticBlocksMatchAllAtOnce(t *testing.T) {
	text := longDocument(t, 20_000)
	se := must(NewSemantic(WordSizer{}, 100, &bowEmbedder{}, SemanticOptions{Amount: 95, BufferSentences: 1})).(*semantic)
	if n := len(se.split(text)); n < 3*semanticBlock {
		t.Fatalf("%d pieces: too few for several blocks", n)
	}
	got := run(t, se, text)
	want, err := se.semanticAllAtOnce(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("blocks: %d chunks, all at once: %d", len(got), len(want))
	}
	checkChunks(t, text, got, checkOpts{max: 100, sizer: WordSizer{}, ordered: true})
}
