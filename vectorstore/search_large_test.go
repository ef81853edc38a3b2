package vectorstore

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// legalChunks cuts the legalqa-nl laws ($RAGOPS_DATASETS/legalqa-nl, else
// ../shared/datasets beside the repository root) into n chunks of 380 words, about 512
// MiniLM tokens of Dutch.
func legalChunks(t *testing.T, n int) []Chunk {
	t.Helper()
	f := openDatasetCorpus(t, "legalqa-nl")
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var out []Chunk
	for sc.Scan() && len(out) < n {
		var d struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		words := strings.Fields(d.Text)
		for i := 0; i+380 <= len(words) && len(out) < n; i += 380 {
			body := strings.Join(words[i:i+380], " ")
			out = append(out, Chunk{DocID: d.ID, Ordinal: i / 380, Start: 0, End: len(body), Text: body,
				HeadingPath: []string{d.ID}, DocHash: hashOf(d.Text), Vector: unitVector(d.ID+body, dims)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < n {
		t.Fatalf("legalqa-nl gives %d chunks of 380 words, want %d", len(out), n)
	}
	return out
}

// TestSearchReturnsTwoThousandLongChunksWithText: a search whose reply exceeds gRPC's default
// 4 MiB receive limit (2,000 hits with the text of 512-token Dutch chunks, as a reranked
// Evaluation asks for) returns every hit with its text, in every mode.
func TestSearchReturnsTwoThousandLongChunksWithText(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	name := newCollection(t, s, "large", "r1", VectorIndex{Type: IndexFlat})
	chunks := legalChunks(t, 2000)
	text, size := map[string]string{}, 0
	for _, c := range chunks {
		text[ChunkID("r1", c.DocID, c.Ordinal).String()] = c.Text
		size += len(c.Text)
	}
	if size < 9<<19 {
		t.Fatalf("chunk text totals %d bytes, want > 4.5 MiB (above gRPC's default 4 MiB)", size)
	}
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	// BM25 finds the chunks that hold "de" (Weaviate's word tokenization: lowercased runs of
	// letters and digits); dense and hybrid search find all of them.
	withDe := 0
	for _, c := range chunks {
		for _, w := range strings.FieldsFunc(strings.ToLower(c.Text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if w == "de" {
				withDe++
				break
			}
		}
	}
	if withDe < 1900 {
		t.Fatalf("%d chunks hold \"de\", want >= 1,900 for a BM25 reply above 4 MiB", withDe)
	}
	for _, q := range []Query{
		{Mode: ModeDense, Vector: chunks[0].Vector},
		{Mode: ModeBM25, Text: "de"},
		{Mode: ModeHybrid, Text: "de", Vector: chunks[0].Vector, Alpha: 0.5},
	} {
		q.Limit, q.WithText = 2000, true
		hits, err := s.Search(ctx, name, q)
		if err != nil {
			t.Fatalf("%s search for 2,000 hits with text: %v", q.Mode, err)
		}
		want := len(chunks)
		if q.Mode == ModeBM25 {
			want = withDe
		}
		if len(hits) != want {
			t.Fatalf("%s: %d hits, want %d", q.Mode, len(hits), want)
		}
		seen := map[string]bool{}
		for _, h := range hits {
			if want, ok := text[h.ID]; !ok || h.Text != want || seen[h.ID] {
				t.Fatalf("%s: hit %s (%s/%d) text %d bytes: want the chunk's %d bytes, once", q.Mode, h.ID, h.DocID, h.Ordinal, len(h.Text), len(want))
			}
			seen[h.ID] = true
		}
	}
}

// TestSearchSendsTheAPIKey: searches, which go over the Store's own gRPC connection, carry
// Config.APIKey; without it the server refuses them.
func TestSearchSendsTheAPIKey(t *testing.T) {
	srv := weaviatetest.StartWith(t, weaviatetest.Options{ExtraEnv: []string{
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=false",
		"AUTHENTICATION_APIKEY_ENABLED=true",
		"AUTHENTICATION_APIKEY_ALLOWED_KEYS=search-key",
		"AUTHENTICATION_APIKEY_USERS=ragops",
	}})
	s := storeFor(t, srv, Config{APIKey: "search-key"})
	ctx := context.Background()
	name := newCollection(t, s, "auth", "r1", VectorIndex{Type: IndexFlat})
	chunks := legalChunks(t, 3)
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, name, Query{Mode: ModeDense, Vector: chunks[1].Vector, Limit: 3, WithText: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 || hits[0].Text != chunks[1].Text {
		t.Fatalf("%d hits, first %s/%d: want 3 with chunk %s/%d first", len(hits), hits[0].DocID, hits[0].Ordinal, chunks[1].DocID, chunks[1].Ordinal)
	}
	anon := storeFor(t, srv, Config{})
	if _, err := anon.Search(ctx, name, Query{Mode: ModeDense, Vector: chunks[1].Vector, Limit: 3}); err == nil {
		t.Fatal("search without the API key accepted")
	}
}
