package evaluator

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/evaluator/metrics"
)

// QueryRun is one query's outcome: its final document ranking and chunk order.
type QueryRun struct {
	QueryID string
	// Docs are the ranked documents, best first, at most the largest cut-off.
	Docs []DocHit
	// Chunks are the chunk hits in final order (reranked ones first when reranking).
	Chunks []ChunkHit
	// Searches and Limit describe the retrieval (see Retrieved); Reranked counts reranked chunks.
	Searches, Limit, Reranked int
	// Short is true when fewer documents than the largest cut-off could be retrieved.
	Short bool
	// Context is, with Config.Expander, the expanded context of the top Config.ExpandK
	// chunks, each chunk once; Tokens and ContextTokens count the words of those chunks and
	// of Context.
	Context               []ChunkHit
	Tokens, ContextTokens int
	// Err is the query's failure, if any; a failed query has no documents and scores 0.
	Err error
}

// WriteTRECRun writes runs in the TREC run format read by trec_eval and pytrec_eval:
// one line "qid Q0 docid rank score tag" per ranked document, rank from 1, score as the
// shortest decimal that round-trips. Identifiers or a tag holding white space are an error,
// since the format is white-space separated.
func WriteTRECRun(w io.Writer, runs []QueryRun, tag string) error {
	if tag == "" || strings.ContainsFunc(tag, isSpace) {
		return fmt.Errorf("evaluator: run tag %q is empty or holds white space", tag)
	}
	bw := bufio.NewWriter(w)
	for _, r := range runs {
		if strings.ContainsFunc(r.QueryID, isSpace) {
			return fmt.Errorf("evaluator: query ID %q holds white space; the TREC run format cannot carry it", r.QueryID)
		}
		for i, d := range r.Docs {
			if strings.ContainsFunc(d.DocID, isSpace) {
				return fmt.Errorf("evaluator: document ID %q holds white space; the TREC run format cannot carry it", d.DocID)
			}
			fmt.Fprintf(bw, "%s Q0 %s %d %s %s\n", r.QueryID, d.DocID, i+1, strconv.FormatFloat(d.Score, 'g', -1, 64), tag)
		}
	}
	return bw.Flush()
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// QueryRecord is one line of the per-query metrics file (JSON Lines).
type QueryRecord struct {
	QueryID string `json:"queryId"`
	// Values holds every metric at every cut-off, full precision; spanHit@k (0 or 1) is
	// added for queries with annotated spans.
	Values map[string]float64 `json:"values"`
	// Docs is the number of ranked documents; Chunks the chunk hits of the last search.
	Docs     int  `json:"docs"`
	Chunks   int  `json:"chunks"`
	Searches int  `json:"searches"`
	Reranked int  `json:"reranked,omitempty"`
	Short    bool `json:"short,omitempty"`
	// Error is set for a failed query.
	Error string `json:"error,omitempty"`
}

// WriteQueryRecords writes records as JSON Lines, one object a line.
func WriteQueryRecords(w io.Writer, records []QueryRecord) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("evaluator: per-query record %q: %w", r.QueryID, err)
		}
	}
	return bw.Flush()
}

// MaxSummaryBytes bounds the JSON summary: a pod termination message holds at most 4096
// bytes, and a few are kept spare.
const MaxSummaryBytes = 4000

// Summary is the outcome of an evaluation, small enough for a pod termination message.
type Summary struct {
	Dataset string `json:"dataset,omitempty"`
	Split   string `json:"split"`
	Mode    Mode   `json:"mode"`
	// Alpha and Fusion are set for hybrid mode only.
	Alpha  *float64 `json:"alpha,omitempty"`
	Fusion Fusion   `json:"fusion,omitempty"`
	// RerankTopN is the number of chunks reranked per query; 0 without reranking.
	RerankTopN int `json:"rerankTopN,omitempty"`
	// Cutoffs are the cut-offs evaluated (10 always among them).
	Cutoffs []int `json:"cutoffs"`
	// Queries is the number of queries evaluated (judged, with a relevant document).
	Queries int `json:"queries"`
	// Metrics maps "ndcg@10"-style names to means over Queries, rounded to 4 decimals;
	// "spanHit@k" is the share of SpanQueries whose top k chunks overlap a relevant span.
	Metrics map[string]float64 `json:"metrics"`
	// Intervals maps the names in Metrics to the 95% percentile bootstrap interval and
	// standard error of their mean over queries (stats.OfMetric: 10,000 resamples seeded from
	// Config.Origin.SeedKey() and the name), rounded to 4 decimals.
	Intervals map[string]MetricInterval `json:"intervals,omitempty"`
	// ExpandK is, with Config.Expander, how many top chunks per query were expanded: the k of
	// the spanRecall, expandedSpanRecall, tokensReturned and expandedTokensReturned metrics.
	ExpandK int `json:"expandK,omitempty"`
	// SpanQueries counts queries with annotated spans (0 when the data set has none).
	SpanQueries int `json:"spanQueries,omitempty"`
	// FailedQueries failed to retrieve and score 0; ShortQueries got fewer documents than
	// the largest cut-off; NoRelevant judged queries were skipped for lack of a relevant one.
	FailedQueries int `json:"failedQueries"`
	ShortQueries  int `json:"shortQueries"`
	NoRelevant    int `json:"noRelevant,omitempty"`
	// Judgements used, and judgements dropped for naming an unknown query or document.
	Judgements int          `json:"judgements"`
	Dropped    beir.Dropped `json:"droppedJudgements"`
	// Errors holds up to 3 failed queries' errors, each cut to 200 bytes.
	Errors []string `json:"errors,omitempty"`
	// ResultsBytes and ResultsSHA256 describe the per-query results file (ResultsFile) when
	// it was written; ResultsError says why it was not (over results.MaxBytes, naming the
	// query count). Only Run with an OutDir sets them.
	ResultsBytes  int    `json:"resultsBytes,omitempty"`
	ResultsSHA256 string `json:"resultsSha256,omitempty"`
	ResultsError  string `json:"resultsError,omitempty"`
	// Truncated is set when metrics at cut-offs other than 10, or examples, were left out
	// to stay within MaxSummaryBytes; the per-query file has them all.
	Truncated bool `json:"truncated,omitempty"`
}

// MetricInterval is the uncertainty of a mean metric: its bootstrap standard error and the
// bounds of its 95% percentile interval.
type MetricInterval struct {
	StdErr float64 `json:"se"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// Round4 rounds v to 4 decimals for display.
func Round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// Marshal returns s as compact JSON of at most MaxSummaryBytes. When it is larger, it
// leaves out, in turn: error and dropped-judgement examples, then metrics (with their
// intervals) at the largest cut-offs other than 10, setting Truncated; the @10 metrics always stay. An error means
// even that is too large.
func (s Summary) Marshal() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil || len(b) <= MaxSummaryBytes {
		return b, err
	}
	s.Truncated = true
	s.Errors = nil
	s.Dropped.Examples = nil
	m := make(map[string]float64, len(s.Metrics))
	for k, v := range s.Metrics {
		m[k] = v
	}
	s.Metrics = m
	iv := make(map[string]MetricInterval, len(s.Intervals))
	for k, v := range s.Intervals {
		iv[k] = v
	}
	s.Intervals = iv
	ks := append([]int(nil), s.Cutoffs...)
	sort.Sort(sort.Reverse(sort.IntSlice(ks)))
	for _, k := range append([]int{-1}, ks...) {
		if k == metrics.DefaultK {
			continue
		}
		if k > 0 {
			for name := range s.Metrics {
				if strings.HasSuffix(name, "@"+strconv.Itoa(k)) {
					delete(s.Metrics, name)
					delete(s.Intervals, name)
				}
			}
		}
		if b, err = json.Marshal(s); err != nil || len(b) <= MaxSummaryBytes {
			return b, err
		}
	}
	return nil, fmt.Errorf("evaluator: summary is %d bytes even with @10 metrics only, over %d", len(b), MaxSummaryBytes)
}
