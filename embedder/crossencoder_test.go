package embedder

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/evaluator"
)

const prepRerank = "run hack/prepare.d/reranker.sh (hack/export-model/export.sh --cross-encoder) and set RAGOPS_RERANK_MODEL_DIR to the folder it prints"

var _ evaluator.Reranker = (*CrossEncoder)(nil)

func rerankDir(t testing.TB) string {
	t.Helper()
	need(t, ort.EnvLibrary, prepORT)
	return need(t, "RAGOPS_RERANK_MODEL_DIR", prepRerank)
}

func loadCross(t testing.TB, opts Options) *CrossEncoder {
	t.Helper()
	if opts.IntraOpThreads == 0 {
		opts.IntraOpThreads = 1
	}
	c, err := LoadCrossEncoder(rerankDir(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refPair is one line of reference/scores.jsonl written by hack/export-model/export.py
// --cross-encoder: a SciFact pair encoded by HF tokenizers and scored by Python onnxruntime.
type refPair struct {
	QueryID      string  `json:"queryId"`
	DocID        string  `json:"docId"`
	Query        string  `json:"query"`
	Passage      string  `json:"passage"`
	Truncated    bool    `json:"truncated"`
	InputIDs     []int64 `json:"inputIds"`
	TokenTypeIDs []int64 `json:"tokenTypeIds"`
	Score        float64 `json:"score"`
}

func readRefPairs(t *testing.T) []refPair {
	t.Helper()
	p := filepath.Join(rerankDir(t), "reference", "scores.jsonl")
	f, err := os.Open(p)
	if err != nil {
		t.Fatalf("%v (%s)", err, prepRerank)
	}
	defer f.Close()
	var out []refPair
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r refPair
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCrossEncoderMatchesOnnxruntime checks, on real SciFact pairs, that Go encodes each
// pair exactly as HF tokenizers does ([CLS] q [SEP] p [SEP], types 0/1, passage truncated to
// the positions) and that Score's batched, length-sorted scores equal Python onnxruntime's
// batch-of-one scores on the same model.onnx within 1e-4, in input order.
func TestCrossEncoderMatchesOnnxruntime(t *testing.T) {
	c := loadCross(t, Options{})
	refs := readRefPairs(t)
	if len(refs) < 50 {
		t.Fatalf("reference has %d pairs, want >= 50 (%s)", len(refs), prepRerank)
	}
	// The reference must be able to catch errors: truncated pairs and a spread of scores.
	var truncated int
	var mean, sq float64
	for _, r := range refs {
		if r.Truncated {
			truncated++
		}
		mean += r.Score
	}
	mean /= float64(len(refs))
	for _, r := range refs {
		sq += (r.Score - mean) * (r.Score - mean)
	}
	std := math.Sqrt(sq / float64(len(refs)))
	if truncated == 0 || std < 0.1 {
		t.Fatalf("reference is not discriminative: %d truncated pairs, score std %.4f", truncated, std)
	}

	for i, r := range refs {
		q := c.tok.Encode(r.Query, false).IDs
		ids, types, cut, err := c.encodePair(q, c.tok.Encode(r.Passage, false).IDs)
		if err != nil {
			t.Fatalf("pair %d (query %s, doc %s): %v", i, r.QueryID, r.DocID, err)
		}
		if !slices.Equal(ids, r.InputIDs) || !slices.Equal(types, r.TokenTypeIDs) || cut != r.Truncated {
			t.Errorf("pair %d (query %s, doc %s): Go encoding (%d tokens, truncated %v) differs from HF tokenizers (%d tokens, truncated %v)",
				i, r.QueryID, r.DocID, len(ids), cut, len(r.InputIDs), r.Truncated)
		}
	}

	// Score each query's passages in one call (pairs of a query are adjacent in the file).
	worst := 0.0
	for i := 0; i < len(refs); {
		j := i
		var passages []string
		for j < len(refs) && refs[j].QueryID == refs[i].QueryID && refs[j].Query == refs[i].Query {
			passages = append(passages, refs[j].Passage)
			j++
		}
		got, err := c.Score(context.Background(), refs[i].Query, passages)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(passages) {
			t.Fatalf("query %s: %d scores for %d passages", refs[i].QueryID, len(got), len(passages))
		}
		for k, s := range got {
			r := refs[i+k]
			d := math.Abs(s - r.Score)
			worst = max(worst, d)
			if d > 1e-4 {
				t.Errorf("query %s doc %s: Go score %.6f, onnxruntime %.6f (|diff| %.2e > 1e-4)", r.QueryID, r.DocID, s, r.Score, d)
			}
		}
		i = j
	}
	st := c.Stats() // encodePair does not count; Score does
	if st.Truncated != int64(truncated) {
		t.Errorf("Stats.Truncated = %d, want the reference's %d truncated pairs", st.Truncated, truncated)
	}
	t.Logf("%d SciFact pairs (%d truncated, score std %.3f): max |Go - Python onnxruntime| = %.2e", len(refs), truncated, std, worst)
}

// TestCrossEncoderOrder checks that Score returns scores in input order whatever the
// batching: one call over many passages of mixed lengths equals one call per passage, the
// reversed input gives the reversed scores, and small or fixed batches change nothing.
func TestCrossEncoderOrder(t *testing.T) {
	refs := readRefPairs(t)
	query := refs[0].Query
	var passages []string
	for _, r := range refs[:12] {
		passages = append(passages, r.Passage)
	}
	ctx := context.Background()
	c := loadCross(t, Options{})
	all, err := c.Score(ctx, query, passages)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range passages {
		one, err := c.Score(ctx, query, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(one[0] - all[i]); d > 1e-4 {
			t.Errorf("passage %d: batched score %.6f, alone %.6f", i, all[i], one[0])
		}
	}
	rev := slices.Clone(passages)
	slices.Reverse(rev)
	got, err := c.Score(ctx, query, rev)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if d := math.Abs(got[i] - all[len(all)-1-i]); d > 1e-4 {
			t.Errorf("reversed input, position %d: %.6f, want %.6f", i, got[i], all[len(all)-1-i])
		}
	}
	distinct := 0
	for i := 1; i < len(all); i++ {
		if math.Abs(all[i]-all[0]) > 1e-3 {
			distinct++
		}
	}
	if distinct == 0 {
		t.Fatalf("all %d scores equal %.6f: the order check proves nothing", len(all), all[0])
	}
	for _, opts := range []Options{{BatchTokens: 512, MaxBatch: 3}, {FixedBatch: 5}} {
		small := loadCross(t, opts)
		got, err := small.Score(ctx, query, passages)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if d := math.Abs(got[i] - all[i]); d > 1e-4 {
				t.Errorf("%+v: passage %d: %.6f, want %.6f", opts, i, got[i], all[i])
			}
		}
	}
	if got, err := c.Score(ctx, query, nil); err != nil || len(got) != 0 {
		t.Errorf("no passages: %v, %v; want an empty result", got, err)
	}
}

// TestCrossEncoderTruncationKeepsQuery checks that a passage too long for the model is cut
// at its end while the whole query stays, that text past the cut does not change the score,
// and that a query too long for any passage is an error naming the query.
func TestCrossEncoderTruncationKeepsQuery(t *testing.T) {
	c := loadCross(t, Options{})
	refs := readRefPairs(t)
	query := refs[1].Query
	long := strings.Repeat(refs[0].Passage+" ", 4)
	q := c.tok.Encode(query, false).IDs
	ids, types, cut, err := c.encodePair(q, c.tok.Encode(long, false).IDs)
	if err != nil {
		t.Fatal(err)
	}
	maxPos := c.Config().MaxPositions
	if !cut || len(ids) != maxPos {
		t.Fatalf("long passage: %d tokens, cut %v; want %d tokens, cut", len(ids), cut, maxPos)
	}
	head := append(append([]int64{c.tok.CLS()}, q...), c.tok.SEP())
	if !slices.Equal(ids[:len(head)], head) || ids[len(ids)-1] != c.tok.SEP() {
		t.Fatalf("truncated pair does not start with [CLS] query [SEP] and end with [SEP]")
	}
	for j, ty := range types {
		want := int64(0)
		if j >= len(head) {
			want = 1
		}
		if ty != want {
			t.Fatalf("token %d: type %d, want %d", j, ty, want)
		}
	}

	ctx := context.Background()
	before := c.Stats().Truncated
	got, err := c.Score(ctx, query, []string{long, long + " an appended tail the model never sees", refs[0].Passage})
	if err != nil {
		t.Fatal(err)
	}
	if c.Stats().Truncated-before != 2 {
		t.Errorf("Stats.Truncated grew by %d, want 2", c.Stats().Truncated-before)
	}
	if math.Abs(got[0]-got[1]) > 1e-5 {
		t.Errorf("text past the cut changed the score: %.6f vs %.6f", got[0], got[1])
	}
	// A different query must change the score of the same truncated passage: the query is
	// really inside the model's input.
	other, err := c.Score(ctx, refs[40].Query, []string{long})
	if err != nil {
		t.Fatal(err)
	}
	if refs[40].Query == query || math.Abs(other[0]-got[0]) < 1e-4 {
		t.Errorf("another query gave the same score %.6f for the truncated passage", other[0])
	}

	huge := strings.Repeat("protein ", maxPos)
	if _, err := c.Score(ctx, huge, []string{"a passage"}); err == nil || !strings.Contains(err.Error(), "query") {
		t.Errorf("query of %d words: err = %v, want an error about the query's length", maxPos, err)
	}
}

// TestCrossEncoderConfigKinds checks that an embedding folder and a cross-encoder folder
// are each refused by the other's loader with a message saying which loader to use.
func TestCrossEncoderConfigKinds(t *testing.T) {
	dir := t.TempDir()
	write := func(v string) {
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"name":"x","kind":"cross-encoder","maxPositions":512,"scoreOutput":"logits","inputs":{"inputIds":"input_ids","attentionMask":"attention_mask"}}`)
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "LoadCrossEncoder") {
		t.Errorf("ReadConfig of a cross-encoder folder: %v, want a pointer to LoadCrossEncoder", err)
	}
	if _, err := ReadCrossEncoderConfig(dir); err != nil {
		t.Errorf("ReadCrossEncoderConfig: %v", err)
	}
	write(`{"name":"x","maxPositions":512,"dimension":384,"pooling":"mean","tokenStatesOutput":"t","inputs":{"inputIds":"input_ids","attentionMask":"attention_mask"}}`)
	if _, err := ReadCrossEncoderConfig(dir); err == nil || !strings.Contains(err.Error(), "cross-encoder") {
		t.Errorf("ReadCrossEncoderConfig of an embedding folder: %v, want a kind error", err)
	}
	if _, err := LoadCrossEncoder(dir, Options{}); err == nil {
		t.Error("LoadCrossEncoder of an embedding folder succeeded")
	}
	write(`{"name":"x","kind":"cross-encoder","maxPositions":512,"inputs":{"inputIds":"input_ids","attentionMask":"attention_mask"}}`)
	if _, err := ReadCrossEncoderConfig(dir); err == nil || !strings.Contains(err.Error(), "scoreOutput") {
		t.Errorf("missing scoreOutput: %v", err)
	}
}
