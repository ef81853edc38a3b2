package registry

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/tokenize"
)

// need returns the environment variable's value; without it the test skips, or fails under
// RAGOPS_REQUIRE_ALL=1 (CI).
func need(tb testing.TB, key, how string) string {
	tb.Helper()
	v := os.Getenv(key)
	if v == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			tb.Fatalf("%s is not set: %s", key, how)
		}
		tb.Skipf("%s is not set: %s", key, how)
	}
	return v
}

// beirDocs reads every document of a BEIR corpus.jsonl as "title\n\ntext" (the embedder's
// BEIR reader joins them the same way).
func beirDocs(tb testing.TB, dir, name string) []string {
	f, err := os.Open(filepath.Join(dir, name, "corpus.jsonl"))
	if err != nil {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			tb.Fatal(err)
		}
		tb.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var docs []string
	for sc.Scan() {
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			tb.Fatal(err)
		}
		if d.Title != "" {
			docs = append(docs, d.Title+"\n\n"+d.Text)
		} else {
			docs = append(docs, d.Text)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return docs
}

// tokenSpecs are the configurations issue 22 measured plus every other strategy type, all in
// the Tokens unit.
func tokenSpecs() []v1alpha1.ChunkingStrategySpec {
	return []v1alpha1.ChunkingStrategySpec{
		{Type: v1alpha1.StrategyFixed, Size: 200},
		{Type: v1alpha1.StrategyFixed, Size: 250, Overlap: 125},
		{Type: v1alpha1.StrategyFixed, Size: 800, Overlap: 400},
		{Type: v1alpha1.StrategyFixed, Size: 7, Overlap: 3},
		{Type: v1alpha1.StrategySlidingWindow, Size: 256, SlidingWindow: &v1alpha1.SlidingWindowOptions{Stride: 128}},
		{Type: v1alpha1.StrategySentence, Size: 200, Overlap: 20},
		{Type: v1alpha1.StrategyParagraph, Size: 200},
		{Type: v1alpha1.StrategyRecursive, Size: 800, Overlap: 400},
		{Type: v1alpha1.StrategyHeading, Size: 256},
		{Type: v1alpha1.StrategySemantic, Size: 512},
		{Type: v1alpha1.StrategyCluster, Size: 200},
		// spec.minSize on: tail merges and heading folds re-measure what they join.
		{Type: v1alpha1.StrategyFixed, Size: 507, MinSize: 256},
		{Type: v1alpha1.StrategySlidingWindow, Size: 256, MinSize: 128, SlidingWindow: &v1alpha1.SlidingWindowOptions{Stride: 128}},
		{Type: v1alpha1.StrategySentence, Size: 200, Overlap: 20, MinSize: 64},
		{Type: v1alpha1.StrategyParagraph, Size: 200, MinSize: 64},
		{Type: v1alpha1.StrategyRecursive, Size: 512, MinSize: 128},
		{Type: v1alpha1.StrategyHeading, Size: 256, MinSize: 64},
		{Type: v1alpha1.StrategySemantic, Size: 512, MinSize: 128},
		{Type: v1alpha1.StrategyCluster, Size: 200, MinSize: 64},
	}
}

func specName(s v1alpha1.ChunkingStrategySpec) string {
	n := fmt.Sprintf("%s-%d-%d", s.Type, s.Size, s.Overlap)
	if s.SlidingWindow != nil {
		n += fmt.Sprintf("-stride%d", s.SlidingWindow.Stride)
	}
	if s.MinSize > 0 {
		n += fmt.Sprintf("-min%d", s.MinSize)
	}
	return n
}

// TestTokenCountsRetokenise is the re-tokenisation property of issue 22: every chunk of every
// SciFact and QMSum document, for every strategy in the Tokens unit with the real
// all-MiniLM-L6-v2 tokenizer, has a TokenCount equal to the tokenizer's count of the text
// that is embedded (Chunk.Text), and that count is at most the size unless Oversize is set.
// Semantic and Cluster take their sentence vectors from a hashed bag of words: the property
// concerns sizes, not where topics change. It also logs how many chunks exceed the model's
// 510 tokens of text (those the embedder would truncate). The specs with spec.minSize set
// check the same property after tail merges and heading folds.
func TestTokenCountsRetokenise(t *testing.T) {
	if testing.Short() {
		t.Skip("re-tokenises two whole corpora")
	}
	modelDir := need(t, "RAGOPS_MODEL_DIR", "run hack/prepare.d/embedder.sh and export what it prints")
	dataDir := need(t, "RAGOPS_DATASETS", "set RAGOPS_DATASETS to the folder holding scifact/ and qmsum/")
	tok, err := tokenize.Load(filepath.Join(modelDir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	room := 510 // all-MiniLM-L6-v2: 512 positions less [CLS] and [SEP], no document prefix
	corpora := map[string][]string{"scifact": beirDocs(t, dataDir, "scifact"), "qmsum": beirDocs(t, dataDir, "qmsum")}
	var report []string
	for _, spec := range tokenSpecs() {
		c, err := New(spec, tok, hashEmbedder{})
		if err != nil {
			t.Fatal(err)
		}
		chunks, wrongCount, over, flagged, cut := 0, 0, 0, 0, 0
		var first string
		for _, name := range []string{"scifact", "qmsum"} {
			docs := corpora[name]
			if spec.Size < 32 { // tiny windows: many cuts per document, so fewer documents
				if name == "qmsum" {
					continue
				}
				docs = docs[:min(1000, len(docs))]
			}
			for di, d := range docs {
				cs, err := c.Chunk(context.Background(), d)
				if err != nil {
					t.Fatalf("%s %s doc %d: %v", specName(spec), name, di, err)
				}
				for _, ch := range cs {
					chunks++
					n := tok.Size(ch.Text(d))
					if n != ch.TokenCount {
						wrongCount++
					}
					if n > room {
						cut++
					}
					if n > int(spec.Size) {
						if ch.Oversize {
							flagged++
						} else {
							over++
						}
					}
					if (n != ch.TokenCount || (n > int(spec.Size) && !ch.Oversize)) && first == "" {
						first = fmt.Sprintf("%s doc %d chunk %d: TokenCount %d, recount %d, Oversize %v: %q",
							name, di, ch.Ordinal, ch.TokenCount, n, ch.Oversize, ch.Text(d))
					}
				}
			}
		}
		line := fmt.Sprintf("%-28s chunks %6d  TokenCount!=recount %4d  over size unflagged %4d  Oversize %d  over %d tokens (truncated by the model) %d",
			specName(spec), chunks, wrongCount, over, flagged, room, cut)
		t.Log(line)
		report = append(report, line)
		if wrongCount > 0 || over > 0 {
			t.Errorf("%s: first wrong chunk: %s", specName(spec), first)
		}
	}
	t.Logf("summary (SciFact + QMSum, all-MiniLM-L6-v2):\n%s", strings.Join(report, "\n"))
}

var _ chunkers.SpanSizer = (*tokenize.Tokenizer)(nil)
