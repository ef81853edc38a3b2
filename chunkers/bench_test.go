package chunkers

import (
	"context"
	"testing"
)

// Benchmarks per strategy in MB/s (go test -bench . -run '^$' ./chunkers) over the first
// 500 SciFact abstracts and the first 5 QMSum meeting transcripts, sizes in characters
// (RuneSizer) and words (WordSizer). Semantic and Cluster include the hashed bag-of-words
// test embedder's time.
func BenchmarkChunkers(b *testing.B) {
	corpora := []struct {
		name string
		docs []string
	}{{"SciFact", loadDocs(b, "scifact", 500)}, {"QMSum", loadDocs(b, "qmsum", 5)}}
	type mk func(Sizer) (Chunker, error)
	strategies := []struct {
		name string
		make mk
	}{
		{"Fixed", func(s Sizer) (Chunker, error) { return NewFixed(s, 512, 0) }},
		{"FixedOverlap", func(s Sizer) (Chunker, error) { return NewFixed(s, 512, 64) }},
		{"SlidingWindow", func(s Sizer) (Chunker, error) { return NewSlidingWindow(s, 512, 256) }},
		{"Sentence", func(s Sizer) (Chunker, error) { return NewSentence(s, 512, 0, SentenceOptions{}) }},
		{"Paragraph", func(s Sizer) (Chunker, error) { return NewParagraph(s, 512, 0) }},
		{"Recursive", func(s Sizer) (Chunker, error) { return NewRecursive(s, 512, 0, nil) }},
		{"RecursiveSeparators", func(s Sizer) (Chunker, error) {
			return NewRecursive(s, 512, 0, []string{"\n\n", "\n", ". ", " "})
		}},
		{"Heading", func(s Sizer) (Chunker, error) {
			return NewHeading(s, 512, 0, HeadingOptions{Markdown: true, NumberedSections: true})
		}},
		{"Semantic", func(s Sizer) (Chunker, error) {
			return NewSemantic(s, 512, &bowEmbedder{}, SemanticOptions{Amount: 95, BufferSentences: 1})
		}},
		{"ClusterContiguous", func(s Sizer) (Chunker, error) { return NewCluster(s, 512, &bowEmbedder{}, ClusterOptions{}) }},
	}
	sizers := []struct {
		name string
		s    Sizer
		div  int
	}{{"chars", RuneSizer{}, 1}, {"words", WordSizer{}, 5}}
	for _, corpus := range corpora {
		total := 0
		for _, d := range corpus.docs {
			total += len(d)
		}
		for _, st := range strategies {
			for _, sz := range sizers {
				c, err := st.make(sz.s)
				if err != nil {
					b.Fatal(err)
				}
				b.Run(corpus.name+"/"+st.name+"/"+sz.name, func(b *testing.B) {
					b.SetBytes(int64(total))
					chunks := 0
					for b.Loop() {
						chunks = 0
						for _, d := range corpus.docs {
							cs, err := c.Chunk(context.Background(), d)
							if err != nil {
								b.Fatal(err)
							}
							chunks += len(cs)
						}
					}
					b.ReportMetric(float64(chunks), "chunks")
				})
			}
		}
	}
}
