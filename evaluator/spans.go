package evaluator

import (
	"slices"

	"github.com/ragops/ragops/evaluator/beir"
)

// SpanHitAt reports whether any of the first k chunks (in final ranking order) overlaps a
// relevant span of the same document: chunk [Start, End) and span [s, e) overlap when
// Start < e and s < End (byte offsets). This is the span-level check for data sets with
// annotated evidence (QMSum's query_spans.jsonl, Zhong et al. 2021): document-level recall
// can credit a chunk from the right meeting that holds none of the answer; this cannot.
func SpanHitAt(chunks []ChunkHit, spans []beir.QuerySpans, k int) bool {
	if k < len(chunks) {
		chunks = chunks[:k]
	}
	for _, c := range chunks {
		for _, qs := range spans {
			if qs.DocID != c.DocID {
				continue
			}
			for _, s := range qs.Spans {
				if c.Start < s.End && s.Start < c.End {
					return true
				}
			}
		}
	}
	return false
}

// SpanRecall is the share of the relevant spans' bytes that chunks cover: for each span
// [s, e) of a document, the bytes of it inside the union of that document's chunks
// [Start, End), summed over all spans and divided by the spans' summed length (bytes, as the
// span offsets). 0 when there are no spans. Unlike SpanHitAt, which credits any overlap, it
// tells half an answer from a whole one: the measure of small-to-big expansion (Config.Expander).
func SpanRecall(chunks []ChunkHit, spans []beir.QuerySpans) float64 {
	total, covered := 0, 0
	for _, qs := range spans {
		var ivs [][2]int
		for _, c := range chunks {
			if c.DocID == qs.DocID && c.Start < c.End {
				ivs = append(ivs, [2]int{c.Start, c.End})
			}
		}
		slices.SortFunc(ivs, func(a, b [2]int) int { return a[0] - b[0] })
		var merged [][2]int
		for _, iv := range ivs {
			if n := len(merged); n > 0 && iv[0] <= merged[n-1][1] {
				merged[n-1][1] = max(merged[n-1][1], iv[1])
				continue
			}
			merged = append(merged, iv)
		}
		for _, s := range qs.Spans {
			total += s.End - s.Start
			for _, m := range merged {
				covered += max(0, min(s.End, m[1])-max(s.Start, m[0]))
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(covered) / float64(total)
}
