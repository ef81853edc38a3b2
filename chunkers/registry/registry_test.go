package registry

import (
	"context"
	"hash/fnv"
	"reflect"
	"strings"
	"testing"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
)

// hashEmbedder is a deterministic hashed bag-of-words sentence embedding for tests.
type hashEmbedder struct{}

func (hashEmbedder) EmbedSentences(_ context.Context, ss []string) ([][]float32, error) {
	out := make([][]float32, len(ss))
	for i, s := range ss {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(s)) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

const doc = `# Scope

Dr. Pablo wrote the first part. It covers o.a. art. 3 and more. The second sentence is here.

## Details

| a | b |
|---|---|
| 1 | 2 |

Beslispunt 1
The council decides. 1.2 Numbers are fine.`

func i32(v int32) *int32 { return &v }

// TestNewEveryType builds every strategy type from a spec and checks the chunker honours
// the size in the spec's unit and the strategy-specific options.
func TestNewEveryType(t *testing.T) {
	specs := []v1alpha1.ChunkingStrategySpec{
		{Type: v1alpha1.StrategyFixed, Unit: v1alpha1.UnitCharacters, Size: 40, Overlap: 10},
		{Type: v1alpha1.StrategySlidingWindow, Unit: v1alpha1.UnitTokens, Size: 8, SlidingWindow: &v1alpha1.SlidingWindowOptions{Stride: 4}},
		{Type: v1alpha1.StrategySentence, Unit: v1alpha1.UnitTokens, Size: 12, Sentence: &v1alpha1.SentenceOptions{Languages: []string{"en", "nl"}, OverlapSentences: 1}},
		{Type: v1alpha1.StrategyParagraph, Unit: v1alpha1.UnitCharacters, Size: 100},
		{Type: v1alpha1.StrategyRecursive, Unit: v1alpha1.UnitCharacters, Size: 60, Overlap: 5, Recursive: &v1alpha1.RecursiveOptions{Separators: []string{"\n\n", "\n", " "}}},
		{Type: v1alpha1.StrategyHeading, Unit: v1alpha1.UnitCharacters, Size: 200, Heading: &v1alpha1.HeadingOptions{NumberedSections: true, Patterns: []v1alpha1.HeadingPattern{{Pattern: "^Beslispunt", Level: 3}}}},
		{Type: v1alpha1.StrategySemantic, Unit: v1alpha1.UnitTokens, Size: 20, Semantic: &v1alpha1.SemanticOptions{ThresholdType: v1alpha1.ThresholdInterQuartile, ThresholdAmount: "1.5", BufferSentences: 1}},
		{Type: v1alpha1.StrategyCluster, Unit: v1alpha1.UnitTokens, Size: 20, Cluster: &v1alpha1.ClusterOptions{Mode: v1alpha1.ClusterKMeans, Clusters: i32(2)}},
		{Type: v1alpha1.StrategyCluster, Unit: v1alpha1.UnitCharacters, Size: 120, Cluster: &v1alpha1.ClusterOptions{}},
	}
	for _, spec := range specs {
		c, err := New(spec, chunkers.WordSizer{}, hashEmbedder{})
		if err != nil {
			t.Fatalf("%s: %v", spec.Type, err)
		}
		chunks, err := c.Chunk(context.Background(), doc)
		if err != nil || len(chunks) < 2 {
			t.Fatalf("%s: %d chunks, %v", spec.Type, len(chunks), err)
		}
		var sizer chunkers.Sizer = chunkers.WordSizer{}
		if spec.Unit == v1alpha1.UnitCharacters {
			sizer = chunkers.RuneSizer{}
		}
		for _, ch := range chunks {
			if n := sizer.Size(ch.Text(doc)); n > int(spec.Size) && !ch.Oversize {
				t.Errorf("%s: chunk %d has %d units > %d", spec.Type, ch.Ordinal, n, spec.Size)
			}
		}
		if spec.Type == v1alpha1.StrategyHeading {
			var paths [][]string
			for _, ch := range chunks {
				paths = append(paths, ch.HeadingPath)
			}
			want := [][]string{{"Scope"}, {"Scope", "Details"}, {"Scope", "Details", "Beslispunt 1"}}
			if !reflect.DeepEqual(paths, want) {
				t.Errorf("heading paths %q, want %q", paths, want)
			}
		}
	}
}

// TestNewErrors checks that bad specs and missing inputs give errors naming the field.
func TestNewErrors(t *testing.T) {
	cases := []struct {
		spec   v1alpha1.ChunkingStrategySpec
		tokens chunkers.Sizer
		want   string
	}{
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Size: 10}, nil, "no tokenizer"},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Unit: v1alpha1.UnitCharacters, Size: 10, Overlap: 10}, nil, "overlap (10) must be less than size (10)"},
		{v1alpha1.ChunkingStrategySpec{Type: "Bogus", Unit: v1alpha1.UnitCharacters}, nil, `spec.type "Bogus"`},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategySlidingWindow, Unit: v1alpha1.UnitCharacters}, nil, "spec.slidingWindow"},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategySemantic, Unit: v1alpha1.UnitCharacters, Semantic: &v1alpha1.SemanticOptions{ThresholdAmount: "x"}}, nil, "thresholdAmount"},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyHeading, Unit: v1alpha1.UnitCharacters, Heading: &v1alpha1.HeadingOptions{Patterns: []v1alpha1.HeadingPattern{{Pattern: "(", Level: 1}}}}, nil, "heading pattern 0"},
	}
	for _, tc := range cases {
		_, err := New(tc.spec, tc.tokens, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.spec, err, tc.want)
		}
	}
	if _, err := New(v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategySemantic, Unit: v1alpha1.UnitCharacters}, nil, nil); err == nil {
		t.Error("Semantic without an embedder accepted")
	}
}
