package tokenize

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

// metaspace is SentencePiece's word-boundary marker U+2581, which replaces spaces.
const metaspace = '\u2581'

// unigram is the SentencePiece Unigram pipeline of a tokenizer.json (XLM-R style):
// normalisation by literal and regex Replace steps, the Metaspace pre-tokenizer and Viterbi
// segmentation over scored pieces (Kudo 2018, "Subword Regularization", arXiv:1804.10959),
// mirroring HF tokenizers' Unigram model (models/unigram/model.rs, encode_optimized).
type unigram struct {
	ids      map[string]int
	scores   []float64
	unkID    int
	unkScore float64 // lowest piece score minus 10 (HF's kUnkPenalty)
	maxBytes int     // longest piece in bytes
	steps    []normStep
	prepend  bool // Metaspace prepend_scheme "always"
	split    bool // Metaspace split
}

// normStep is one normaliser of the Sequence: a per-code-point map (a run of literal
// one-character Replace normalisers) or a regex Replace.
type normStep struct {
	chars map[rune][]rune
	re    *regexp.Regexp
	with  []rune
}

type unigramFile struct {
	Normalizer   *normalizerJSON `json:"normalizer"`
	PreTokenizer *struct {
		Type          string `json:"type"`
		Replacement   string `json:"replacement"`
		PrependScheme string `json:"prepend_scheme"`
		Split         *bool  `json:"split"`
	} `json:"pre_tokenizer"`
	Model struct {
		UnkID        *int              `json:"unk_id"`
		Vocab        []json.RawMessage `json:"vocab"`
		ByteFallback bool              `json:"byte_fallback"`
	} `json:"model"`
}

type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []*normalizerJSON `json:"normalizers"`
	Pattern     struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content string `json:"content"`
}

// loadUnigram reads the Unigram parts of a tokenizer.json: model (vocab of [piece, score],
// unk_id, no byte fallback), normaliser (absent, Replace, or a Sequence of Replace) and a
// Metaspace pre-tokenizer with replacement U+2581.
func loadUnigram(path string, raw []byte) (*unigram, error) {
	var f unigramFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("tokenizer %s: invalid JSON: %w", path, err)
	}
	if f.Model.ByteFallback {
		return nil, fmt.Errorf("tokenizer %s: Unigram byte_fallback is not supported", path)
	}
	if f.Model.UnkID == nil {
		return nil, fmt.Errorf("tokenizer %s: Unigram model without unk_id is not supported", path)
	}
	u := &unigram{ids: make(map[string]int, len(f.Model.Vocab)), unkID: *f.Model.UnkID}
	minScore := math.Inf(1)
	for i, e := range f.Model.Vocab {
		var pair [2]any
		if err := json.Unmarshal(e, &pair); err != nil {
			return nil, fmt.Errorf("tokenizer %s: vocab entry %d is not [piece, score]: %w", path, i, err)
		}
		piece, ok1 := pair[0].(string)
		score, ok2 := pair[1].(float64)
		if !ok1 || !ok2 || piece == "" {
			return nil, fmt.Errorf("tokenizer %s: vocab entry %d is not [piece, score]", path, i)
		}
		if _, dup := u.ids[piece]; !dup { // HF keeps the first id of a duplicated piece
			u.ids[piece] = i
		}
		u.scores = append(u.scores, score)
		minScore = min(minScore, score)
		u.maxBytes = max(u.maxBytes, len(piece))
	}
	if u.unkID < 0 || u.unkID >= len(u.scores) {
		return nil, fmt.Errorf("tokenizer %s: unk_id %d is outside the vocabulary of %d", path, u.unkID, len(u.scores))
	}
	u.unkScore = minScore - 10
	steps, err := normSteps(f.Normalizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	u.steps = steps
	pt := f.PreTokenizer
	if pt == nil || pt.Type != "Metaspace" || pt.Replacement != string(metaspace) {
		return nil, fmt.Errorf("tokenizer %s: a Unigram model needs a Metaspace pre_tokenizer with replacement U+2581", path)
	}
	switch pt.PrependScheme {
	case "always":
		u.prepend = true
	case "never":
	default:
		return nil, fmt.Errorf("tokenizer %s: Metaspace prepend_scheme %q is not supported (want always or never)", path, pt.PrependScheme)
	}
	u.split = pt.Split == nil || *pt.Split
	return u, nil
}

// normSteps flattens the normaliser into steps; runs of literal one-character Replace
// normalisers become one per-code-point map, which equals applying them in order only when
// no replacement holds a character that the run replaces (else it is an error).
func normSteps(n *normalizerJSON) ([]normStep, error) {
	if n == nil {
		return nil, nil
	}
	var list []*normalizerJSON
	switch n.Type {
	case "Sequence":
		list = n.Normalizers
	case "Replace":
		list = []*normalizerJSON{n}
	default:
		return nil, fmt.Errorf("normalizer %q is not supported with Unigram (want Replace or a Sequence of Replace)", n.Type)
	}
	var steps []normStep
	for _, r := range list {
		if r == nil || r.Type != "Replace" {
			return nil, fmt.Errorf("normalizer Sequence may hold only Replace normalizers")
		}
		switch {
		case r.Pattern.String != nil && utf8.RuneCountInString(*r.Pattern.String) == 1:
			if len(steps) == 0 || steps[len(steps)-1].chars == nil {
				steps = append(steps, normStep{chars: map[rune][]rune{}})
			}
			m := steps[len(steps)-1].chars
			key, _ := utf8.DecodeRuneInString(*r.Pattern.String)
			if _, dup := m[key]; dup {
				return nil, fmt.Errorf("normalizer replaces %U twice", key)
			}
			m[key] = []rune(r.Content)
		case r.Pattern.String != nil:
			re := regexp.MustCompile(regexp.QuoteMeta(*r.Pattern.String))
			steps = append(steps, normStep{re: re, with: []rune(r.Content)})
		case r.Pattern.Regex != nil:
			re, err := regexp.Compile(*r.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("normalizer Replace regex %q: %w", *r.Pattern.Regex, err)
			}
			steps = append(steps, normStep{re: re, with: []rune(r.Content)})
		default:
			return nil, fmt.Errorf("normalizer Replace has no String or Regex pattern")
		}
	}
	for _, s := range steps {
		for k, out := range s.chars {
			for _, r := range out {
				if _, ok := s.chars[r]; ok {
					return nil, fmt.Errorf("normalizer: the replacement of %U holds %U, which is replaced too; order-dependent Replace runs are not supported", k, r)
				}
			}
		}
	}
	return steps, nil
}

// encodeSegment appends the Unigram tokens of text[from:to] to enc.
func (u *unigram) encodeSegment(text string, from, to int, enc *Encoding) {
	if from >= to {
		return
	}
	norm := u.normalize(text, from, to)
	if len(norm) == 0 {
		return
	}
	// Metaspace: spaces become U+2581 (keeping the space's alignment), then U+2581 is
	// prepended; like HF's NormalizedString.prepend it takes the first character's alignment.
	for i := range norm {
		if norm[i].r == ' ' {
			norm[i].r = metaspace
		}
	}
	if u.prepend && norm[0].r != metaspace {
		norm = append([]normRune{{metaspace, norm[0].start, norm[0].end}}, norm...)
	}
	if !u.split {
		u.viterbi(norm, enc)
		return
	}
	start := 0
	for i := 1; i <= len(norm); i++ {
		if i == len(norm) || norm[i].r == metaspace {
			u.viterbi(norm[start:i], enc)
			start = i
		}
	}
}

// normalize applies the normaliser steps to text[from:to], keeping for every character the
// original byte range it came from. Replacement characters take the alignment of the last
// character they replace, as HF's NormalizedString.replace does.
func (u *unigram) normalize(text string, from, to int) []normRune {
	out := make([]normRune, 0, to-from)
	for i := from; i < to; {
		r, size := utf8.DecodeRuneInString(text[i:to])
		out = append(out, normRune{r, i, i + size})
		i += size
	}
	for _, s := range u.steps {
		if s.chars != nil {
			next := out[:0:0]
			for _, nr := range out {
				rep, ok := s.chars[nr.r]
				if !ok {
					next = append(next, nr)
					continue
				}
				for _, r := range rep {
					next = append(next, normRune{r, nr.start, nr.end})
				}
			}
			out = next
			continue
		}
		out = replaceRegex(out, s.re, s.with)
	}
	return out
}

// replaceRegex replaces every match of re in the characters of norm with the characters of
// with, each aligned to the last matched character.
func replaceRegex(norm []normRune, re *regexp.Regexp, with []rune) []normRune {
	var sb strings.Builder
	byteToRune := make([]int, 0, len(norm)+1)
	for i, nr := range norm {
		for range utf8.RuneLen(nr.r) {
			byteToRune = append(byteToRune, i)
		}
		sb.WriteRune(nr.r)
	}
	byteToRune = append(byteToRune, len(norm))
	matches := re.FindAllStringIndex(sb.String(), -1)
	if len(matches) == 0 {
		return norm
	}
	out := make([]normRune, 0, len(norm))
	last := 0
	for _, m := range matches {
		a, b := byteToRune[m[0]], byteToRune[m[1]]
		if a == b { // empty match: nothing replaced
			continue
		}
		out = append(out, norm[last:a]...)
		for _, r := range with {
			out = append(out, normRune{r, norm[b-1].start, norm[b-1].end})
		}
		last = b
	}
	return append(out, norm[last:]...)
}

// viterbi appends the best-scoring segmentation of one pre-tokenised word into pieces.
// A character no piece starts with becomes <unk> (score: lowest piece score - 10), and
// adjacent <unk>s are fused into one token, as in HF tokenizers.
func (u *unigram) viterbi(word []normRune, enc *Encoding) {
	if len(word) == 0 {
		return
	}
	// Bytes of the word and the byte position where each character starts.
	var buf []byte
	starts := make([]int, len(word)+1)
	for i, nr := range word {
		starts[i] = len(buf)
		buf = utf8.AppendRune(buf, nr.r)
	}
	n := len(word)
	starts[n] = len(buf)
	type node struct {
		score float64
		from  int // character index where the best piece ending here starts; -1: unreached
		id    int
	}
	best := make([]node, n+1)
	for i := range best {
		best[i].from = -1
	}
	for i := 0; i < n; i++ {
		if i > 0 && best[i].from < 0 {
			continue
		}
		base := best[i].score
		single := false
		for e := i + 1; e <= n && starts[e]-starts[i] <= u.maxBytes; e++ {
			id, ok := u.ids[string(buf[starts[i]:starts[e]])]
			if !ok {
				continue
			}
			if c := base + u.scores[id]; best[e].from < 0 || c > best[e].score {
				best[e] = node{c, i, id}
			}
			if e == i+1 {
				single = true
			}
		}
		if !single {
			if c := base + u.unkScore; best[i+1].from < 0 || c > best[i+1].score {
				best[i+1] = node{c, i, u.unkID}
			}
		}
	}
	// Backtrack, fusing runs of <unk>.
	type tok struct{ from, to, id int }
	var toks []tok
	for e := n; e > 0; {
		nd := best[e]
		if nd.id == u.unkID && len(toks) > 0 && toks[len(toks)-1].id == u.unkID {
			toks[len(toks)-1].from = nd.from
		} else {
			toks = append(toks, tok{nd.from, e, nd.id})
		}
		e = nd.from
	}
	for k := len(toks) - 1; k >= 0; k-- {
		tk := toks[k]
		enc.IDs = append(enc.IDs, int64(tk.id))
		enc.Offsets = append(enc.Offsets, Offset{word[tk.from].start, word[tk.to-1].end})
	}
}
