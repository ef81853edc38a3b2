package embedder

import (
	"context"
	"fmt"
	"time"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/tokenize"
)

// planWindows cuts a document's n content tokens (prefix + document tokens) into windows
// [start, end) of at most size tokens that advance by size-overlap, the last one aligned to
// the end so every window is full; each is encoded as [CLS] window [SEP]. A document that
// fits gets one window.
func planWindows(n, size, overlap int) [][2]int {
	if n <= size {
		return [][2]int{{0, n}}
	}
	stride := size - overlap
	var out [][2]int
	for s := 0; ; s += stride {
		if s+size >= n {
			out = append(out, [2]int{n - size, n})
			return out
		}
		out = append(out, [2]int{s, s + size})
	}
}

// bestWindow returns, for every content token, the index of the window in which it has the
// most context: the largest distance to a window edge, where an edge at the document's
// start or end does not count (no window has more context there). Ties go to the earlier
// window.
func bestWindow(n int, wins [][2]int) []int {
	best := make([]int, n)
	score := make([]int, n)
	for i := range score {
		score[i] = -1
	}
	for w, win := range wins {
		for i := win[0]; i < win[1]; i++ {
			left, right := i-win[0], win[1]-1-i
			if win[0] == 0 {
				left = n
			}
			if win[1] == n {
				right = n
			}
			if c := min(left, right); c > score[i] {
				score[i], best[i] = c, w
			}
		}
	}
	return best
}

// lateDoc is one document laid out for late chunking: its content tokens (the document
// prefix's, then the document's), the document tokens' byte offsets and the macro windows
// [start, end) over the content.
type lateDoc struct {
	content []int64
	offsets []tokenize.Offset
	wins    [][2]int
}

// prepareLate tokenizes text and plans its windows of o.WindowTokens - 2 content tokens
// (room for [CLS] and [SEP]) sharing o.WindowOverlap tokens.
func prepareLate(tok *tokenize.Tokenizer, docPre []int64, o Options, text string) lateDoc {
	size := o.WindowTokens - 2
	overlap := min(o.WindowOverlap, size-1)
	e := tok.Encode(text, false)
	content := append(append(make([]int64, 0, len(docPre)+len(e.IDs)), docPre...), e.IDs...)
	return lateDoc{content: content, offsets: e.Offsets, wins: planWindows(len(content), size, overlap)}
}

// lateEnc is a document's lateDoc and the index of its first window in the call's sequences.
type lateEnc struct {
	lateDoc
	first int
}

// lateSeqs returns the windows of every document with chunks as [CLS] window [SEP] sequences,
// and per document its lateEnc (zero for a document without chunks: it is not encoded).
func (m *Model) lateSeqs(docs []Document) ([][]int64, []lateEnc) {
	defer since(&m.tokenizeNanos, time.Now())
	var seqs [][]int64
	encs := make([]lateEnc, len(docs))
	for di, doc := range docs {
		if len(doc.Chunks) == 0 {
			continue // nothing to pool: skip the encoder pass
		}
		encs[di].lateDoc = prepareLate(m.tok, m.docPre, m.opts, doc.Text)
		encs[di].first = len(seqs)
		for _, w := range encs[di].wins {
			seqs = append(seqs, m.wrap(encs[di].content[w[0]:w[1]]))
		}
	}
	return seqs, encs
}

// latePool is what a chunk's late vector averages: the document-token ranges [a, b) its
// spans cover (TokenRange), heads spans that hold the document's first token (each adds
// [CLS] of the first window and the document prefix's states) and tails spans that hold its
// last token (each adds [SEP] of the last window).
type latePool struct {
	ranges       [][2]int
	heads, tails int
}

// poolOf returns the latePool of chunk c over a document of nDoc tokens with offsets.
func poolOf(offsets []tokenize.Offset, c chunkers.Chunk, nDoc int) latePool {
	spans := c.Spans
	if len(spans) == 0 {
		spans = []chunkers.Span{{Start: c.Start, End: c.End}}
	}
	var p latePool
	for _, sp := range spans {
		a, b, ok := TokenRange(offsets, sp)
		if !ok {
			continue
		}
		p.ranges = append(p.ranges, [2]int{a, b})
		if a == 0 {
			p.heads++
		}
		if b == nDoc {
			p.tails++
		}
	}
	return p
}

// embedLate implements late chunking (Günther et al. 2024, arXiv:2409.04701) with long late
// chunking for documents beyond the window: every document's windows are batched together,
// then each chunk's vector is the mean of the token states whose first byte lies in the
// chunk's span(s) (TokenRange). The chunk holding the document's first token also pools
// [CLS] and the document prefix, the chunk holding its last token pools [SEP]; so a chunk
// spanning the whole document equals its naive mean-pooled embedding.
func (m *Model) embedLate(ctx context.Context, docs []Document) ([][][]float32, error) {
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
		// Assemble the document's token states: cls, content[0..n), sep.
		tokStates := make([]float32, n*d)
		for i := 0; i < n; i++ {
			w := best[i]
			ws := states[e.first+w]
			pos := 1 + i - wins[w][0] // +1 for the window's [CLS]
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
			if count == 0 {
				return nil, fmt.Errorf("embedder: document %d chunk %d: span [%d, %d) covers no token (empty or whitespace only)", di, c.Ordinal, c.Start, c.End)
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
