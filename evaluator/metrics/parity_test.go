package metrics

import (
	"bufio"
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The reference values come from pytrec_eval (hack/metrics-reference/run.sh). CI regenerates
// them and points RAGOPS_METRICS_REFERENCE at the fresh file; without it the committed
// output of the same script is used.
func referencePath() string {
	if p := os.Getenv("RAGOPS_METRICS_REFERENCE"); p != "" {
		return p
	}
	return filepath.Join("testdata", "reference.tsv.gz")
}

func open(t testing.TB, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (hack/metrics-reference/run.sh writes the reference file)", err)
	}
	t.Cleanup(func() { f.Close() })
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		return gz
	}
	return f
}

func readRun(t testing.TB, path string) map[string][]string {
	t.Helper()
	scored := map[string][]Scored{}
	sc := bufio.NewScanner(open(t, path))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) != 6 {
			t.Fatalf("%s:%d: %d fields", path, line, len(f))
		}
		s, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		scored[f[0]] = append(scored[f[0]], Scored{DocID: f[2], Score: s})
	}
	run := map[string][]string{}
	for q, docs := range scored {
		run[q] = Rank(docs)
	}
	return run
}

func readQrels(t testing.TB, path string) map[string]map[string]int {
	t.Helper()
	qrels := map[string]map[string]int{}
	sc := bufio.NewScanner(open(t, path))
	for line := 1; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if line == 1 && f[0] == "query-id" {
			continue
		}
		g, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if qrels[f[0]] == nil {
			qrels[f[0]] = map[string]int{}
		}
		qrels[f[0]][f[1]] = g
	}
	return qrels
}

func TestParityWithPytrecEval(t *testing.T) {
	type key struct{ fixture, qid, metric string }
	ref := map[key]float64{}
	sc := bufio.NewScanner(open(t, referencePath()))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		ref[key{f[0], f[1], f[2]}] = v
	}
	if len(ref) == 0 {
		t.Fatal("empty reference file")
	}
	cutoffs := []int{1, 3, 5, 10, 100}
	fixtures := map[string]string{"scifact-bm25.run.gz": "scifact-test.qrels", "graded.run": "graded.qrels"}
	for runFile, qrelsFile := range fixtures {
		res, err := Evaluate(readRun(t, filepath.Join("testdata", runFile)), readQrels(t, filepath.Join("testdata", qrelsFile)), cutoffs)
		if err != nil {
			t.Fatal(err)
		}
		compared := 0
		refMean := map[string]float64{}
		for _, qv := range res.PerQuery {
			for name, got := range qv.Values {
				want, ok := ref[key{runFile, qv.QueryID, name}]
				if !ok {
					t.Fatalf("%s: no reference for query %s %s", runFile, qv.QueryID, name)
				}
				if math.Abs(got-want) > 1e-6 {
					t.Errorf("%s: query %s %s = %.9f, pytrec_eval %.9f", runFile, qv.QueryID, name, got, want)
				}
				refMean[name] += want / float64(len(res.PerQuery))
				compared++
			}
		}
		refCount := 0
		for k := range ref {
			if k.fixture == runFile {
				refCount++
			}
		}
		if compared != refCount {
			t.Errorf("%s: compared %d values, reference has %d (query sets differ)", runFile, compared, refCount)
		}
		for name, want := range refMean {
			if math.Abs(res.Mean[name]-want) > 1e-6 {
				t.Errorf("%s: mean %s = %.9f, pytrec_eval %.9f", runFile, name, res.Mean[name], want)
			}
		}
		t.Logf("%s: %d queries, %d values equal within 1e-6; ndcg@10 %.4f recall@10 %.4f recall@100 %.4f (no relevant: %d, unretrieved: %d)",
			runFile, len(res.PerQuery), compared, res.Mean["ndcg@10"], res.Mean["recall@10"], res.Mean["recall@100"], res.NoRelevant, res.Unretrieved)
	}
}

// BenchmarkEvaluateSciFact scores the 300-query SciFact BM25 run (top 100) at five cut-offs.
func BenchmarkEvaluateSciFact(b *testing.B) {
	run := readRun(b, filepath.Join("testdata", "scifact-bm25.run.gz"))
	qrels := readQrels(b, filepath.Join("testdata", "scifact-test.qrels"))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Evaluate(run, qrels, []int{1, 3, 5, 10, 100}); err != nil {
			b.Fatal(err)
		}
	}
}
