package evaluator

import "github.com/ragops/ragops/evaluator/beir"

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
