package embedder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync/atomic"
	"time"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/tokenize"
	onnx "github.com/yalue/onnxruntime_go"
)

// Mode selects how chunk vectors are computed.
type Mode int

// Modes.
const (
	// Naive encodes each chunk on its own.
	Naive Mode = iota
	// Late encodes the whole document (in macro windows when it exceeds the model's
	// positions) and mean-pools the token states inside each chunk's span.
	Late
)

// String returns "naive" or "late".
func (m Mode) String() string {
	if m == Late {
		return "late"
	}
	return "naive"
}

// ParseMode accepts "naive" or "late".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "naive":
		return Naive, nil
	case "late":
		return Late, nil
	}
	return Naive, fmt.Errorf("embedder: mode %q must be naive or late", s)
}

// Document is one document's text and its chunks (byte spans into Text).
type Document struct {
	Text   string
	Chunks []chunkers.Chunk
}

// EmbedChunks returns one vector per chunk of text, in chunk order, of length Dimension.
// A chunk whose span lies outside text, or (late mode) covers no token, is an error naming
// the chunk.
func (m *Model) EmbedChunks(ctx context.Context, text string, chunks []chunkers.Chunk, mode Mode) ([][]float32, error) {
	out, err := m.EmbedDocuments(ctx, []Document{{Text: text, Chunks: chunks}}, mode)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// EmbedDocuments embeds the chunks of several documents, batching their sequences together
// (sorted by length, under the token budget) for throughput. The result is indexed
// [document][chunk][Dimension]. In late mode each window's token states are pooled into its
// chunks as its batch comes back and then released (embedLate), so memory holds one batch of
// states plus the documents' token IDs and chunk sums, whatever the documents' length.
func (m *Model) EmbedDocuments(ctx context.Context, docs []Document, mode Mode) ([][][]float32, error) {
	for d, doc := range docs {
		for _, c := range doc.Chunks {
			if err := checkChunk(doc.Text, c); err != nil {
				return nil, fmt.Errorf("embedder: document %d: %w", d, err)
			}
		}
	}
	if mode == Late {
		return m.embedLate(ctx, docs)
	}
	flat, err := m.embedTexts(ctx, chunkTexts(docs), m.docPre, &m.truncatedChunks)
	if err != nil {
		return nil, err
	}
	out := make([][][]float32, len(docs))
	k := 0
	for d, doc := range docs {
		out[d] = flat[k : k+len(doc.Chunks)]
		k += len(doc.Chunks)
	}
	return out, nil
}

// EmbedQueries embeds queries with the model's query prefix and naive pooling. The
// evaluator uses it, so queries and indexed chunks always share one code path.
func (m *Model) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	return m.embedTexts(ctx, queries, m.queryPre, nil)
}

// EncodeQuery embeds one query as EmbedQueries does; it implements evaluator.QueryEncoder.
func (m *Model) EncodeQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := m.EmbedQueries(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// EmbedTexts embeds whole texts (document prefix, naive pooling), one vector each.
func (m *Model) EmbedTexts(ctx context.Context, texts []string) ([][]float32, error) {
	return m.embedTexts(ctx, texts, m.docPre, nil)
}

// EmbedSentences implements chunkers.SentenceEmbedder (Semantic and Cluster strategies).
func (m *Model) EmbedSentences(ctx context.Context, sentences []string) ([][]float32, error) {
	return m.embedTexts(ctx, sentences, m.docPre, nil)
}

func checkChunk(text string, c chunkers.Chunk) error {
	spans := c.Spans
	if len(spans) == 0 {
		spans = []chunkers.Span{{Start: c.Start, End: c.End}}
	}
	for _, s := range spans {
		if s.Start < 0 || s.End < s.Start || s.End > len(text) {
			return fmt.Errorf("chunk %d: span [%d, %d) is outside the text's %d bytes", c.Ordinal, s.Start, s.End, len(text))
		}
	}
	return nil
}

// chunkText is the text a naive embedding sees: chunkers.Chunk.EmbedText, i.e. the
// heading path line (PathPrefix) and a continued table's repeated header rows (Prefix)
// before the span, or a multi-span chunk's spans joined by newlines.
func chunkText(text string, c chunkers.Chunk) string { return c.EmbedText(text) }

// embedTexts encodes each text as [CLS] prefix text [SEP] (cut to the model's positions,
// counted in Stats.Truncated and, when cut is not nil, in cut too) and pools it per
// Config.Pooling.
func (m *Model) embedTexts(ctx context.Context, texts []string, prefix []int64, cut *atomic.Int64) ([][]float32, error) {
	seqs, n := m.naiveSeqs(texts, prefix)
	m.truncated.Add(n)
	if cut != nil {
		cut.Add(n)
	}
	return m.embedSeqs(ctx, seqs)
}

// QuerySequences returns the model inputs EmbedQueries(texts) encodes, one per text: [CLS]
// query prefix text [SEP] token IDs, cut to the model's positions (counted in
// Stats.Truncated). It tokenizes only, so a caller can tokenize on its own goroutines and
// hand the sequences to EmbedSequences later (package serving tokenizes each request as it
// arrives while the model runs the previous batch).
func (m *Model) QuerySequences(texts []string) [][]int64 {
	seqs, n := m.naiveSeqs(texts, m.queryPre)
	m.truncated.Add(n)
	return seqs
}

// TextSequences is QuerySequences for EmbedTexts: the document prefix.
func (m *Model) TextSequences(texts []string) [][]int64 {
	seqs, n := m.naiveSeqs(texts, m.docPre)
	m.truncated.Add(n)
	return seqs
}

// EmbedSequences embeds sequences from QuerySequences or TextSequences (of this model), one
// vector each, with naive pooling: EmbedQueries(texts) equals
// EmbedSequences(QuerySequences(texts)), and EmbedTexts likewise with TextSequences.
// Sequences of several calls may be concatenated into one call.
func (m *Model) EmbedSequences(ctx context.Context, seqs [][]int64) ([][]float32, error) {
	return m.embedSeqs(ctx, seqs)
}

// embedSeqs encodes sequences of naiveSeqs and pools each per Config.Pooling.
func (m *Model) embedSeqs(ctx context.Context, seqs [][]int64) ([][]float32, error) {
	out := make([][]float32, len(seqs))
	d := m.cfg.Dimension
	err := m.encode(ctx, seqs, func(i int, states []float32) {
		v := make([]float32, d)
		if m.cfg.Pooling == PoolCLS {
			copy(v, states[:d])
		} else {
			meanInto(v, states, d, 0, len(states)/d)
		}
		out[i] = m.finish(v)
	})
	return out, err
}

// naiveSeqs returns the sequence [CLS] prefix text [SEP] of each text, cut to the model's
// positions, and how many were cut.
func (m *Model) naiveSeqs(texts []string, prefix []int64) (seqs [][]int64, cut int64) {
	defer since(&m.tokenizeNanos, time.Now())
	seqs = make([][]int64, len(texts))
	limit := m.cfg.MaxPositions - 2
	for i, t := range texts {
		ids := m.tok.Encode(t, false).IDs
		body := append(append(make([]int64, 0, len(prefix)+len(ids)), prefix...), ids...)
		if len(body) > limit {
			body = body[:limit]
			cut++
		}
		seqs[i] = m.wrap(body)
	}
	return seqs, cut
}

// DocumentTokens returns the tokens EmbedDocuments(docs, mode) encodes, special tokens
// included: what it adds to Stats.Tokens. It tokenizes only; no inference runs. A resumed
// build counts with it the documents an earlier run embedded, so that a revision's token
// count does not depend on how often its build was interrupted.
func (m *Model) DocumentTokens(docs []Document, mode Mode) int64 {
	var seqs [][]int64
	if mode == Late {
		seqs, _ = m.lateSeqs(docs)
	} else {
		seqs, _ = m.naiveSeqs(chunkTexts(docs), m.docPre)
	}
	var n int64
	for _, q := range seqs {
		n += int64(len(q))
	}
	return n
}

// chunkTexts returns the naive input of every chunk of docs, in document then chunk order.
func chunkTexts(docs []Document) []string {
	var texts []string
	for _, doc := range docs {
		for _, c := range doc.Chunks {
			texts = append(texts, chunkText(doc.Text, c))
		}
	}
	return texts
}

func (m *Model) wrap(body []int64) []int64 {
	seq := make([]int64, 0, len(body)+2)
	seq = append(seq, m.tok.CLS())
	seq = append(seq, body...)
	return append(seq, m.tok.SEP())
}

// encode runs seqs through the model in batches and hands each sequence's token states
// ([len][Dimension] flattened) to consume, in batch order. Batches are length-sorted and
// packed so that sequences x longest length <= BatchTokens (at most MaxBatch sequences),
// or, with FixedBatch > 0, FixedBatch consecutive sequences.
func (m *Model) encode(ctx context.Context, seqs [][]int64, consume func(i int, states []float32)) error {
	defer since(&m.inferenceNanos, time.Now())
	if m.opts.Overlap == OverlapOn || (m.opts.Overlap == OverlapAuto && m.opts.Device == CUDA) {
		return m.encodeOverlapped(ctx, seqs, consume)
	}
	for _, b := range planBatches(seqs, m.opts) {
		batch := make([][]int64, len(b))
		for k, i := range b {
			batch[k] = seqs[i]
		}
		states, err := m.runBatch(ctx, batch)
		if err != nil {
			return err
		}
		for k, i := range b {
			consume(i, states[k])
		}
	}
	return nil
}

// preparedBatch is a batch whose input tensors are built; ranBatch one whose output is back.
type preparedBatch struct {
	idx    []int
	seqs   [][]int64
	inputs []onnx.Value
	s      int
}

type ranBatch struct {
	preparedBatch
	out     *onnx.Tensor[float32]
	release func()
}

// encodeOverlapped is encode as a three-stage pipeline (Options.Overlap): one goroutine
// builds the input tensors of batch i+1 while the caller's goroutine runs batch i and
// another copies out and pools batch i-1, each stage handing over through a channel of one.
// consume still sees the batches in order, on one goroutine.
func (m *Model) encodeOverlapped(ctx context.Context, seqs [][]int64, consume func(i int, states []float32)) error {
	if m.sess == nil {
		return errClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := planBatches(seqs, m.opts)
	prepared := make(chan preparedBatch, 1)
	var prepErr error
	go func() {
		defer close(prepared)
		for _, b := range batches {
			p := preparedBatch{idx: b, seqs: make([][]int64, len(b))}
			for k, i := range b {
				p.seqs[k] = seqs[i]
			}
			if p.inputs, p.s, prepErr = batchTensors(p.seqs, nil, m.typeIDs); prepErr != nil {
				return
			}
			select {
			case prepared <- p:
			case <-ctx.Done():
				destroyAll(p.inputs)
				return
			}
		}
	}()
	ran := make(chan ranBatch, 1)
	var poolErr error
	pooled := make(chan struct{})
	go func() {
		defer close(pooled)
		for r := range ran {
			states, err := m.statesOf(r.out, r.seqs, r.s)
			r.release()
			if err != nil {
				if poolErr == nil {
					poolErr = err
					cancel()
				}
				continue
			}
			if poolErr == nil {
				for k, i := range r.idx {
					consume(i, states[k])
				}
			}
		}
	}()
	var runErr error
	sent := 0
	for p := range prepared {
		if runErr == nil {
			runErr = ctx.Err()
		}
		if runErr != nil {
			destroyAll(p.inputs)
			continue
		}
		for _, q := range p.seqs {
			m.tokens.Add(int64(len(q)))
		}
		out, release, err := runInputs(m.sess, p.inputs, len(p.seqs), p.s, "inference", m.cfg.TokenStatesOutput)
		if err != nil {
			runErr = err
			cancel()
			continue
		}
		ran <- ranBatch{preparedBatch: p, out: out, release: release}
		sent++
	}
	if runErr == nil && prepErr == nil && sent < len(batches) {
		runErr = ctx.Err() // the producer stopped early: the caller's context ended
	}
	close(ran)
	<-pooled
	if poolErr != nil {
		return poolErr // runErr is then the cancellation it caused
	}
	return errors.Join(prepErr, runErr)
}

// planBatches groups sequence indices into batches: length-sorted (longest first) and
// packed so that sequences x longest length <= opts.BatchTokens with at most opts.MaxBatch
// sequences (greedily, or cut by cost with opts.RunTokens > 0: planByCost), or, with
// opts.FixedBatch > 0, FixedBatch consecutive sequences.
func planBatches(seqs [][]int64, opts Options) [][]int {
	idx := make([]int, len(seqs))
	for i := range idx {
		idx[i] = i
	}
	var out [][]int
	if opts.FixedBatch > 0 {
		for i := 0; i < len(idx); i += opts.FixedBatch {
			out = append(out, idx[i:min(i+opts.FixedBatch, len(idx))])
		}
		return out
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(seqs[idx[a]]) > len(seqs[idx[b]]) })
	if opts.RunTokens > 0 {
		return planByCost(seqs, idx, opts)
	}
	for i := 0; i < len(idx); {
		longest := len(seqs[idx[i]])
		j := i + 1
		for j < len(idx) && j-i < opts.MaxBatch && (j-i+1)*longest <= opts.BatchTokens {
			j++
		}
		out = append(out, idx[i:j])
		i = j
	}
	return out
}

// planByCost cuts idx (sequence indices sorted longest first) into consecutive batches that
// minimise the modelled cost sum over batches of opts.RunTokens + sequences x longest length
// (every batch is padded to its longest sequence), each within opts.BatchTokens (unless it
// holds one sequence) and opts.MaxBatch: an exact dynamic programme over the cut points,
// O(len(idx) x MaxBatch). Cutting a sorted list into consecutive runs loses nothing: some
// optimal partition of sequences into padded batches is always of that form.
func planByCost(seqs [][]int64, idx []int, opts Options) [][]int {
	n := len(idx)
	best := make([]int, n+1) // best[j]: least cost of the first j sequences
	from := make([]int, n+1) // from[j]: where the last batch of that plan starts
	for j := 1; j <= n; j++ {
		best[j] = -1
		for i := j - 1; i >= 0 && j-i <= opts.MaxBatch; i-- {
			padded := (j - i) * len(seqs[idx[i]])
			if padded > opts.BatchTokens && j-i > 1 {
				break // longer batches starting earlier only grow
			}
			if c := best[i] + opts.RunTokens + padded; best[j] < 0 || c < best[j] {
				best[j], from[j] = c, i
			}
		}
	}
	var out [][]int
	for j := n; j > 0; j = from[j] {
		out = append(out, idx[from[j]:j])
	}
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	return out
}

// finish L2-normalises v when the config asks for it.
func (m *Model) finish(v []float32) []float32 {
	if !m.cfg.Normalize {
		return v
	}
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// meanInto writes into v the mean of the rows [from, to) of states (rows of width d),
// accumulating in float64.
func meanInto(v []float32, states []float32, d, from, to int) {
	acc := make([]float64, d)
	for r := from; r < to; r++ {
		row := states[r*d : (r+1)*d]
		for j, x := range row {
			acc[j] += float64(x)
		}
	}
	n := float64(to - from)
	for j := range v {
		v[j] = float32(acc[j] / n)
	}
}

// TokenRange returns the tokens [first, last) that a byte span covers: the tokens whose
// first byte lies inside the span, so adjacent spans share no token and a token cut by a
// boundary belongs to the span it starts in. When no token starts inside the span (the span
// lies within one token) it returns the token(s) overlapping it. offsets must be sorted by
// Start (tokenizer output is). ok is false when the span touches no token (e.g. only
// whitespace).
func TokenRange(offsets []tokenize.Offset, span chunkers.Span) (first, last int, ok bool) {
	first = sort.Search(len(offsets), func(i int) bool { return offsets[i].Start >= span.Start })
	last = sort.Search(len(offsets), func(i int) bool { return offsets[i].Start >= span.End })
	if first < last {
		return first, last, true
	}
	// No token starts inside: take the token that contains span.Start, if any.
	if first > 0 && offsets[first-1].End > span.Start && span.End > span.Start {
		return first - 1, first, true
	}
	return first, first, false
}
