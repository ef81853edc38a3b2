package chunkers

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// SentenceEmbedder turns sentences into vectors. The embedder package's model implements
// it; tests use a hashed bag-of-words embedding.
type SentenceEmbedder interface {
	// EmbedSentences returns one vector per sentence, all of one dimension, in input order.
	EmbedSentences(ctx context.Context, sentences []string) ([][]float32, error)
}

// ThresholdType is how the Semantic strategy derives its breakpoint threshold from the
// distances between adjacent sentence windows (as in LangChain's SemanticChunker).
type ThresholdType string

// Threshold types.
const (
	// ThresholdPercentile breaks where the distance exceeds the Amount-th percentile (0-100).
	ThresholdPercentile ThresholdType = "Percentile"
	// ThresholdStandardDeviation breaks where the distance exceeds mean + Amount standard deviations.
	ThresholdStandardDeviation ThresholdType = "StandardDeviation"
	// ThresholdInterQuartile breaks where the distance exceeds mean + Amount interquartile ranges.
	ThresholdInterQuartile ThresholdType = "InterQuartile"
)

// SemanticOptions configure NewSemantic.
type SemanticOptions struct {
	// Threshold is the threshold type; empty means ThresholdPercentile.
	Threshold ThresholdType
	// Amount is the percentile or the number of standard deviations / interquartile ranges.
	Amount float64
	// BufferSentences joins this many neighbours on each side to a sentence's window
	// before embedding (LlamaIndex's buffer_size; Greg Kamradt's "5 levels" notebook).
	BufferSentences int
	// Sentence segmentation.
	Sentence SentenceOptions
}

// pieces holds what the embedding strategies share: the sentence pieces of a text (sentences,
// with sentences above the size split at words) and a splitter to pack them.
type pieces struct {
	seg *SentenceSegmenter
	sp  *splitter
	emb SentenceEmbedder
}

func newPieces(sizer Sizer, size int, emb SentenceEmbedder, so SentenceOptions) (*pieces, error) {
	if err := validateSize(sizer, size, 0); err != nil {
		return nil, err
	}
	if emb == nil {
		return nil, fmt.Errorf("chunkers: sentence embedder is nil")
	}
	g, err := NewSentenceSegmenter(so.Languages)
	if err != nil {
		return nil, err
	}
	levels := append([]cutter{g.cut}, fallback...)
	return &pieces{seg: g, sp: &splitter{sizer: sizer, max: size, levels: levels}, emb: emb}, nil
}

// split returns the sentence pieces of text: trimmed spans, each within the size unless it
// is one oversize code point.
func (p *pieces) split(text string) []Chunk {
	var out []Chunk
	for _, s := range p.seg.Sentences(text) {
		out = p.sp.split(text, s.Start, s.End, 1, out)
	}
	return out
}

// embed embeds the given texts and checks the answer's shape; vectors come back
// L2-normalised as float64.
func (p *pieces) embed(ctx context.Context, texts []string) ([][]float64, error) {
	vs, err := p.emb.EmbedSentences(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("chunkers: embedding %d sentences: %w", len(texts), err)
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("chunkers: embedder returned %d vectors for %d sentences", len(vs), len(texts))
	}
	out := make([][]float64, len(vs))
	for i, v := range vs {
		if len(v) == 0 || len(v) != len(vs[0]) {
			return nil, fmt.Errorf("chunkers: embedder returned vector %d of dimension %d, want %d > 0", i, len(v), len(vs[0]))
		}
		w := make([]float64, len(v))
		var n float64
		for k, x := range v {
			w[k] = float64(x)
			n += w[k] * w[k]
		}
		if n > 0 {
			n = 1 / math.Sqrt(n)
			for k := range w {
				w[k] *= n
			}
		}
		out[i] = w
	}
	return out, nil
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// pack packs consecutive pieces [i, j) into chunks of at most the size.
func (p *pieces) pack(text string, ps []Chunk, out []Chunk) []Chunk {
	segs := make([]seg, len(ps))
	for k, c := range ps {
		segs[k] = seg{s: c.Start, e: c.End}
	}
	return p.sp.pack(text, segs, len(p.sp.levels)-1, out)
}

// semantic is the Semantic strategy.
type semantic struct {
	*pieces
	opts SemanticOptions
}

// NewSemantic returns a chunker that cuts where the embedding distance (1 - cosine) between
// adjacent sentence windows exceeds a threshold (Kamradt's semantic chunking as in
// LangChain's SemanticChunker and LlamaIndex's SemanticSplitterNodeParser); the groups
// between cuts are packed into chunks of at most size units of sizer (a hard maximum).
// Errors: bad size, nil embedder, an unknown threshold type, a percentile outside 0-100, a
// negative amount or buffer.
func NewSemantic(sizer Sizer, size int, emb SentenceEmbedder, opts SemanticOptions) (Chunker, error) {
	p, err := newPieces(sizer, size, emb, opts.Sentence)
	if err != nil {
		return nil, err
	}
	switch opts.Threshold {
	case "":
		opts.Threshold = ThresholdPercentile
	case ThresholdPercentile, ThresholdStandardDeviation, ThresholdInterQuartile:
	default:
		return nil, fmt.Errorf("chunkers: unknown semantic threshold type %q (want Percentile, StandardDeviation or InterQuartile)", opts.Threshold)
	}
	if opts.Amount < 0 || math.IsNaN(opts.Amount) || (opts.Threshold == ThresholdPercentile && opts.Amount > 100) {
		return nil, fmt.Errorf("chunkers: semantic threshold amount %v out of range for %s", opts.Amount, opts.Threshold)
	}
	if opts.BufferSentences < 0 {
		return nil, fmt.Errorf("chunkers: buffer sentences must not be negative, got %d", opts.BufferSentences)
	}
	return &semantic{pieces: p, opts: opts}, nil
}

// Chunk implements Chunker.
func (s *semantic) Chunk(ctx context.Context, text string) ([]Chunk, error) {
	if err := checkUTF8(text); err != nil {
		return nil, err
	}
	ps := s.split(text)
	if len(ps) < 3 {
		return number(s.pack(text, ps, nil)), nil
	}
	dist, err := s.distances(ctx, text, ps)
	if err != nil {
		return nil, err
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
	out = s.pack(text, ps[start:], out)
	return number(out), nil
}

// semanticBlock is how many sentence windows Semantic embeds at once: memory for vectors
// stays at semanticBlock·dim however long the document is.
const semanticBlock = 256

// distances returns the embedding distance (1 - cosine) between the windows of neighbouring
// pieces: dist[i] between pieces i and i+1. Windows (a piece with BufferSentences neighbours
// on each side) are embedded semanticBlock at a time and only the last vector of a block is
// kept, so memory is O(len(ps)) floats plus one block of vectors.
func (s *semantic) distances(ctx context.Context, text string, ps []Chunk) ([]float64, error) {
	b := s.opts.BufferSentences
	dist := make([]float64, 0, len(ps)-1)
	var prev []float64
	windows := make([]string, 0, min(semanticBlock, len(ps)))
	for lo := 0; lo < len(ps); lo += semanticBlock {
		windows = windows[:0]
		for i := lo; i < min(lo+semanticBlock, len(ps)); i++ {
			windows = append(windows, text[ps[max(0, i-b)].Start:ps[min(len(ps)-1, i+b)].End])
		}
		vs, err := s.embed(ctx, windows)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if prev != nil && len(prev) != len(v) {
				return nil, fmt.Errorf("chunkers: embedder returned vectors of dimension %d and %d for one document", len(prev), len(v))
			}
			if prev != nil {
				dist = append(dist, 1-dot(prev, v))
			}
			prev = v
		}
	}
	return dist, nil
}

// threshold computes the breakpoint threshold over distances.
func threshold(dist []float64, t ThresholdType, amount float64) float64 {
	mean := 0.0
	for _, d := range dist {
		mean += d
	}
	mean /= float64(len(dist))
	switch t {
	case ThresholdStandardDeviation:
		v := 0.0
		for _, d := range dist {
			v += (d - mean) * (d - mean)
		}
		return mean + amount*math.Sqrt(v/float64(len(dist)))
	case ThresholdInterQuartile:
		sorted := slices.Sorted(slices.Values(dist))
		return mean + amount*(percentile(sorted, 75)-percentile(sorted, 25))
	default:
		return percentile(slices.Sorted(slices.Values(dist)), amount)
	}
}

// percentile returns the p-th percentile of sorted values with linear interpolation
// (NumPy's default method).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	r := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(r))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (r-float64(lo))*(sorted[lo+1]-sorted[lo])
}
