// Command makefixture writes the runs and qrels of the metric parity test
// (evaluator/metrics/testdata), which hack/metrics-reference/reference.py then scores with
// pytrec_eval:
//
//   - scifact-bm25.run.gz: a real run, BM25 over BEIR SciFact (title + text, lower-cased
//     Unicode letter/digit tokens, k1=0.9, b=0.4, Lucene/Anserini idf), top 100 documents for
//     each of the 300 test queries; scifact-test.qrels is a copy of its qrels/test.tsv.
//   - graded.run and graded.qrels: a seeded random run over graded judgements (grades 0-3),
//     with score ties, queries missing from the run, queries with no relevant document and
//     run queries without judgements, to exercise what SciFact's binary qrels cannot.
//
// The in-memory BM25 exists only to produce a realistic fixture; the product retrieves
// through Weaviate.
//
//	go run ./hack/metrics-reference/makefixture -scifact ../shared/datasets/scifact -out evaluator/metrics/testdata
package main

import (
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/ragops/ragops/evaluator/beir"
)

func main() {
	scifact := flag.String("scifact", "../shared/datasets/scifact", "BEIR SciFact folder")
	out := flag.String("out", "evaluator/metrics/testdata", "output folder")
	depth := flag.Int("depth", 100, "documents per query in the SciFact run")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := sciFactRun(*scifact, *out, *depth); err != nil {
		log.Fatal(err)
	}
	if err := gradedRun(*out); err != nil {
		log.Fatal(err)
	}
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func sciFactRun(dir, out string, depth int) error {
	ds, err := beir.Load(os.DirFS(dir), beir.Options{Split: "test"})
	if err != nil {
		return err
	}
	const k1, b = 0.9, 0.4
	postings := map[string][]posting{}
	docLen := make([]float64, len(ds.Corpus))
	total := 0.0
	for i, d := range ds.Corpus {
		tf := map[string]int{}
		toks := tokens(d.Title + " " + d.Text)
		for _, t := range toks {
			tf[t]++
		}
		for t, n := range tf {
			postings[t] = append(postings[t], posting{doc: i, tf: n})
		}
		docLen[i] = float64(len(toks))
		total += docLen[i]
	}
	avg := total / float64(len(ds.Corpus))
	n := float64(len(ds.Corpus))

	f, err := os.Create(filepath.Join(out, "scifact-bm25.run.gz"))
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(f)
	for _, q := range ds.Queries {
		scores := map[int]float64{}
		for _, t := range tokens(q.Text) {
			ps := postings[t]
			idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
			for _, p := range ps {
				tf := float64(p.tf)
				scores[p.doc] += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*docLen[p.doc]/avg))
			}
		}
		type hit struct {
			id    string
			score float64
		}
		var hits []hit
		for i, s := range scores {
			hits = append(hits, hit{ds.Corpus[i].ID, s})
		}
		sort.Slice(hits, func(i, j int) bool {
			if hits[i].score != hits[j].score {
				return hits[i].score > hits[j].score
			}
			return hits[i].id > hits[j].id
		})
		if len(hits) > depth {
			hits = hits[:depth]
		}
		for r, h := range hits {
			fmt.Fprintf(gz, "%s Q0 %s %d %.6f bm25\n", q.ID, h.id, r+1, h.score)
		}
	}
	if err := gz.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	src, err := os.Open(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(filepath.Join(out, "scifact-test.qrels"))
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		return err
	}
	return dst.Close()
}

type posting struct{ doc, tf int }

func gradedRun(out string) error {
	rng := rand.New(rand.NewPCG(20261130, 6))
	var qrels, run strings.Builder
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	for q := 0; q < 80; q++ {
		qid := fmt.Sprintf("g%02d", q)
		judged := map[string]int{}
		for j := rng.IntN(14); j >= 0; j-- {
			doc := fmt.Sprintf("d%03d", rng.IntN(400))
			grade := []int{0, 1, 1, 1, 2, 2, 3}[rng.IntN(7)]
			if q%17 == 5 {
				grade = 0 // a query with no relevant document
			}
			if _, dup := judged[doc]; !dup {
				judged[doc] = grade
				fmt.Fprintf(&qrels, "%s\t%s\t%d\n", qid, doc, grade)
			}
		}
		if q%13 == 7 {
			continue // a judged query missing from the run
		}
		length := 1 + rng.IntN(150)
		docs := map[string]bool{}
		// Relevant documents rank higher on average, as in a real run.
		for d, g := range judged {
			if rng.Float64() < 0.3+0.2*float64(g) {
				docs[d] = true
			}
		}
		for len(docs) < length {
			docs[fmt.Sprintf("d%03d", rng.IntN(400))] = true
		}
		ids := make([]string, 0, len(docs))
		for d := range docs {
			ids = append(ids, d)
		}
		sort.Strings(ids)
		for _, d := range ids {
			score := rng.Float64()*5 + 2*float64(judged[d])
			score = math.Round(score*10) / 10 // coarse scores make ties
			fmt.Fprintf(&run, "%s Q0 %s 0 %.1f graded\n", qid, d, score)
		}
	}
	fmt.Fprintf(&run, "unjudged Q0 d001 0 1.0 graded\n")
	if err := os.WriteFile(filepath.Join(out, "graded.qrels"), []byte(qrels.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "graded.run"), []byte(run.String()), 0o644)
}
