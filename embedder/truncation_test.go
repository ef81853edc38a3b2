package embedder

import (
	"context"
	"strings"
	"testing"

	"github.com/ragops/ragops/chunkers"
)

// TestTruncatedChunksCounted causes truncation: Fixed chunks of 300 and 800 tokens of a
// 6,000-byte text, embedded naively with all-MiniLM-L6-v2 (512 positions, 510 for the text).
// Stats.TruncatedChunks must grow by exactly the number of chunks whose recount (plus the
// document prefix) exceeds 510, sentence windows and queries must not move it, and late
// mode must cut none.
func TestTruncatedChunksCounted(t *testing.T) {
	m := load(t, Options{})
	var b strings.Builder
	for b.Len() < 6000 {
		b.WriteString("Late chunking pools token states inside each chunk's span; naive embedding cuts a chunk at the model's positions. ")
	}
	text := b.String()
	limit := m.Config().MaxPositions - 2 - m.tok.Size(m.Config().DocumentPrefix)
	ctx := context.Background()
	for _, size := range []int{300, 800} {
		c, err := chunkers.NewFixed(m.Tokenizer(), size, 0)
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := c.Chunk(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		for _, ch := range chunks {
			if m.Tokenizer().Size(ch.Text(text)) > limit {
				want++
			}
		}
		if size == 800 && want == 0 {
			t.Fatalf("no 800-token chunk exceeds %d tokens: the test causes no truncation", limit)
		}
		before := m.Stats()
		if _, err := m.EmbedChunks(ctx, text, chunks, Naive); err != nil {
			t.Fatal(err)
		}
		after := m.Stats()
		if got := after.TruncatedChunks - before.TruncatedChunks; got != want {
			t.Errorf("size %d: TruncatedChunks grew by %d, want %d of %d chunks", size, got, want, len(chunks))
		}
		if after.Truncated-before.Truncated != want {
			t.Errorf("size %d: Truncated grew by %d, want %d", size, after.Truncated-before.Truncated, want)
		}
		if _, err := m.EmbedChunks(ctx, text, chunks, Late); err != nil {
			t.Fatal(err)
		}
		if got := m.Stats().TruncatedChunks - after.TruncatedChunks; got != 0 {
			t.Errorf("size %d: late mode counted %d truncated chunks, want 0", size, got)
		}
	}
	before := m.Stats()
	if _, err := m.EmbedSentences(ctx, []string{text}); err != nil {
		t.Fatal(err)
	}
	if after := m.Stats(); after.TruncatedChunks != before.TruncatedChunks || after.Truncated != before.Truncated+1 {
		t.Errorf("a cut sentence window: Truncated %d->%d (want +1), TruncatedChunks %d->%d (want unchanged)",
			before.Truncated, after.Truncated, before.TruncatedChunks, after.TruncatedChunks)
	}
}

// TestDocumentTokensEqualsTheTokensEncoded: for documents with cut (800-token) chunks, short
// ones and one without chunks, DocumentTokens must give exactly what EmbedDocuments adds to
// Stats.Tokens, in naive mode and in late mode with several overlapping windows per document.
func TestDocumentTokensEqualsTheTokensEncoded(t *testing.T) {
	m := load(t, Options{WindowTokens: 256, WindowOverlap: 64})
	ctx := context.Background()
	var b strings.Builder
	for b.Len() < 6000 {
		b.WriteString("Beslispunt 3: de raad stemt in met het bestemmingsplan; the late vector of each chunk pools its own span. ")
	}
	var docs []Document
	for i, text := range []string{b.String(), "Motivering. Een korte tekst.", "Stemverhouding: 21 voor, 8 tegen.", b.String()[:1500]} {
		c, err := chunkers.NewFixed(m.Tokenizer(), []int{800, 64, 300, 128}[i], 0)
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := c.Chunk(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, Document{Text: text, Chunks: chunks})
	}
	docs = append(docs, Document{Text: "no chunks: not encoded"})
	counts := map[Mode]int64{}
	for _, mode := range []Mode{Naive, Late} {
		want := m.DocumentTokens(docs, mode)
		before := m.Stats().Tokens
		if _, err := m.EmbedDocuments(ctx, docs, mode); err != nil {
			t.Fatal(err)
		}
		if got := m.Stats().Tokens - before; got != want || got == 0 {
			t.Errorf("%s: EmbedDocuments encoded %d tokens, DocumentTokens says %d", mode, got, want)
		}
		counts[mode] = want
	}
	if counts[Naive] == counts[Late] {
		t.Errorf("naive and late encode the same %d tokens: the windows' overlap is not counted", counts[Naive])
	}
}
