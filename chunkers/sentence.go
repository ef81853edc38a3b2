package chunkers

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// abbreviations lists, per ISO 639-1 language, lower-cased abbreviations (with their final
// dot) after which a full stop does not end a sentence even when a capital follows.
// Multi-letter dotted forms (o.a., e.g., d.w.z.) and single-letter initials (J.) are
// recognised by shape in every language and need not be listed.
var abbreviations = map[string][]string{
	"en": {"mr.", "mrs.", "ms.", "dr.", "prof.", "sr.", "jr.", "st.", "vs.", "no.", "nos.", "fig.",
		"figs.", "eq.", "eqs.", "ref.", "refs.", "vol.", "al.", "approx.", "dept.", "est.", "inc.",
		"ltd.", "co.", "corp.", "gen.", "gov.", "sen.", "rep.", "rev.", "capt.", "col.", "lt.",
		"sgt.", "mt.", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.",
		"oct.", "nov.", "dec.", "p.", "pp.", "ch.", "sec.", "art.", "para.", "cf.", "ca.", "viz."},
	"nl": {"bijv.", "art.", "nr.", "nrs.", "dhr.", "mevr.", "mr.", "dr.", "drs.", "ir.", "ing.",
		"prof.", "blz.", "bldz.", "ca.", "evt.", "resp.", "zgn.", "ong.", "incl.", "excl.", "jl.",
		"lid.", "hfdst.", "par.", "afd.", "wo.", "pag.", "vgl.", "max.", "min.", "st.", "stb.",
		"stcrt.", "kamerstukken.", "jan.", "feb.", "mrt.", "apr.", "jun.", "jul.", "aug.", "sep.",
		"sept.", "okt.", "nov.", "dec.", "gem.", "tel.", "etc.", "enz.", "bv.", "nl.", "bijl.", "o.", "t.", "m."},
	"de": {"nr.", "dr.", "prof.", "hr.", "fr.", "bzw.", "ca.", "vgl.", "usw.", "abs.", "art.",
		"abschn.", "bd.", "jh.", "jhd.", "str.", "tel.", "ggf.", "evtl.", "inkl.", "zzgl.", "s.",
		"jan.", "feb.", "mär.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "okt.", "nov.", "dez."},
	"fr": {"m.", "mm.", "mme.", "mmes.", "mlle.", "dr.", "pr.", "prof.", "art.", "no.", "n°.",
		"p.", "cf.", "env.", "etc.", "av.", "bd.", "st.", "ste.", "vol.", "chap.", "éd.", "janv.",
		"févr.", "avr.", "juil.", "sept.", "oct.", "nov.", "déc."},
}

// DefaultLanguages are the abbreviation lists used when none are named.
var DefaultLanguages = []string{"en", "nl"}

// SentenceSegmenter finds sentence boundaries: Unicode UAX #29 sentence boundaries
// (github.com/rivo/uniseg, which knows decimals, lower-case continuations and the CJK
// terminators 。！？) with a full stop after a known abbreviation, an initial or a dotted
// abbreviation (o.a., e.g.) not taken as a sentence end.
type SentenceSegmenter struct {
	abbrev map[string]bool
}

// NewSentenceSegmenter returns a segmenter guarding the abbreviations of the given
// languages (ISO 639-1: en, nl, de, fr); nil or empty means DefaultLanguages. An unknown
// language is an error.
func NewSentenceSegmenter(languages []string) (*SentenceSegmenter, error) {
	if len(languages) == 0 {
		languages = DefaultLanguages
	}
	seg := &SentenceSegmenter{abbrev: map[string]bool{}}
	for _, l := range languages {
		list, ok := abbreviations[strings.ToLower(l)]
		if !ok {
			return nil, fmt.Errorf("chunkers: sentence language %q has no abbreviation list (known: en, nl, de, fr)", l)
		}
		for _, a := range list {
			seg.abbrev[a] = true
		}
	}
	return seg, nil
}

// Sentences returns the byte spans of the sentences of text, contiguous and covering it
// (each sentence keeps its trailing whitespace). text must be valid UTF-8.
func (g *SentenceSegmenter) Sentences(text string) []Span {
	cuts := g.cut(text, 0, len(text), nil)
	out := make([]Span, 0, len(cuts)+1)
	prev := 0
	for _, c := range cuts {
		out = append(out, Span{prev, c})
		prev = c
	}
	if prev < len(text) {
		out = append(out, Span{prev, len(text)})
	}
	return out
}

// cut is the segmenter as a cutter.
func (g *SentenceSegmenter) cut(text string, s, e int, cuts []int) []int {
	rest, state, pos := text[s:e], -1, s
	for len(rest) > 0 {
		var sent string
		sent, rest, state = uniseg.FirstSentenceInString(rest, state)
		pos += len(sent)
		if pos >= e {
			break
		}
		if g.continues(sent) {
			continue
		}
		cuts = append(cuts, pos)
	}
	return cuts
}

// continues reports whether the UAX #29 sentence sent ends in a full stop that belongs to
// an abbreviation, so the sentence goes on.
func (g *SentenceSegmenter) continues(sent string) bool {
	end := len(sent)
	for end > 0 {
		c := sent[end-1]
		if c == '\n' || c == '\r' {
			return false // a line or paragraph break ends the sentence whatever precedes it
		}
		if c != ' ' && c != '\t' {
			break
		}
		end--
	}
	if end == 0 || sent[end-1] != '.' {
		return false
	}
	start := strings.LastIndexAny(sent[:end], " \t\n(\"'[“‘")
	word := sent[start+1 : end]
	if start >= 0 && sent[start] >= utf8.RuneSelf {
		// LastIndexAny matched the first byte of a multi-byte quote; skip the whole rune.
		_, w := utf8.DecodeRuneInString(sent[start:])
		word = sent[start+w : end]
	}
	if len(word) < 2 {
		return false
	}
	if g.abbrev[strings.ToLower(word)] {
		return true
	}
	// Dotted abbreviations (o.a., e.g., d.w.z., U.S.) and initials (J.): letters each
	// followed by a dot.
	letters := 0
	for i := 0; i < len(word); {
		r, w := utf8.DecodeRuneInString(word[i:])
		if !unicode.IsLetter(r) || i+w >= len(word) || word[i+w] != '.' {
			return false
		}
		letters++
		i += w + 1
		if letters == 1 && len(word) == i && !unicode.IsUpper(r) {
			return false // a lone lower-case letter and a dot ends sentences ("type a.")
		}
	}
	return true
}
