// Command bench-chunkers times ragops chunkers on the documents of a JSON file (a list of
// strings) and prints one JSON object per strategy: tool, strategy, MB/s (best of -reps
// runs over all documents), chunk count and mean chunk size in code points. hack/bench-chunkers/run.sh
// runs it beside the Python peers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ragops/ragops/chunkers"
)

func main() {
	docsPath := flag.String("docs", "", "JSON file holding a list of document texts")
	corpus := flag.String("corpus", "", "corpus name for the output")
	size := flag.Int("size", 512, "chunk size in characters")
	reps := flag.Int("reps", 3, "repetitions; the fastest counts")
	flag.Parse()
	raw, err := os.ReadFile(*docsPath)
	if err != nil {
		log.Fatal(err)
	}
	var docs []string
	if err := json.Unmarshal(raw, &docs); err != nil {
		log.Fatalf("%s: %v", *docsPath, err)
	}
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	r := chunkers.RuneSizer{}
	mk := map[string]func() (chunkers.Chunker, error){
		"Fixed":     func() (chunkers.Chunker, error) { return chunkers.NewFixed(r, *size, 0) },
		"Sentence":  func() (chunkers.Chunker, error) { return chunkers.NewSentence(r, *size, 0, chunkers.SentenceOptions{}) },
		"Recursive": func() (chunkers.Chunker, error) { return chunkers.NewRecursive(r, *size, 0, nil) },
		"Heading": func() (chunkers.Chunker, error) {
			return chunkers.NewHeading(r, *size, 0, chunkers.HeadingOptions{Markdown: true})
		},
	}
	for _, name := range []string{"Fixed", "Sentence", "Recursive", "Heading"} {
		c, err := mk[name]()
		if err != nil {
			log.Fatal(err)
		}
		best := time.Duration(1<<63 - 1)
		n, sum := 0, 0
		for range *reps {
			n, sum = 0, 0
			start := time.Now()
			for _, d := range docs {
				cs, err := c.Chunk(context.Background(), d)
				if err != nil {
					log.Fatal(err)
				}
				for _, ch := range cs {
					sum += ch.TokenCount
				}
				n += len(cs)
			}
			best = min(best, time.Since(start))
		}
		out, _ := json.Marshal(map[string]any{"corpus": *corpus, "tool": "ragops", "strategy": name,
			"mbps": float64(total) / best.Seconds() / 1e6, "chunks": n, "mean": float64(sum) / float64(max(n, 1))})
		fmt.Println(string(out))
	}
}
