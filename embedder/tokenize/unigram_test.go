package tokenize

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestUnigramSmall runs the Unigram pipeline on a hand-made tokenizer.json where every
// step shows: NBSP mapped to a space by a literal Replace, a run of spaces collapsed by a
// regex Replace (the space keeps the last one's alignment), Metaspace prepending U+2581 with
// the first character's alignment, Viterbi preferring the higher-scoring whole piece, and
// three unknown characters fused into one <unk> spanning them. The parity tests check the
// same behaviour against HF tokenizers on real text; this one needs no prepared files (HF
// tokenizers 0.22.1 gives these ids and offsets on this file too, checked once by hand).
func TestUnigramSmall(t *testing.T) {
	const file = `{
	"added_tokens": [{"id": 1, "content": "<s>"}, {"id": 2, "content": "</s>"}],
	"normalizer": {"type": "Sequence", "normalizers": [
		{"type": "Replace", "pattern": {"String": "\u00a0"}, "content": " "},
		{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
	"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
	"post_processor": {"type": "TemplateProcessing",
		"single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "</s>"}}],
		"special_tokens": {"<s>": {"ids": [1]}, "</s>": {"ids": [2]}}},
	"model": {"type": "Unigram", "unk_id": 0, "vocab": [
		["<unk>", 0], ["<s>", 0], ["</s>", 0], ["\u2581", -2], ["\u2581ab", -1], ["a", -3], ["b", -3], ["c", -3]]}
}`
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	text := "ab  c\u00a0xyzc</s>"
	enc := tok.Encode(text, true)
	want := []struct {
		id         int64
		start, end int
	}{
		{1, 0, 0},   // <s>
		{4, 0, 2},   // ▁ab: prepended ▁ aligned with "a"
		{3, 3, 4},   // ▁ from the collapsed "  ", aligned with the second space
		{7, 4, 5},   // c
		{3, 5, 7},   // ▁ from NBSP (2 bytes)
		{0, 7, 10},  // x y z fused into one <unk>
		{7, 10, 11}, // c
		{2, 11, 15}, // literal </s> matched as an added token
		{2, 0, 0},   // </s>
	}
	got := fmt.Sprint(enc.IDs, enc.Offsets)
	var ids []int64
	var offs []Offset
	for _, w := range want {
		ids = append(ids, w.id)
		offs = append(offs, Offset{w.start, w.end})
	}
	if exp := fmt.Sprint(ids, offs); got != exp {
		t.Errorf("Encode(%q):\n got  %s\n want %s", text, got, exp)
	}
}
