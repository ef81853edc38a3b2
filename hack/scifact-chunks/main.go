// Command scifact-chunks measures what a ChunkingStrategy's minSize does to SciFact retrieval,
// in-process and side by side: it reads the corpus as a build does (reader/beir: the title as
// a heading, a blank line, the text), chunks every abstract with a Fixed strategy of -size
// tokens as chunkers/registry builds it, once per -min-sizes value, embeds each distinct
// chunk text once with package embedder (the model folder's tokenizer, document prefix and
// pooling, ONNX Runtime), and runs the 300 test queries through package evaluator against an
// exact in-memory index of each variant's chunk vectors (cosine, documents ranked by their
// best chunk, as an Evaluation ranks them). A "first" variant keeps only each document's
// first chunk of the minSize-0 cut (docs/results.md: e5-small-v2 fixed-507 0.6634 all chunks, 0.6872
// first chunks).
//
//	nice -n 10 go run ./hack/scifact-chunks -model .cache/models/e5-small-v2 \
//	    -datasets ../shared/datasets -size 507 -min-sizes 0,128
//
// Embedding the 5,183 abstracts' chunks (~1.8 M tokens, plus the longer tails of the
// minSize variants) takes 25-30 CPU-minutes with one ONNX Runtime thread. It prints one JSON
// line per variant: chunks, tokens and the evaluator's summary (nDCG@10, recall@10, MRR@10).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/evaluator"
	rbeir "github.com/ragops/ragops/reader/beir"
)

// chunkRef is one chunk of a variant: its document, span and the index of its text's vector.
type chunkRef struct {
	doc        string
	start, end int
	vec        int
}

func main() {
	modelDir := flag.String("model", "", "model folder (model.onnx, tokenizer.json, ragops.json)")
	data := flag.String("datasets", "../shared/datasets", "datasets folder holding scifact/")
	size := flag.Int("size", 507, "Fixed spec.size in tokens")
	minSizes := flag.String("min-sizes", "0,128", "comma-separated spec.minSize values to compare (0: off)")
	threads := flag.Int("threads", 1, "ONNX Runtime intra-op threads")
	step := flag.Int("step", 128, "chunk texts per EmbedTexts call")
	flag.Parse()
	if *modelDir == "" {
		log.Fatal("-model is required")
	}
	ctx := context.Background()
	m, err := embedder.Load(*modelDir, embedder.Options{IntraOpThreads: *threads})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	src := evaluator.DatasetSource{Name: "scifact", Dir: filepath.Join(*data, "scifact")}
	ds, err := evaluator.LoadDataset(ctx, src, "test")
	if err != nil {
		log.Fatal(err)
	}

	texts := map[string]int{} // chunk text -> index into uniq
	var uniq []string
	variants := map[string][]chunkRef{}
	var names []string
	for _, f := range strings.Split(*minSizes, ",") {
		ms, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			log.Fatalf("-min-sizes %q: %v", f, err)
		}
		spec := v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Unit: v1alpha1.UnitTokens, Size: int32(*size), MinSize: int32(ms)}
		c, err := registry.New(spec, m.Tokenizer(), nil)
		if err != nil {
			log.Fatal(err)
		}
		name := fmt.Sprintf("fixed-%d minSize %d", *size, ms)
		var first []chunkRef
		for _, d := range ds.Corpus {
			doc, _ := rbeir.FromFields(d.Title, d.Text)
			cs, err := docchunk.Chunk(ctx, c, doc)
			if err != nil {
				log.Fatalf("%s: %v", d.ID, err)
			}
			for i, ch := range cs {
				t := ch.EmbedText(doc.Text)
				k, ok := texts[t]
				if !ok {
					k = len(uniq)
					texts[t] = k
					uniq = append(uniq, t)
				}
				r := chunkRef{doc: d.ID, start: ch.Start, end: ch.End, vec: k}
				variants[name] = append(variants[name], r)
				if i == 0 {
					first = append(first, r)
				}
			}
		}
		names = append(names, name)
		if ms == 0 {
			variants[name+" (first chunks only)"] = first
			names = append(names, name+" (first chunks only)")
		}
	}

	vecs := make([][]float32, 0, len(uniq))
	for i := 0; i < len(uniq); i += *step {
		vs, err := m.EmbedTexts(ctx, uniq[i:min(i+*step, len(uniq))])
		if err != nil {
			log.Fatal(err)
		}
		vecs = append(vecs, vs...)
		st := m.Stats()
		log.Printf("%d/%d chunk texts, %d tokens (%d truncated)", len(vecs), len(uniq), st.Tokens, st.Truncated)
	}

	for _, name := range names {
		refs := variants[name]
		sum, err := evaluator.Run(ctx, evaluator.Config{
			Dataset: src, Mode: evaluator.Dense, Retriever: &exactIndex{refs: refs, vecs: vecs},
			Encoder: encoder{m}, Cutoffs: []int{10, 100},
		})
		if err != nil {
			log.Fatal(err)
		}
		tokens := 0
		for _, r := range refs {
			tokens += m.Tokenizer().Size(uniq[r.vec])
		}
		raw, _ := json.Marshal(map[string]any{"variant": name, "model": m.Config().Name, "chunks": len(refs), "tokens": tokens, "summary": sum})
		fmt.Println(string(raw))
	}
}

type encoder struct{ m *embedder.Model }

func (e encoder) EncodeQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.m.EmbedQueries(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// exactIndex is a brute-force dense index over a variant's chunk vectors: score = dot
// product, which is cosine for the embedder's unit vectors.
type exactIndex struct {
	refs []chunkRef
	vecs [][]float32
}

func (ix *exactIndex) Search(_ context.Context, q evaluator.Query, limit int) ([]evaluator.ChunkHit, error) {
	if q.Mode != evaluator.Dense {
		return nil, fmt.Errorf("exact index: mode %s not supported", q.Mode)
	}
	hits := make([]evaluator.ChunkHit, len(ix.refs))
	for i, r := range ix.refs {
		v := ix.vecs[r.vec]
		var s float64
		for k := range v {
			s += float64(v[k]) * float64(q.Vector[k])
		}
		hits[i] = evaluator.ChunkHit{DocID: r.doc, Start: r.start, End: r.end, Score: s}
	}
	sort.Slice(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	return hits[:min(limit, len(hits))], nil
}
