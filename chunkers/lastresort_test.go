package chunkers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/tokenize"
)

// loadTokenizer loads the tokenizer.json of the model folder named by env; without it the
// test skips, or fails under RAGOPS_REQUIRE_ALL=1 (CI).
func loadTokenizer(t *testing.T, env string) *tokenize.Tokenizer {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("%s is not set: run hack/prepare.d/embedder.sh and export what it prints", env)
		}
		t.Skipf("%s is not set: run hack/prepare.d/embedder.sh and export what it prints", env)
	}
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestLastResortPiecesFill: text with no cut above grapheme clusters (base64 with no
// whitespace, CJK without punctuation) is packed by the joined text's token count, so every
// chunk but the last is near the size, not cut at the sum of its pieces' sizes (one
// character alone measures more than inside a word: before, base64 under Recursive 512 gave
// 512-character chunks of 200-353 tokens and mE5 on CJK 128 gave chunks of about 64).
// Offsets, exact token counts and coverage hold as for every strategy.
func TestLastResortPiecesFill(t *testing.T) {
	readme, err := os.ReadFile("testdata/markdown/goldmark-README.md")
	if err != nil {
		t.Fatal(err)
	}
	cjk, err := os.ReadFile("testdata/cjk/daodejing.txt")
	if err != nil {
		t.Fatal(err)
	}
	// Binary bytes in base64 (here the README gzipped, as an embedded data URI) hold '+' and
	// '/', so the tokenizer's words stay under its 100-character [UNK] limit.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(readme); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b64 := "data:application/gzip;base64," + base64.StdEncoding.EncodeToString(gz.Bytes()[:min(gz.Len(), 6000)])
	cases := []struct {
		name, env, text string
		size, overlap   int
	}{
		{"base64-MiniLM-Recursive512", "RAGOPS_MODEL_DIR", b64, 512, 0},
		{"base64-MiniLM-Recursive128-overlap32", "RAGOPS_MODEL_DIR", b64, 128, 32},
		{"CJK-mE5-Recursive128", "RAGOPS_ME5_SMALL_DIR", strings.TrimSpace(string(cjk)), 128, 0},
		{"CJK-mE5-Recursive64-overlap16", "RAGOPS_ME5_SMALL_DIR", strings.TrimSpace(string(cjk)), 64, 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := loadTokenizer(t, tc.env)
			for _, mk := range []struct {
				name string
				new  func() (chunkers.Chunker, error)
			}{
				{"Recursive", func() (chunkers.Chunker, error) { return chunkers.NewRecursive(tok, tc.size, tc.overlap, nil) }},
				{"Sentence", func() (chunkers.Chunker, error) {
					return chunkers.NewSentence(tok, tc.size, tc.overlap, chunkers.SentenceOptions{})
				}},
			} {
				c, err := mk.new()
				if err != nil {
					t.Fatal(err)
				}
				cs, err := c.Chunk(context.Background(), tc.text)
				if err != nil {
					t.Fatal(err)
				}
				checkExact(t, tok, tc.text, cs, tc.size, tc.overlap == 0)
				if len(cs) < 3 {
					t.Fatalf("%s: %d chunks, want a text that needs several", mk.name, len(cs))
				}
				sum := 0
				for _, ch := range cs[:len(cs)-1] {
					sum += ch.TokenCount
				}
				fill := float64(sum) / float64((len(cs)-1)*tc.size)
				t.Logf("%s: %d chunks, mean fill %.3f of %d tokens (last chunk left out)", mk.name, len(cs), fill, tc.size)
				if fill < 0.9 {
					t.Errorf("%s: chunks before the last hold %.1f%% of %d tokens on average, want >= 90%%", mk.name, 100*fill, tc.size)
				}
			}
		})
	}
}

// checkExact asserts exact offsets on code point boundaries, in order (and without overlap
// when disjoint), TokenCount equal to the tokenizer's count of the chunk's text and at
// most size, and every non-whitespace byte in some chunk.
func checkExact(t *testing.T, tok *tokenize.Tokenizer, text string, cs []chunkers.Chunk, size int, disjoint bool) {
	t.Helper()
	covered := make([]bool, len(text))
	for i, c := range cs {
		if c.Ordinal != i || c.Start < 0 || c.End > len(text) || c.Start >= c.End {
			t.Fatalf("chunk %d: ordinal %d span [%d, %d) of %d bytes", i, c.Ordinal, c.Start, c.End, len(text))
		}
		if !utf8.RuneStart(text[c.Start]) || c.End < len(text) && !utf8.RuneStart(text[c.End]) {
			t.Fatalf("chunk %d [%d, %d) cuts inside a code point", i, c.Start, c.End)
		}
		if i > 0 && (c.Start <= cs[i-1].Start || disjoint && c.Start < cs[i-1].End) {
			t.Fatalf("chunk %d [%d, %d) after [%d, %d)", i, c.Start, c.End, cs[i-1].Start, cs[i-1].End)
		}
		if n := tok.Size(c.Text(text)); n != c.TokenCount || n > size {
			t.Fatalf("chunk %d: TokenCount %d, tokenizer %d, size %d", i, c.TokenCount, n, size)
		}
		for p := c.Start; p < c.End; p++ {
			covered[p] = true
		}
	}
	for p, r := range text {
		if !unicode.IsSpace(r) && !covered[p] {
			t.Fatalf("byte %d (%q) is in no chunk", p, r)
		}
	}
}
