package evaluator

import (
	"context"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragops/ragops/evaluator/beir"
)

// memIndex is a test-only chunk index: documents cut into windows of `words` words (byte
// offsets kept) and searched with BM25 (k1=0.9, b=0.4). It stands in for Weaviate's bm25
// in the tests of aggregation, reranking and Run on real data; the Weaviate adapter has its
// own integration test.
type memIndex struct {
	chunks   []ChunkHit // Score unused
	text     []string
	postings map[string][]memPosting
	length   []float64
	avg      float64
}

type memPosting struct{ chunk, tf int }

func memTokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func newMemIndex(docs []beir.Document, words int) *memIndex {
	ix := &memIndex{postings: map[string][]memPosting{}}
	for _, d := range docs {
		ord := 0
		start, count := -1, 0
		flush := func(end int) {
			if start < 0 {
				return
			}
			ix.add(ChunkHit{DocID: d.ID, Ordinal: ord, Start: start, End: end}, d.Text[start:end])
			ord++
			start, count = -1, 0
		}
		inWord := false
		for i, r := range d.Text {
			space := unicode.IsSpace(r)
			if !space && !inWord {
				if count == words {
					flush(i)
				}
				if start < 0 {
					start = i
				}
				count++
			}
			inWord = !space
		}
		end := len(d.Text)
		for end > 0 {
			r, n := utf8.DecodeLastRuneInString(d.Text[:end])
			if !unicode.IsSpace(r) {
				break
			}
			end -= n
		}
		flush(end)
	}
	total := 0.0
	for _, l := range ix.length {
		total += l
	}
	ix.avg = total / float64(len(ix.length))
	return ix
}

func (ix *memIndex) add(h ChunkHit, text string) {
	i := len(ix.chunks)
	ix.chunks = append(ix.chunks, h)
	ix.text = append(ix.text, text)
	toks := memTokens(text)
	tf := map[string]int{}
	for _, t := range toks {
		tf[t]++
	}
	for t, n := range tf {
		ix.postings[t] = append(ix.postings[t], memPosting{i, n})
	}
	ix.length = append(ix.length, float64(len(toks)))
}

func (ix *memIndex) Search(ctx context.Context, q Query, limit int) ([]ChunkHit, error) {
	const k1, b = 0.9, 0.4
	n := float64(len(ix.chunks))
	scores := map[int]float64{}
	for _, t := range memTokens(q.Text) {
		ps := ix.postings[t]
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			scores[p.chunk] += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*ix.length[p.chunk]/ix.avg))
		}
	}
	hits := make([]ChunkHit, 0, len(scores))
	for i, s := range scores {
		h := ix.chunks[i]
		h.Score = s
		h.Text = ix.text[i]
		hits = append(hits, h)
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		if hits[i].DocID != hits[j].DocID {
			return hits[i].DocID < hits[j].DocID
		}
		return hits[i].Ordinal < hits[j].Ordinal
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}
