// Package tokenize turns text into the token ids a BERT-family ONNX model takes, with
// byte offsets into the original text, identical to Hugging Face tokenizers (the Rust
// library behind `tokenizers` and transformers' fast tokenizers) for two kinds of
// tokenizer.json:
//
//   - BERT: a BertNormalizer, a BertPreTokenizer and a WordPiece model (all-MiniLM-L6-v2,
//     bge-small-en-v1.5, e5-small-v2). The WordPiece vocabulary and its greedy
//     longest-match-first segmentation come from github.com/sugarme/tokenizer. That library's
//     own normaliser differs from HF on non-ASCII text (no accent stripping, NBSP not treated
//     as whitespace, rune offsets where HF reports bytes), so this package does the
//     BertNormalizer steps itself (clean text, CJK spacing, NFD + removal of nonspacing marks,
//     lowercasing).
//   - SentencePiece Unigram (XLM-R models such as multilingual-e5-small, unigram.go):
//     Replace normalisers (a per-code-point map and regex replacements), the Metaspace
//     pre-tokenizer (spaces to U+2581, prepended U+2581, split before each U+2581) and Viterbi
//     segmentation over scored pieces with fused unknowns, as HF's Unigram model does.
//
// Either way every normalised character keeps the byte range of the original character it
// came from, and token offsets are mapped back through that alignment exactly as HF's
// NormalizedString does.
//
// The parity tests (tokenize_test.go) compare ids and byte offsets with HF tokenizers on
// real strings written by hack/export-model/export.sh (RAGOPS_MODEL_DIR) and
// hack/export-model/models.sh (RAGOPS_BGE_SMALL_DIR, RAGOPS_E5_SMALL_DIR,
// RAGOPS_E5_SMALL_INT8_DIR, RAGOPS_ME5_SMALL_DIR).
package tokenize

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sugarme/tokenizer/model"
	"github.com/sugarme/tokenizer/model/wordpiece"
	"golang.org/x/text/unicode/norm"
)

// Offset is a half-open byte range [Start, End) into the original text. Special tokens
// added by the post-processor have Start == End == 0, as in HF tokenizers.
type Offset struct {
	Start, End int
}

// Encoding is the tokenization of one text: parallel slices of token ids and offsets.
type Encoding struct {
	IDs     []int64
	Offsets []Offset
}

// Tokenizer is a WordPiece or Unigram tokenizer loaded from a Hugging Face tokenizer.json.
// It is safe for concurrent use.
type Tokenizer struct {
	wp           wordpiece.WordPiece
	vocab        map[string]int
	unkID        int
	prefix       string
	maxChars     int
	cleanText    bool
	chineseChars bool
	stripAccents bool
	lowercase    bool
	clsID, sepID int64
	added        []addedToken // matched on the raw text, longest first
	uni          *unigram     // the Unigram pipeline; nil for WordPiece
}

type addedToken struct {
	content string
	id      int64
}

// commonFile is the part of a tokenizer.json that every model type shares.
type commonFile struct {
	AddedTokens []struct {
		ID         int64  `json:"id"`
		Content    string `json:"content"`
		Normalized bool   `json:"normalized"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		SingleWord bool   `json:"single_word"`
	} `json:"added_tokens"`
	PostProcessor *struct {
		Type          string `json:"type"`
		Cls           []any  `json:"cls"`
		Sep           []any  `json:"sep"`
		SpecialTokens map[string]struct {
			IDs []int64 `json:"ids"`
		} `json:"special_tokens"`
		Single []map[string]struct {
			ID string `json:"id"`
		} `json:"single"`
	} `json:"post_processor"`
	Model struct {
		Type string `json:"type"`
	} `json:"model"`
}

// wordPieceFile is the BERT pipeline of a tokenizer.json.
type wordPieceFile struct {
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          bool   `json:"clean_text"`
		HandleChineseChars bool   `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          bool   `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		UnkToken                string         `json:"unk_token"`
		ContinuingSubwordPrefix string         `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int            `json:"max_input_chars_per_word"`
		Vocab                   map[string]int `json:"vocab"`
	} `json:"model"`
}

// Load reads a Hugging Face tokenizer.json. It accepts two pipelines: BERT
// (BertNormalizer, BertPreTokenizer, WordPiece) and SentencePiece Unigram (Replace
// normalisers, Metaspace, Unigram; XLM-R models), each with a TemplateProcessing or
// BertProcessing post-processor that wraps a single sequence in one special token on each
// side ([CLS] ... [SEP], <s> ... </s>). Anything else is an error naming the part.
// Truncation and padding settings in the file are ignored: callers window and pad.
func Load(path string) (*Tokenizer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var c commonFile
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("tokenizer %s: invalid JSON: %w", path, err)
	}
	t := &Tokenizer{}
	switch c.Model.Type {
	case "WordPiece":
		err = t.loadWordPiece(path, raw)
	case "Unigram":
		t.uni, err = loadUnigram(path, raw)
	default:
		err = fmt.Errorf("tokenizer %s: model type %q is not supported (want WordPiece or Unigram)", path, c.Model.Type)
	}
	if err != nil {
		return nil, err
	}

	pp := c.PostProcessor
	if pp == nil {
		return nil, fmt.Errorf("tokenizer %s: no post_processor; want [CLS] ... [SEP] wrapping", path)
	}
	switch pp.Type {
	case "TemplateProcessing":
		if len(pp.Single) != 3 {
			return nil, fmt.Errorf("tokenizer %s: TemplateProcessing single template has %d pieces, want [CLS] $A [SEP]", path, len(pp.Single))
		}
		first, okF := pp.Single[0]["SpecialToken"]
		last, okL := pp.Single[2]["SpecialToken"]
		if !okF || !okL {
			return nil, fmt.Errorf("tokenizer %s: TemplateProcessing single template is not SpecialToken $A SpecialToken", path)
		}
		cls, sep := pp.SpecialTokens[first.ID], pp.SpecialTokens[last.ID]
		if len(cls.IDs) != 1 || len(sep.IDs) != 1 {
			return nil, fmt.Errorf("tokenizer %s: special tokens %q/%q need exactly one id each", path, first.ID, last.ID)
		}
		t.clsID, t.sepID = cls.IDs[0], sep.IDs[0]
	case "BertProcessing":
		if len(pp.Cls) != 2 || len(pp.Sep) != 2 {
			return nil, fmt.Errorf("tokenizer %s: BertProcessing needs cls and sep as [token, id]", path)
		}
		cf, _ := pp.Cls[1].(float64)
		sf, _ := pp.Sep[1].(float64)
		t.clsID, t.sepID = int64(cf), int64(sf)
	default:
		return nil, fmt.Errorf("tokenizer %s: post_processor %q is not supported", path, pp.Type)
	}
	for _, a := range c.AddedTokens {
		if a.Normalized || a.Lstrip || a.Rstrip || a.SingleWord {
			return nil, fmt.Errorf("tokenizer %s: added token %q uses normalized/lstrip/rstrip/single_word, which is not supported", path, a.Content)
		}
		if a.Content != "" {
			t.added = append(t.added, addedToken{a.Content, a.ID})
		}
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	return t, nil
}

// loadWordPiece reads the BERT pipeline (BertNormalizer, BertPreTokenizer, WordPiece).
func (t *Tokenizer) loadWordPiece(path string, raw []byte) error {
	var c wordPieceFile
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("tokenizer %s: invalid JSON: %w", path, err)
	}
	if c.Normalizer == nil || c.Normalizer.Type != "BertNormalizer" {
		return fmt.Errorf("tokenizer %s: normalizer must be BertNormalizer", path)
	}
	if c.PreTokenizer == nil || c.PreTokenizer.Type != "BertPreTokenizer" {
		return fmt.Errorf("tokenizer %s: pre_tokenizer must be BertPreTokenizer", path)
	}
	if len(c.Model.Vocab) == 0 {
		return fmt.Errorf("tokenizer %s: empty WordPiece vocabulary", path)
	}
	t.vocab = c.Model.Vocab
	t.prefix = c.Model.ContinuingSubwordPrefix
	t.maxChars = c.Model.MaxInputCharsPerWord
	t.cleanText = c.Normalizer.CleanText
	t.chineseChars = c.Normalizer.HandleChineseChars
	t.lowercase = c.Normalizer.Lowercase
	// HF: strip_accents unset follows lowercase.
	t.stripAccents = c.Normalizer.Lowercase
	if c.Normalizer.StripAccents != nil {
		t.stripAccents = *c.Normalizer.StripAccents
	}
	if t.prefix == "" {
		t.prefix = "##"
	}
	if t.maxChars == 0 {
		t.maxChars = 100
	}
	unk, ok := c.Model.Vocab[c.Model.UnkToken]
	if !ok {
		return fmt.Errorf("tokenizer %s: unk_token %q is not in the vocabulary", path, c.Model.UnkToken)
	}
	t.unkID = unk
	vocab := model.Vocab(c.Model.Vocab)
	t.wp = wordpiece.NewWordPieceBuilder().Vocab(&vocab).UnkToken(c.Model.UnkToken).
		ContinuingSubwordPrefix(t.prefix).MaxInputCharsPerWord(t.maxChars).Build()
	return nil
}

// CLS returns the id the post-processor puts first ([CLS] for BERT).
func (t *Tokenizer) CLS() int64 { return t.clsID }

// SEP returns the id the post-processor puts last ([SEP] for BERT).
func (t *Tokenizer) SEP() int64 { return t.sepID }

// EncodePrefix returns the ids of prefix (a query or document prefix from ragops.json) such
// that EncodePrefix(prefix) followed by Encode(text, false).IDs equals the ids of
// prefix+text encoded at once, as sentence-transformers feeds the model. For WordPiece that
// is Encode(prefix); a Metaspace (Unigram) tokenizer would turn the prefix's trailing space
// into a lone "▁" token while the text's first word brings its own, so trailing whitespace
// is dropped first. The one difference left: an empty text after a prefix that ends in a
// space has one "▁" fewer than the joint encoding.
func (t *Tokenizer) EncodePrefix(prefix string) []int64 {
	if t.uni != nil {
		prefix = strings.TrimRight(prefix, " ")
	}
	return t.Encode(prefix, false).IDs
}

// Size returns the number of tokens of text without special tokens. It implements
// chunkers.Sizer, so token-based chunk sizes are exact in this model's tokens.
func (t *Tokenizer) Size(text string) int {
	return len(t.Encode(text, false).IDs)
}

// Encode tokenizes text. With addSpecial the result is wrapped as [CLS] ... [SEP] with
// offsets [0,0] for both, as HF's encode(text) does; offsets of the other tokens are byte
// offsets into text.
func (t *Tokenizer) Encode(text string, addSpecial bool) Encoding {
	var enc Encoding
	if addSpecial {
		enc.IDs = append(enc.IDs, t.clsID)
		enc.Offsets = append(enc.Offsets, Offset{})
	}
	pos := 0
	for pos < len(text) {
		at, tok := t.nextAdded(text, pos)
		t.encodeSegment(text, pos, at, &enc)
		if tok == nil {
			break
		}
		enc.IDs = append(enc.IDs, tok.id)
		enc.Offsets = append(enc.Offsets, Offset{at, at + len(tok.content)})
		pos = at + len(tok.content)
	}
	if addSpecial {
		enc.IDs = append(enc.IDs, t.sepID)
		enc.Offsets = append(enc.Offsets, Offset{})
	}
	return enc
}

// nextAdded finds the leftmost (then longest) added token at or after pos; it returns
// len(text) and nil when there is none.
func (t *Tokenizer) nextAdded(text string, pos int) (int, *addedToken) {
	best, bestAt := -1, len(text)
	for i := range t.added {
		if j := strings.Index(text[pos:], t.added[i].content); j >= 0 && pos+j < bestAt {
			best, bestAt = i, pos+j
		}
	}
	if best < 0 {
		return len(text), nil
	}
	return bestAt, &t.added[best]
}

// normRune is one character of the normalised text and the original byte range it came from.
type normRune struct {
	r          rune
	start, end int
}

// encodeSegment appends the tokens of text[from:to] to enc: for Unigram through
// unigram.encodeSegment; for WordPiece it normalises, splits into words and punctuation (the
// BertPreTokenizer) and appends the WordPiece tokens of each word.
func (t *Tokenizer) encodeSegment(text string, from, to int, enc *Encoding) {
	if t.uni != nil {
		t.uni.encodeSegment(text, from, to, enc)
		return
	}
	if from >= to {
		return
	}
	norm := t.normalize(text, from, to)
	for i := 0; i < len(norm); {
		r := norm[i].r
		if unicode.IsSpace(r) {
			i++
			continue
		}
		if isBertPunct(r) {
			t.wordPiece(norm[i:i+1], enc)
			i++
			continue
		}
		j := i + 1
		for j < len(norm) && !unicode.IsSpace(norm[j].r) && !isBertPunct(norm[j].r) {
			j++
		}
		t.wordPiece(norm[i:j], enc)
		i = j
	}
}

// wordPiece appends the WordPiece tokens of one pre-tokenised word.
func (t *Tokenizer) wordPiece(word []normRune, enc *Encoding) {
	if len(word) > t.maxChars {
		enc.IDs = append(enc.IDs, int64(t.unkID))
		enc.Offsets = append(enc.Offsets, Offset{word[0].start, word[len(word)-1].end})
		return
	}
	var sb strings.Builder
	for _, nr := range word {
		sb.WriteRune(nr.r)
	}
	s := sb.String()
	if id, ok := t.vocab[s]; ok { // whole word in the vocabulary: the common case
		enc.IDs = append(enc.IDs, int64(id))
		enc.Offsets = append(enc.Offsets, Offset{word[0].start, word[len(word)-1].end})
		return
	}
	toks, err := t.wp.Tokenize(s)
	if err != nil || len(toks) == 0 { // unreachable: the unk token was checked at Load
		enc.IDs = append(enc.IDs, int64(t.unkID))
		enc.Offsets = append(enc.Offsets, Offset{word[0].start, word[len(word)-1].end})
		return
	}
	for _, tk := range toks {
		// sugarme reports rune offsets within the word; map them through the alignment.
		a, b := tk.Offsets[0], tk.Offsets[1]
		enc.IDs = append(enc.IDs, int64(tk.Id))
		enc.Offsets = append(enc.Offsets, Offset{word[a].start, word[b-1].end})
	}
}

// normalize applies HF's BertNormalizer to text[from:to]: clean text (drop NUL, U+FFFD and
// control/format/unassigned characters; whitespace to ' '), spaces around CJK ideographs,
// NFD with nonspacing marks removed (strip accents), lowercase.
func (t *Tokenizer) normalize(text string, from, to int) []normRune {
	out := make([]normRune, 0, to-from)
	var buf [64]byte
	for i := from; i < to; {
		r, size := utf8.DecodeRuneInString(text[i:to])
		start, end := i, i+size
		i = end
		if r < utf8.RuneSelf { // ASCII fast path
			if t.cleanText {
				if r == 0 || (isControl(r)) {
					continue
				}
				if r == '\t' || r == '\n' || r == '\r' {
					r = ' '
				}
			}
			if t.lowercase && 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			out = append(out, normRune{r, start, end})
			continue
		}
		if t.cleanText {
			if r == 0xFFFD || isControl(r) {
				continue
			}
			if unicode.IsSpace(r) {
				out = append(out, normRune{' ', start, end})
				continue
			}
		}
		if t.chineseChars && isChinese(r) {
			out = append(out, normRune{' ', start, end}, normRune{r, start, end}, normRune{' ', start, end})
			continue
		}
		if t.stripAccents {
			for _, d := range string(norm.NFD.AppendString(buf[:0], text[start:end])) {
				if unicode.Is(unicode.Mn, d) {
					continue
				}
				out = t.appendLower(out, d, start, end)
			}
			continue
		}
		out = t.appendLower(out, r, start, end)
	}
	return out
}

func (t *Tokenizer) appendLower(out []normRune, r rune, start, end int) []normRune {
	if !t.lowercase {
		return append(out, normRune{r, start, end})
	}
	if r == 'İ' { // Rust's char::to_lowercase gives two characters here
		return append(out, normRune{'i', start, end}, normRune{'\u0307', start, end})
	}
	return append(out, normRune{unicode.ToLower(r), start, end})
}

// isControl is HF's bert is_control: general category C (Cc, Cf, Cs, Co, Cn) except tab,
// newline and carriage return.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isChinese is HF's bert is_chinese_char: the CJK Unified Ideographs blocks.
func isChinese(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3400 && r <= 0x4DBF, r >= 0x20000 && r <= 0x2A6DF,
		r >= 0x2A700 && r <= 0x2B73F, r >= 0x2B740 && r <= 0x2B81F, r >= 0x2B920 && r <= 0x2CEAF,
		r >= 0xF900 && r <= 0xFAFF, r >= 0x2F800 && r <= 0x2FA1F:
		return true
	}
	return false
}

// isBertPunct is HF's BertPreTokenizer punctuation test: ASCII punctuation or Unicode P*.
func isBertPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r)
	}
	return unicode.Is(unicode.P, r)
}
