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

// latePooler pools one document's late chunk vectors as its windows' token states arrive,
// so a window's states are released once consumed: it holds the chunks' float64 sums
// (chunks x Dimension), the [CLS], [SEP] and document prefix states, and windows that arrive
// ahead of their turn (none with encode's batch order, which keeps each document's
// windows in order). Summing in token order, it adds the same rows in the same order as
// pooling over the assembled document (for chunks whose spans are ascending and disjoint,
// as the chunkers emit), so the vectors are bit-identical to that.
type latePooler struct {
	e     lateEnc
	pre   int
	d     int
	best  []int      // content token -> window that serves it (bestWindow)
	pools []latePool // per chunk
	// cover lists the chunks whose token ranges hold document token t:
	// cover[coverAt[t]:coverAt[t+1]], a chunk once per range that holds t.
	cover, coverAt []int32
	acc            [][]float64 // per chunk, the sum of its token rows
	count          []int       // per chunk, the number of rows in acc
	cls, sep       []float32
	preStates      []float32 // the document prefix's states, pre x d
	next           int       // the window to consume next
	pending        map[int][]float32
}

// newLatePooler plans the pooling of doc (document di, laid out as e) over a model of width
// d with a document prefix of pre tokens.
//
// Errors: a chunk whose spans cover no token.
func newLatePooler(di int, doc Document, e lateEnc, pre, d int) (*latePooler, error) {
	n := len(e.content)
	nDoc := n - pre
	p := &latePooler{e: e, pre: pre, d: d, best: bestWindow(n, e.wins), pools: make([]latePool, len(doc.Chunks)),
		acc: make([][]float64, len(doc.Chunks)), count: make([]int, len(doc.Chunks)), coverAt: make([]int32, nDoc+1)}
	for ci, c := range doc.Chunks {
		p.pools[ci] = poolOf(e.offsets, c, nDoc)
		for _, r := range p.pools[ci].ranges {
			p.count[ci] += r[1] - r[0]
			for t := r[0]; t < r[1]; t++ {
				p.coverAt[t+1]++
			}
		}
		if p.count[ci] == 0 {
			return nil, fmt.Errorf("embedder: document %d chunk %d: span [%d, %d) covers no token (empty or whitespace only)", di, c.Ordinal, c.Start, c.End)
		}
		p.acc[ci] = make([]float64, d)
	}
	for t := 0; t < nDoc; t++ {
		p.coverAt[t+1] += p.coverAt[t]
	}
	p.cover = make([]int32, p.coverAt[nDoc])
	fill := append([]int32(nil), p.coverAt[:nDoc]...)
	for ci, pool := range p.pools {
		for _, r := range pool.ranges {
			for t := r[0]; t < r[1]; t++ {
				p.cover[fill[t]] = int32(ci)
				fill[t]++
			}
		}
	}
	if pre > 0 {
		p.preStates = make([]float32, pre*d)
	}
	return p, nil
}

// consume takes window w's states ([CLS] window [SEP], rows of width d) and pools every
// window now in turn; it reports whether the document's last window is pooled.
func (p *latePooler) consume(w int, states []float32) bool {
	if w != p.next {
		if p.pending == nil {
			p.pending = map[int][]float32{}
		}
		p.pending[w] = states
		return false
	}
	for {
		p.pool(p.next, states)
		p.next++
		if p.next == len(p.e.wins) {
			return true
		}
		var ok bool
		if states, ok = p.pending[p.next]; !ok {
			return false
		}
		delete(p.pending, p.next)
	}
}

// pool adds the rows of the content tokens that window w serves to their chunks' sums.
func (p *latePooler) pool(w int, ws []float32) {
	d, win := p.d, p.e.wins[w]
	if w == 0 {
		p.cls = append([]float32(nil), ws[:d]...)
	}
	if w == len(p.e.wins)-1 {
		p.sep = append([]float32(nil), ws[len(ws)-d:]...)
	}
	for i := win[0]; i < win[1]; i++ {
		if p.best[i] != w {
			continue
		}
		pos := 1 + i - win[0] // +1 for the window's [CLS]
		row := ws[pos*d : (pos+1)*d]
		if i < p.pre {
			copy(p.preStates[i*d:(i+1)*d], row)
			continue
		}
		t := i - p.pre
		for _, ci := range p.cover[p.coverAt[t]:p.coverAt[t+1]] {
			acc := p.acc[ci]
			for j, x := range row {
				acc[j] += float64(x)
			}
		}
	}
}

// vectors returns the chunks' vectors once every window is pooled: each chunk's sum, plus
// per head span [CLS] and the prefix states and per tail span [SEP], divided by the rows
// added, then m.finish.
func (p *latePooler) vectors(m *Model) [][]float32 {
	d := p.d
	vecs := make([][]float32, len(p.pools))
	for ci, pool := range p.pools {
		var extra [][]float32
		for range pool.heads {
			extra = append(extra, p.cls)
			for q := 0; q < p.pre; q++ {
				extra = append(extra, p.preStates[q*d:(q+1)*d])
			}
		}
		for range pool.tails {
			extra = append(extra, p.sep)
		}
		acc := p.acc[ci]
		for _, row := range extra {
			for j, x := range row {
				acc[j] += float64(x)
			}
		}
		v := make([]float32, d)
		for j := range v {
			v[j] = float32(acc[j] / float64(p.count[ci]+len(extra)))
		}
		vecs[ci] = m.finish(v)
	}
	return vecs
}

// embedLate implements late chunking (Günther et al. 2024, arXiv:2409.04701) with long late
// chunking for documents beyond the window: every document's windows are batched together,
// then each chunk's vector is the mean of the token states whose first byte lies in the
// chunk's span(s) (TokenRange), each token's state taken from the window where it has the
// most context (bestWindow). The chunk holding the document's first token also pools [CLS]
// and the document prefix, the chunk holding its last token pools [SEP]; so a chunk
// spanning the whole document equals its naive mean-pooled embedding.
//
// Pooling streams (latePooler): each window's states are added to its chunks' sums as its
// batch comes back and then released, so the Go heap holds about one batch of states plus
// the documents' chunk sums and token IDs, whatever the documents' length.
func (m *Model) embedLate(ctx context.Context, docs []Document) ([][][]float32, error) {
	d := m.cfg.Dimension
	seqs, encs := m.lateSeqs(docs)
	poolers := make([]*latePooler, len(docs))
	owner := make([]int32, len(seqs)) // sequence -> document
	out := make([][][]float32, len(docs))
	for di, doc := range docs {
		if len(doc.Chunks) == 0 {
			out[di] = [][]float32{}
			continue
		}
		p, err := newLatePooler(di, doc, encs[di], len(m.docPre), d)
		if err != nil {
			return nil, err
		}
		poolers[di] = p
		for w := range encs[di].wins {
			owner[encs[di].first+w] = int32(di)
		}
	}
	err := m.encode(ctx, seqs, func(i int, s []float32) {
		di := owner[i]
		p := poolers[di]
		if p.consume(i-p.e.first, s) {
			out[di] = p.vectors(m)
			poolers[di] = nil // release the document's sums and plan
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
