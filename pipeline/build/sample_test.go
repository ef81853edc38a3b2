package build

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
)

// TestSampledBuildHoldsTheJudgedDocumentsAndTheDraw builds 40 documents with a 25% sample
// whose dataset judges three of them, in two shards, and checks that the collection holds
// exactly the sampled documents (every judged one among them), each once, also after a
// shard runs again; then that a sample whose dataset cannot be read fails the shard (a build
// without its judged documents would make every Evaluation of it wrong).
func TestSampledBuildHoldsTheJudgedDocumentsAndTheDraw(t *testing.T) {
	const n = 40
	f := newFixture(t, n)
	judged := []string{docName(3), docName(17), docName(31)}
	ds := t.TempDir()
	var corpusLines, queryLines []string
	for i := range n {
		raw, _ := json.Marshal(map[string]string{"_id": docName(i), "title": "", "text": fmt.Sprintf("besluit %d", i)})
		corpusLines = append(corpusLines, string(raw))
	}
	qrels := []string{"query-id\tcorpus-id\tscore"}
	for i, id := range judged {
		queryLines = append(queryLines, fmt.Sprintf(`{"_id": "q%d", "text": "voorstel %d"}`, i, i))
		qrels = append(qrels, fmt.Sprintf("q%d\t%s\t1", i, id))
	}
	for name, lines := range map[string][]string{"corpus.jsonl": corpusLines, "queries.jsonl": queryLines, "qrels/test.tsv": qrels} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ds, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ds, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.plan.Shards = 2
	f.plan.Sample = &plan.Sample{Fraction: 0.25, Seed: 11, Judged: &plan.Source{Dir: ds}, Split: "test"}

	want := map[string]bool{}
	draw := corpus.Sample{Fraction: 0.25, Seed: 11, Judged: map[string]bool{}}
	for _, id := range judged {
		draw.Judged[id] = true
	}
	for i := range n {
		if draw.Keep(docName(i)) {
			want[docName(i)] = true
		}
	}
	if len(want) <= len(judged) || len(want) >= n {
		t.Fatalf("the draw keeps %d of %d documents: the fixture must sample some and leave some out", len(want), n)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	runShard := func(shard int) plan.BuildResult {
		t.Helper()
		res, err := Run(context.Background(), log, f.plan, Options{Shard: shard})
		if err != nil {
			t.Fatalf("shard %d: %v", shard, err)
		}
		return res
	}
	var documents, sampledOut int64
	for shard := range 2 {
		res := runShard(shard)
		documents += res.Documents
		sampledOut += res.SampledOut
	}
	if documents != int64(len(want)) || sampledOut != int64(n-len(want)) {
		t.Errorf("the shards built %d documents and left %d out, want the %d sampled and the other %d out (the controller checks they add up to the corpus)",
			documents, sampledOut, len(want), n-len(want))
	}
	check := func(when string) {
		t.Helper()
		held := map[string]bool{}
		for key, ids := range f.objects(t) {
			if len(ids) != 1 {
				t.Errorf("%s: chunk %s is held %d times", when, key, len(ids))
			}
			held[key[:strings.LastIndex(key, "#")]] = true
		}
		if got, exp := keys(held), keys(want); strings.Join(got, ",") != strings.Join(exp, ",") {
			t.Errorf("%s: the collection holds documents\n%v\nwant the sampled\n%v", when, got, exp)
		}
	}
	check("after the build")
	before := len(f.objects(t))
	runShard(1)
	check("after shard 1 ran again")
	if after := len(f.objects(t)); after != before {
		t.Errorf("shard 1 ran again: %d chunks, was %d", after, before)
	}

	f.plan.Sample.Judged = &plan.Source{Dir: filepath.Join(ds, "missing")}
	f.plan.Collection += "_broken"
	if _, err := Run(context.Background(), log, f.plan, Options{Shard: 0}); err == nil || !strings.Contains(err.Error(), "sample: judged documents") {
		t.Errorf("a sample whose dataset cannot be read: err %v, want the shard to fail naming the judged documents", err)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
