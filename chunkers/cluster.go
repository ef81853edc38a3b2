package chunkers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// ClusterMode selects how the Cluster strategy groups sentences.
type ClusterMode string

// Cluster modes.
const (
	// ClusterContiguous groups adjacent sentences so that the summed pairwise similarity
	// inside groups is maximal under the size limit, by dynamic programming (Chroma's
	// ClusterSemanticChunker, "Evaluating Chunking Strategies for Retrieval", 2024).
	ClusterContiguous ClusterMode = "Contiguous"
	// ClusterKMeans runs k-means over the sentence embeddings; each cluster's sentences, in
	// document order, form chunks of several spans (as NERxiv's AdvancedSemanticChunker).
	ClusterKMeans ClusterMode = "KMeans"
)

// ClusterOptions configure NewCluster.
type ClusterOptions struct {
	// Mode; empty means ClusterContiguous.
	Mode ClusterMode
	// Clusters is k for ClusterKMeans (capped at the number of sentences).
	Clusters int
	// Sentence segmentation.
	Sentence SentenceOptions
}

type cluster struct {
	*pieces
	opts ClusterOptions
}

// NewCluster returns a chunker that groups sentences by embedding similarity, chunks at
// most size units of sizer. Errors: bad size, nil embedder, unknown mode, Clusters < 1 in
// KMeans mode.
func NewCluster(sizer Sizer, size int, emb SentenceEmbedder, opts ClusterOptions) (Chunker, error) {
	p, err := newPieces(sizer, size, emb, opts.Sentence)
	if err != nil {
		return nil, err
	}
	switch opts.Mode {
	case "":
		opts.Mode = ClusterContiguous
	case ClusterContiguous:
	case ClusterKMeans:
		if opts.Clusters < 1 {
			return nil, fmt.Errorf("chunkers: k-means clustering needs at least 1 cluster, got %d", opts.Clusters)
		}
	default:
		return nil, fmt.Errorf("chunkers: unknown cluster mode %q (want Contiguous or KMeans)", opts.Mode)
	}
	return &cluster{pieces: p, opts: opts}, nil
}

// Chunk implements Chunker.
func (c *cluster) Chunk(ctx context.Context, text string) ([]Chunk, error) {
	if err := checkUTF8(text); err != nil {
		return nil, err
	}
	ps := c.split(text)
	if len(ps) < 2 {
		return number(c.pack(text, ps, nil)), nil
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = text[p.Start:p.End]
	}
	vs, err := c.embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if c.opts.Mode == ClusterKMeans {
		return number(c.kmeans(text, ps, vs)), nil
	}
	return number(c.contiguous(text, ps, vs)), nil
}

// contiguous finds the partition of pieces into runs that maximises the sum over runs of
// the pairwise (mean-centred) cosine similarities inside each run, with each run's summed
// piece sizes at most the maximum (Chroma's ClusterSemanticChunker objective).
//
// It needs no similarity matrix: the mean over all pairs is (|Σv|² − Σ|v|²) / (n(n−1)) for
// the n vectors v, and when a run [j, i) grows by piece j its reward grows by
// 2·(v_j·Σ_{j<k<i} v_k − (i−1−j)·mean), kept with a running sum. A run holds at most
// max/minimum-piece-size pieces, so time is O(n·L·dim) for runs of at most L pieces and
// memory O(dim) beyond the vectors (the quadratic matrix took 8·n² bytes: 200 MB at 5,000
// sentences).
func (c *cluster) contiguous(text string, ps []Chunk, vs [][]float64) []Chunk {
	return c.packRuns(text, ps, c.contiguousCuts(ps, vs))
}

// contiguousCuts returns the first piece of every run of the best partition, in order.
func (c *cluster) contiguousCuts(ps []Chunk, vs [][]float64) []int {
	n, dim := len(ps), len(vs[0])
	total := make([]float64, dim)
	self := 0.0
	for _, v := range vs {
		for k, x := range v {
			total[k] += x
		}
		self += dot(v, v)
	}
	mean := (dot(total, total) - self) / float64(n*(n-1))
	best := make([]float64, n+1) // best[i]: best score of pieces[:i]
	from := make([]int, n+1)
	acc := total // reused: the sum of the run's vectors after piece j
	for i := 1; i <= n; i++ {
		best[i] = math.Inf(-1)
		reward, size := 0.0, 0
		clear(acc)
		for j := i - 1; j >= 0; j-- { // run = pieces[j:i]
			size += ps[j].TokenCount
			if size > c.sp.max && j < i-1 {
				break
			}
			if k := i - 1 - j; k > 0 {
				reward += 2 * (dot(vs[j], acc) - float64(k)*mean)
			}
			if s := best[j] + reward; s > best[i] {
				best[i], from[i] = s, j
			}
			for k, x := range vs[j] {
				acc[k] += x
			}
		}
	}
	var cuts []int
	for i := n; i > 0; i = from[i] {
		cuts = append(cuts, from[i])
	}
	slices.Reverse(cuts)
	return cuts
}

// packRuns packs each run of pieces (cuts holds the first piece of each) into chunks.
func (c *cluster) packRuns(text string, ps []Chunk, cuts []int) []Chunk {
	n := len(ps)
	var out []Chunk
	for k, j := range cuts {
		end := n
		if k+1 < len(cuts) {
			end = cuts[k+1]
		}
		out = c.pack(text, ps[j:end], out)
	}
	return out
}

// kmeans clusters pieces by k-means (k-means++ seeding from a fixed seed, Lloyd
// iterations; Arthur & Vassilvitskii 2007) and packs each cluster's pieces, in document
// order, into multi-span chunks of at most the maximum size. Chunks are ordered by their
// first span.
func (c *cluster) kmeans(text string, ps []Chunk, vs [][]float64) []Chunk {
	k := min(c.opts.Clusters, len(ps))
	assign := kmeans(vs, k)
	var out []Chunk
	for cl := range k {
		var cur []Span
		flush := func() {
			if len(cur) > 0 {
				out = append(out, c.spanChunk(text, cur))
			}
			cur = nil
		}
		for i, p := range ps {
			if assign[i] != cl {
				continue
			}
			next := append(slices.Clone(cur), Span{p.Start, p.End})
			if len(cur) > 0 && c.sp.sizer.Size(c.spanChunk(text, next).Text(text)) > c.sp.max {
				flush()
				next = []Span{{p.Start, p.End}}
			}
			cur = next
		}
		flush()
	}
	slices.SortFunc(out, func(a, b Chunk) int { return a.Start - b.Start })
	return out
}

// spanChunk builds a chunk from spans in document order, merging spans that only
// whitespace separates; a chunk left with one span is an ordinary single-span chunk.
func (c *cluster) spanChunk(text string, spans []Span) Chunk {
	merged := []Span{spans[0]}
	for _, s := range spans[1:] {
		last := &merged[len(merged)-1]
		if strings.TrimSpace(text[last.End:s.Start]) == "" {
			last.End = s.End
		} else {
			merged = append(merged, s)
		}
	}
	ch := Chunk{Start: merged[0].Start, End: merged[len(merged)-1].End}
	if len(merged) > 1 {
		ch.Spans = merged
	}
	ch.TokenCount = c.sp.sizer.Size(ch.Text(text))
	ch.Oversize = ch.TokenCount > c.sp.max
	return ch
}

// kmeans returns a cluster index in [0, k) per vector: the best (lowest inertia) of 10
// seeded runs, as scikit-learn's KMeans with n_init=10.
func kmeans(vs [][]float64, k int) []int {
	var best []int
	bestInertia := math.Inf(1)
	for run := range 10 {
		assign, inertia := kmeansRun(vs, k, uint64(run))
		if inertia < bestInertia {
			best, bestInertia = assign, inertia
		}
	}
	return best
}

// kmeansRun is one k-means++ seeded Lloyd run; it returns the assignment and its inertia
// (sum of squared distances to the centres).
func kmeansRun(vs [][]float64, k int, seed uint64) ([]int, float64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	dim := len(vs[0])
	centres := [][]float64{slices.Clone(vs[rng.IntN(len(vs))])}
	d2 := make([]float64, len(vs))
	for len(centres) < k {
		total := 0.0
		for i, v := range vs {
			d2[i] = math.Inf(1)
			for _, c := range centres {
				d2[i] = min(d2[i], sqdist(v, c))
			}
			total += d2[i]
		}
		pick := len(vs) - 1
		if total > 0 {
			r := rng.Float64() * total
			for i, d := range d2 {
				if r -= d; r < 0 {
					pick = i
					break
				}
			}
		} else {
			pick = len(centres) // all points coincide with centres: any distinct index
		}
		centres = append(centres, slices.Clone(vs[pick]))
	}
	assign := make([]int, len(vs))
	for iter := 0; iter < 100; iter++ {
		changed := false
		for i, v := range vs {
			bi, bd := 0, math.Inf(1)
			for ci, c := range centres {
				if d := sqdist(v, c); d < bd {
					bi, bd = ci, d
				}
			}
			if assign[i] != bi || iter == 0 {
				changed = changed || assign[i] != bi
				assign[i] = bi
			}
		}
		if !changed && iter > 0 {
			break
		}
		counts := make([]int, k)
		for ci := range centres {
			clear(centres[ci])
		}
		for i, v := range vs {
			counts[assign[i]]++
			for d := range dim {
				centres[assign[i]][d] += v[d]
			}
		}
		for ci := range centres {
			if counts[ci] == 0 {
				continue // an empty cluster keeps a zero centre; it attracts no one
			}
			for d := range dim {
				centres[ci][d] /= float64(counts[ci])
			}
		}
	}
	inertia := 0.0
	for i, v := range vs {
		inertia += sqdist(v, centres[assign[i]])
	}
	return assign, inertia
}

func sqdist(a, b []float64) float64 {
	var s float64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}
