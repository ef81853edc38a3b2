// Package budget estimates what an Experiment trial will spend before it starts, and decides
// whether it still fits the Experiment's token budget.
//
// A trial's cost is the tokens its build embeds (an Index revision's status.revisions[].tokens:
// special tokens included, counted as embedder.Model.DocumentTokens counts them). The estimate
// chunks a seeded sample of the corpus's documents exactly as a build does (the strategy's
// chunker from chunkers/registry with the model's tokenizer, chunkers/docchunk.Chunk), counts
// the tokens the embedder would encode (tokenizer only, no inference) and scales the sample's
// total to the corpus by bytes (a ratio estimator, Cochran 1977, "Sampling Techniques", ch. 6)
// or, when the sizes are unknown, by document count.
package budget

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/embedder/tokenize"
	"github.com/ragops/ragops/reader"
)

// Unit is one document of the corpus as listed before reading: a stable key (path, or a BEIR
// "_id") and its size in bytes as the corpus's total counts it (0 when unknown).
type Unit struct {
	Key   string
	Bytes int64
}

// Sample returns the seeded sample of population: the max(1, round(fraction x N)) units whose
// SHA-256 of (seed, key) is smallest, in that order. The same seed and population give the
// same sample, a larger fraction a superset, and adding a unit changes the sample by at most
// that unit and the one it displaces. fraction is clamped to [0, 1].
func Sample(population []Unit, fraction float64, seed int64) []Unit {
	if len(population) == 0 {
		return nil
	}
	fraction = math.Min(math.Max(fraction, 0), 1)
	n := max(1, int(math.Round(fraction*float64(len(population)))))
	type keyed struct {
		h uint64
		u Unit
	}
	ks := make([]keyed, len(population))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	for i, u := range population {
		sum := sha256.Sum256(append(b[:], u.Key...))
		ks[i] = keyed{binary.BigEndian.Uint64(sum[:8]), u}
	}
	slices.SortFunc(ks, func(x, y keyed) int {
		switch {
		case x.h < y.h:
			return -1
		case x.h > y.h:
			return 1
		}
		return compareStrings(x.u.Key, y.u.Key)
	})
	out := make([]Unit, n)
	for i := range out {
		out[i] = ks[i].u
	}
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Population is the whole corpus the sample is scaled to (a Corpus's status.documents and
// status.bytes, or the listing's totals).
type Population struct {
	Documents int64
	Bytes     int64
}

// Document is one sampled document, read as a build reads it.
type Document struct {
	Unit Unit
	Doc  reader.Document
}

// Model is what of an embedding model folder the estimate needs: its tokenizer and
// ragops.json. Embedder embeds sentences for the Semantic and Cluster strategies (an
// embedder.Model; nil refuses those strategies, which cannot be chunked without inference).
type Model struct {
	Tokenizer *tokenize.Tokenizer
	Config    embedder.Config
	Embedder  chunkers.SentenceEmbedder
}

// Estimate is a trial's estimated cost.
type Estimate struct {
	// Tokens and Chunks estimated for the whole corpus.
	Tokens, Chunks int64
	// SampleDocuments chunked (documents that yield no chunk included, as a build reads and
	// skips them), with their SampleBytes, SampleTokens and SampleChunks.
	SampleDocuments int
	SampleBytes     int64
	SampleTokens    int64
	SampleChunks    int64
	// Population scaled to; ScaledBy is "bytes" or "documents".
	Population Population
	ScaledBy   string
	// RelativeStandardError is the estimated standard error of Tokens over Tokens, from the
	// spread of the sampled documents' tokens (the ratio estimator's variance with the
	// finite-population correction); 0 for a sample of one document or the whole corpus.
	RelativeStandardError float64
}

// ErrNeedsEmbedder is returned for Semantic and Cluster strategies without Model.Embedder.
var ErrNeedsEmbedder = errors.New("budget: the strategy embeds sentences to find its boundaries: the estimate needs the model's embedder")

// EstimateTokens chunks docs with strategy and model as a build does, counts the tokens the
// embedder encodes for them (naive: [CLS] + document prefix + chunk text cut to the model's
// positions + [SEP] per chunk; late: the macro windows of every document with a chunk, each
// [CLS] + window + [SEP]) and scales the sample's totals to pop: by bytes when pop.Bytes and
// every sampled document's Unit.Bytes are known, else by documents. A window above the model's
// positions is an error, as the build refuses it.
func EstimateTokens(ctx context.Context, strategy ragopsv1alpha1.ChunkingStrategySpec, m Model, docs []Document, pop Population) (Estimate, error) {
	if len(docs) == 0 {
		return Estimate{}, errors.New("budget: an empty sample estimates nothing")
	}
	if (strategy.Type == ragopsv1alpha1.StrategySemantic || strategy.Type == ragopsv1alpha1.StrategyCluster) && m.Embedder == nil {
		return Estimate{}, ErrNeedsEmbedder
	}
	c, err := registry.New(strategy, m.Tokenizer, m.Embedder)
	if err != nil {
		return Estimate{}, fmt.Errorf("budget: %w", err)
	}
	counter, err := newCounter(strategy, m)
	if err != nil {
		return Estimate{}, err
	}
	est := Estimate{SampleDocuments: len(docs), Population: pop, ScaledBy: "bytes"}
	tokens := make([]float64, len(docs))
	sizes := make([]float64, len(docs))
	for i, d := range docs {
		chunks, err := docchunk.Chunk(ctx, c, d.Doc)
		if err != nil {
			return Estimate{}, fmt.Errorf("budget: chunking %s: %w", d.Unit.Key, err)
		}
		n := counter.tokens(d.Doc.Text, chunks)
		est.SampleTokens += n
		est.SampleChunks += int64(len(chunks))
		est.SampleBytes += d.Unit.Bytes
		if d.Unit.Bytes <= 0 {
			est.ScaledBy = "documents"
		}
		tokens[i], sizes[i] = float64(n), float64(d.Unit.Bytes)
	}
	if pop.Bytes <= 0 || est.SampleBytes <= 0 {
		est.ScaledBy = "documents"
	}
	var scale float64
	if est.ScaledBy == "bytes" {
		scale = float64(pop.Bytes) / float64(est.SampleBytes)
	} else {
		scale = float64(pop.Documents) / float64(len(docs))
		for i := range sizes {
			sizes[i] = 1
		}
	}
	est.Tokens = int64(math.Round(float64(est.SampleTokens) * scale))
	est.Chunks = int64(math.Round(float64(est.SampleChunks) * scale))
	est.RelativeStandardError = ratioRSE(tokens, sizes, pop.Documents)
	return est, nil
}

// ratioRSE is the relative standard error of the ratio estimator R = sum(y)/sum(x) scaled to
// a population of N units: sqrt((1-f)/n * s_d^2) / mean(x) / R with residuals d = y - R x and
// f = n/N (Cochran 1977, eq. 6.9).
func ratioRSE(y, x []float64, N int64) float64 {
	n := len(y)
	if n < 2 || N <= int64(n) {
		return 0
	}
	var sy, sx float64
	for i := range y {
		sy, sx = sy+y[i], sx+x[i]
	}
	if sy == 0 || sx == 0 {
		return 0
	}
	r := sy / sx
	var ss float64
	for i := range y {
		d := y[i] - r*x[i]
		ss += d * d
	}
	s2 := ss / float64(n-1)
	f := float64(n) / float64(N)
	se := math.Sqrt((1 - f) / float64(n) * s2) // standard error of mean(y) - R mean(x)
	return se / (sx / float64(n)) / r
}

// counter counts the tokens the embedder encodes for one document's chunks.
type counter struct {
	tok    *tokenize.Tokenizer
	prefix int // document prefix tokens
	limit  int // naive: content tokens per sequence (positions less [CLS] and [SEP])
	late   bool
	size   int // late: content tokens per window
	stride int
}

func newCounter(s ragopsv1alpha1.ChunkingStrategySpec, m Model) (*counter, error) {
	c := &counter{tok: m.Tokenizer, limit: m.Config.MaxPositions - 2}
	if m.Config.DocumentPrefix != "" {
		c.prefix = len(m.Tokenizer.EncodePrefix(m.Config.DocumentPrefix))
	}
	if s.Late == nil || !s.Late.Enabled {
		return c, nil
	}
	// As embedder.Options: window 0 means the model's positions, window overlap 0 half the
	// window; the window may not exceed the positions.
	w, o := int(s.Late.Window), int(s.Late.WindowOverlap)
	if w == 0 {
		w = m.Config.MaxPositions
	}
	if o == 0 {
		o = w / 2
	}
	if w > m.Config.MaxPositions || w < 8 || o < 0 || o > w-3 {
		return nil, fmt.Errorf("budget: late window %d (overlap %d) does not fit the model's %d positions", w, o, m.Config.MaxPositions)
	}
	c.late, c.size = true, w-2
	c.stride = c.size - min(o, c.size-1)
	return c, nil
}

// tokens is embedder.Model.DocumentTokens for one document, without the model.
func (c *counter) tokens(text string, chunks []chunkers.Chunk) int64 {
	if len(chunks) == 0 {
		return 0
	}
	if c.late {
		// Windows of size content tokens advancing by stride, the last aligned to the end.
		n := c.prefix + len(c.tok.Encode(text, false).IDs)
		if n <= c.size {
			return int64(n + 2)
		}
		windows := (n-c.size+c.stride-1)/c.stride + 1
		return int64(windows * (c.size + 2))
	}
	var total int64
	for _, ch := range chunks {
		n := c.prefix + len(c.tok.Encode(ch.EmbedText(text), false).IDs)
		total += int64(min(n, c.limit) + 2)
	}
	return total
}
