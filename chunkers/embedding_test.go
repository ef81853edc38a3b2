package chunkers

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"strings"
	"testing"
	"unicode"
)

// bowEmbedder is a deterministic real-text sentence embedding for tests: hashed bag of
// lower-cased words of three or more letters, stop words left out (signed feature
// hashing, Weinberger et al. 2009), in 512 dimensions.
type bowEmbedder struct{ calls int }

func (b *bowEmbedder) EmbedSentences(ctx context.Context, ss []string) ([][]float32, error) {
	b.calls++
	out := make([][]float32, len(ss))
	for i, s := range ss {
		v := make([]float32, 512)
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if len([]rune(w)) < 3 || stop[w] {
				continue
			}
			add(v, w)
		}
		out[i] = v
	}
	return out, nil
}

// add adds the signed hashed feature f to v.
func add(v []float32, f string) {
	h := fnv.New64a()
	h.Write([]byte(f))
	x := h.Sum64()
	sign := float32(1)
	if x>>63 == 1 {
		sign = -1
	}
	v[x%uint64(len(v))] += sign
}

var stop = map[string]bool{"the": true, "and": true, "for": true, "with": true, "that": true, "this": true, "are": true, "was": true, "were": true, "from": true, "which": true, "these": true, "have": true, "has": true, "not": true, "but": true, "been": true, "their": true, "our": true, "its": true, "than": true}

type failingEmbedder struct{}

func (failingEmbedder) EmbedSentences(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("model not loaded")
}

// joinedAbstracts concatenates SciFact abstracts on different topics and returns the text
// and the byte offsets where the second and later abstracts start.
func joinedAbstracts(t *testing.T, idx []int) (string, []int) {
	docs := loadDocs(t, "scifact", 0)
	var b strings.Builder
	var starts []int
	for k, i := range idx {
		if k > 0 {
			b.WriteString(" ")
			starts = append(starts, b.Len())
		}
		b.WriteString(docs[i][strings.Index(docs[i], "\n\n")+2:])
	}
	return b.String(), starts
}

// TestSemanticFindsTopicShifts: on three unrelated SciFact abstracts joined into one text
// the two largest window distances are the junctions, so a threshold that keeps two
// breakpoints cuts exactly there.
func TestSemanticFindsTopicShifts(t *testing.T) {
	text, starts := joinedAbstracts(t, []int{0, 1, 2})
	seg, _ := NewSentenceSegmenter(nil)
	n := len(seg.Sentences(text))
	for _, tt := range []struct {
		typ    ThresholdType
		amount float64
	}{{ThresholdPercentile, 100 * (1 - 2.5/float64(n-1))}} {
		c, err := NewSemantic(RuneSizer{}, 100000, &bowEmbedder{}, SemanticOptions{Threshold: tt.typ, Amount: tt.amount, BufferSentences: 0})
		if err != nil {
			t.Fatal(err)
		}
		chunks := run(t, c, text)
		checkChunks(t, text, chunks, checkOpts{max: 100000, sizer: RuneSizer{}, ordered: true})
		if len(chunks) != 3 || chunks[1].Start != starts[0] || chunks[2].Start != starts[1] {
			var got []int
			for _, c := range chunks {
				got = append(got, c.Start)
			}
			t.Fatalf("%s %.1f: chunk starts %v, want [0 %d %d]", tt.typ, tt.amount, got, starts[0], starts[1])
		}
	}
}

// TestSemanticThresholdsAndMax checks every threshold type over real documents with a hard
// maximum, and the threshold arithmetic against hand-computed values.
func TestSemanticThresholdsAndMax(t *testing.T) {
	docs := append(loadDocs(t, "scifact", 20), loadDocs(t, "qmsum", 1)...)
	for _, typ := range []ThresholdType{ThresholdPercentile, ThresholdStandardDeviation, ThresholdInterQuartile} {
		amount := map[ThresholdType]float64{ThresholdPercentile: 90, ThresholdStandardDeviation: 1, ThresholdInterQuartile: 0.5}[typ]
		for _, sz := range []Sizer{RuneSizer{}, WordSizer{}} {
			c, err := NewSemantic(sz, 120, &bowEmbedder{}, SemanticOptions{Threshold: typ, Amount: amount, BufferSentences: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				checkChunks(t, d, run(t, c, d), checkOpts{max: 120, sizer: sz, ordered: true})
			}
		}
	}
	d := []float64{0.1, 0.2, 0.3, 0.4, 0.5}
	for _, tc := range []struct {
		typ    ThresholdType
		amount float64
		want   float64
	}{
		{ThresholdPercentile, 50, 0.3}, {ThresholdPercentile, 90, 0.46},
		{ThresholdStandardDeviation, 1, 0.3 + math.Sqrt(0.02)},
		{ThresholdInterQuartile, 1.5, 0.3 + 1.5*0.2},
	} {
		if got := threshold(d, tc.typ, tc.amount); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("threshold %s %v = %v, want %v", tc.typ, tc.amount, got, tc.want)
		}
	}
	if _, err := NewSemantic(RuneSizer{}, 10, &bowEmbedder{}, SemanticOptions{Amount: 101}); err == nil {
		t.Error("percentile 101 accepted")
	}
	if _, err := NewSemantic(RuneSizer{}, 10, nil, SemanticOptions{}); err == nil {
		t.Error("nil embedder accepted")
	}
	c, _ := NewSemantic(RuneSizer{}, 50, failingEmbedder{}, SemanticOptions{Amount: 95})
	if _, err := c.Chunk(context.Background(), docs[0]); err == nil || !strings.Contains(err.Error(), "model not loaded") {
		t.Errorf("embedder error not passed on: %v", err)
	}
}

// TestClusterContiguous: with room for any one abstract, the dynamic programme cuts the
// joined abstracts at their junctions.
func TestClusterContiguous(t *testing.T) {
	text, starts := joinedAbstracts(t, []int{3, 4, 5})
	c, err := NewCluster(WordSizer{}, 400, &bowEmbedder{}, ClusterOptions{Mode: ClusterContiguous})
	if err != nil {
		t.Fatal(err)
	}
	chunks := run(t, c, text)
	checkChunks(t, text, chunks, checkOpts{max: 400, sizer: WordSizer{}, ordered: true})
	at := map[int]bool{}
	for _, ch := range chunks {
		at[ch.Start] = true
	}
	for _, s := range starts {
		if !at[s] {
			var got []int
			for _, ch := range chunks {
				got = append(got, ch.Start)
			}
			t.Errorf("no chunk starts at the junction %d (starts %v)", s, got)
		}
	}
	for _, d := range loadDocs(t, "scifact", 20) {
		checkChunks(t, d, run(t, c, d), checkOpts{max: 400, sizer: WordSizer{}, ordered: true})
	}
	small, _ := NewCluster(RuneSizer{}, 80, &bowEmbedder{}, ClusterOptions{})
	checkChunks(t, text, run(t, small, text), checkOpts{max: 80, sizer: RuneSizer{}, ordered: true})
}

// kmeansPurity interleaves the sentences of two abstracts, clusters them with k=2 and
// returns the share of sentences in their chunk's majority abstract.
func kmeansPurity(t *testing.T, a, b string) float64 {
	seg, _ := NewSentenceSegmenter(nil)
	sa, sb := seg.Sentences(a), seg.Sentences(b)
	var sbuf strings.Builder
	type origin struct{ start, doc int }
	var origins []origin
	for i := 0; i < max(len(sa), len(sb)); i++ {
		if i < len(sa) {
			origins = append(origins, origin{sbuf.Len(), 0})
			sbuf.WriteString(strings.TrimSpace(a[sa[i].Start:sa[i].End]) + " ")
		}
		if i < len(sb) {
			origins = append(origins, origin{sbuf.Len(), 1})
			sbuf.WriteString(strings.TrimSpace(b[sb[i].Start:sb[i].End]) + " ")
		}
	}
	text := sbuf.String()
	c, err := NewCluster(RuneSizer{}, 100000, &bowEmbedder{}, ClusterOptions{Mode: ClusterKMeans, Clusters: 2})
	if err != nil {
		t.Fatal(err)
	}
	chunks := run(t, c, text)
	checkChunks(t, text, chunks, checkOpts{max: 100000, sizer: RuneSizer{}, ordered: true})
	if len(chunks) != 2 || len(chunks[0].Spans) < 2 {
		t.Fatalf("got %d chunks (%v), want 2 multi-span chunks", len(chunks), chunks)
	}
	var n [2][2]int // [chunk][abstract] sentence counts
	for _, o := range origins {
		for ci, ch := range chunks {
			for _, s := range ch.Spans {
				if s.Start <= o.start && o.start < s.End {
					n[ci][o.doc]++
				}
			}
		}
	}
	return float64(max(n[0][0], n[0][1])+max(n[1][0], n[1][1])) / float64(len(origins))
}

// TestClusterKMeans: k-means with k=2 over the interleaved sentences of two SciFact
// abstracts gives two multi-span chunks that mostly separate the abstracts (a random
// split scores about 0.5-0.6), and the properties hold with a small maximum.
func TestClusterKMeans(t *testing.T) {
	docs := loadDocs(t, "scifact", 10)
	body := func(i int) string { return docs[i][strings.Index(docs[i], "\n\n")+2:] }
	sum := 0.0
	pairs := [][2]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {1, 5}, {3, 8}}
	for _, p := range pairs {
		pu := kmeansPurity(t, body(p[0]), body(p[1]))
		t.Logf("abstracts %v: purity %.2f", p, pu)
		sum += pu
	}
	if mean := sum / float64(len(pairs)); mean < 0.8 {
		t.Errorf("mean purity %.2f < 0.8", mean)
	}
	small, _ := NewCluster(WordSizer{}, 40, &bowEmbedder{}, ClusterOptions{Mode: ClusterKMeans, Clusters: 3})
	for _, d := range docs {
		checkChunks(t, d, run(t, small, d), checkOpts{max: 40, sizer: WordSizer{}, ordered: true})
	}
	if _, err := NewCluster(RuneSizer{}, 10, &bowEmbedder{}, ClusterOptions{Mode: ClusterKMeans}); err == nil {
		t.Error("k-means with 0 clusters accepted")
	}
}
