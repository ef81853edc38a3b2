package results

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/evaluator/internal/datasets"
)

func readFixture(t testing.TB, name string) *Set {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTripAndColumns(t *testing.T) {
	s := readFixture(t, "scifact-bm25-w48.json.gz")
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(s) {
		t.Fatal("set does not round-trip")
	}
	ids, v, err := s.Column("ndcg@10")
	if err != nil || len(ids) != 300 || len(v) != 300 || ids[0] != s.Queries[0].ID {
		t.Fatalf("column: %d ids, %d values, %v", len(ids), len(v), err)
	}
	if _, _, err := s.Column("ndcg@7"); err == nil || !strings.Contains(err.Error(), "ndcg@10") {
		t.Fatalf("unknown metric: %v", err)
	}
	if _, _, err := s.Column("spanHit@10"); err == nil {
		t.Fatal("SciFact has no spans, yet spanHit@10 was found")
	}
	// Plain JSON decodes too (a file written by hand or by jq).
	plain, _ := json.Marshal(s)
	if _, err := Decode(plain); err != nil {
		t.Fatal(err)
	}
}

func TestSpanColumns(t *testing.T) {
	s := &Set{Version: Version, Split: "val", Cutoffs: []int{5, 10}, Metrics: []string{"ndcg@5", "ndcg@10"}, Queries: []Query{
		{ID: "a", Values: []float64{1, 1}, SpanHit: []int{0, 1}},
		{ID: "b", Values: []float64{0, 0}},
	}}
	ids, v, err := s.Column("spanHit@10")
	if err != nil || fmt.Sprint(ids, v) != "[a] [1]" {
		t.Fatalf("spanHit@10: %v %v %v", ids, v, err)
	}
	if got := fmt.Sprint(s.AllMetrics()); got != "[ndcg@5 ndcg@10 spanHit@5 spanHit@10]" {
		t.Fatal(got)
	}
}

func TestInvalidSetsAreRefused(t *testing.T) {
	base := func() *Set {
		return &Set{Version: Version, Cutoffs: []int{10}, Metrics: []string{"ndcg@10"}, Queries: []Query{{ID: "a", Values: []float64{1}}, {ID: "b", Values: []float64{0}}}}
	}
	cases := map[string]func(*Set){
		"version":    func(s *Set) { s.Version = "v0" },
		"not after":  func(s *Set) { s.Queries[1].ID = "a" },
		"values for": func(s *Set) { s.Queries[0].Values = nil },
		"span hits":  func(s *Set) { s.Queries[0].SpanHit = []int{1, 1} },
		"no metric":  func(s *Set) { s.Metrics = nil },
		"is NaN":     func(s *Set) { s.Queries[0].Values[0] = 0 / zero() },
	}
	for want, mutate := range cases {
		s := base()
		mutate(s)
		if _, err := s.Encode(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	if _, err := Decode([]byte(`{"version":"` + Version + `","split":"t","fingerprint":"","mode":"BM25","cutoffs":[10],"metrics":["ndcg@10"],"queries":[],"extra":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
}

func zero() float64 { return 0 }

// realisticSet builds n queries from real parts: the texts of the SciFact, QMSum and
// legalqa-nl queries (cycled, with unique IDs), the metric rows of a real SciFact BM25 run
// (cycled) and top-10 lists of real SciFact document IDs.
func realisticSet(t testing.TB, n int) *Set {
	t.Helper()
	var texts []string
	for _, name := range []string{"scifact", "qmsum", "legalqa-nl"} {
		f, err := os.Open(filepath.Join(datasets.Dir(t, name), "queries.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var q struct{ Text string }
			if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, q.Text)
		}
		f.Close()
	}
	run := readFixture(t, "scifact-bm25-w48.json.gz")
	var docIDs []string
	for _, q := range run.Queries {
		docIDs = append(docIDs, q.Docs...)
	}
	r := rand.New(rand.NewPCG(1, 2))
	s := &Set{Version: Version, Dataset: "scifact", Split: "test", Fingerprint: run.Fingerprint, Mode: "Dense", Cutoffs: run.Cutoffs, Metrics: run.Metrics}
	for i := range n {
		row := run.Queries[i%len(run.Queries)]
		q := Query{ID: fmt.Sprintf("q%06d", i), Text: texts[r.IntN(len(texts))], Values: row.Values, FirstRelevant: row.FirstRelevant}
		for range DocsKept {
			q.Docs = append(q.Docs, docIDs[r.IntN(len(docIDs))])
		}
		s.Queries = append(s.Queries, q)
	}
	return s
}

// The size bound: 10,000 queries with real texts and real document IDs fit MaxBytes.
func TestTenThousandQueriesFit(t *testing.T) {
	b, err := realisticSet(t, 10000).Encode()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("10,000 queries at k=10: %d bytes gzip (%.1f%% of the %d-byte bound, %.1f bytes a query)", len(b), 100*float64(len(b))/MaxBytes, MaxBytes, float64(len(b))/10000)
	if len(b) > MaxBytes {
		t.Fatalf("%d bytes", len(b))
	}
	back, err := Decode(b)
	if err != nil || len(back.Queries) != 10000 {
		t.Fatalf("decode: %v", err)
	}
}

// Past the bound the set is refused whole, with the count in the error.
func TestPastTheBoundIsRefused(t *testing.T) {
	_, err := realisticSet(t, 14000).Encode()
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "14000 queries take") {
		t.Fatalf("got %v, want ErrTooLarge naming 14000 queries", err)
	}
}

func TestFrameRoundTripThroughALog(t *testing.T) {
	blob, err := realisticSet(t, 2000).Encode()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	log.WriteString("time=... level=INFO msg=evaluating\n")
	var frame bytes.Buffer
	if err := WriteFrame(&frame, blob); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(frame.String(), "\n")
	for i, l := range lines {
		if len(l) > 16<<10 {
			t.Fatalf("frame line of %d bytes", len(l))
		}
		log.WriteString(l)
		if i == 3 {
			log.WriteString("time=... level=INFO msg=interleaved\n") // stderr between stdout lines
		}
	}
	sum := sha256.Sum256(blob)
	got, err := ReadFrame(bytes.NewReader(log.Bytes()), hex.EncodeToString(sum[:]))
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// A frame of another run (another checksum) is not taken.
	if _, err := ReadFrame(bytes.NewReader(log.Bytes()), strings.Repeat("0", 64)); !errors.Is(err, ErrNoFrame) {
		t.Fatalf("other checksum: %v", err)
	}
	// A log that lost a line (rotation) is refused, saying so.
	cut := strings.Replace(log.String(), lines[2], "", 1)
	if _, err := ReadFrame(strings.NewReader(cut), ""); !errors.Is(err, ErrNoFrame) || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("cut log: %v", err)
	}
	if _, err := ReadFrame(strings.NewReader("nothing here\n"), ""); !errors.Is(err, ErrNoFrame) {
		t.Fatalf("empty log: %v", err)
	}
}

func TestConfigMapName(t *testing.T) {
	if got := ConfigMapName("scifact-dense"); got != "scifact-dense-results" {
		t.Fatal(got)
	}
	long := strings.Repeat("a", 250)
	a, b := ConfigMapName(long), ConfigMapName(long[:249]+"b")
	if len(a) > 253 || a == b {
		t.Fatalf("long names: %d chars, distinct %v", len(a), a != b)
	}
}
