package chunkers

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// abbreviations lists, per ISO 639-1 language, lower-cased abbreviations (with their final
// dot) after which a full stop does not end a sentence even when a capital follows.
// Multi-letter dotted forms (o.a., e.g., d.w.z., m.b.t., i.v.m., e.d.) and single-letter
// initials (J.) are recognised by shape in every language and need not be listed. Dutch
// legal citations ("art. 3:40 lid 2 jo. art. 6:12 BW", "nr. 2") are guarded by art., jo.
// and nr.; "lid" is a word, not an abbreviation, so "het eerste lid." ends a sentence.
var abbreviations = map[string][]string{
	"en": {"mr.", "mrs.", "ms.", "dr.", "prof.", "sr.", "jr.", "st.", "vs.", "no.", "nos.", "fig.",
		"figs.", "eq.", "eqs.", "ref.", "refs.", "vol.", "al.", "approx.", "dept.", "est.", "inc.",
		"ltd.", "co.", "corp.", "gen.", "gov.", "sen.", "rep.", "rev.", "capt.", "col.", "lt.",
		"sgt.", "mt.", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.",
		"oct.", "nov.", "dec.", "p.", "pp.", "ch.", "sec.", "art.", "para.", "cf.", "ca.", "viz."},
	"nl": {"bijv.", "art.", "nr.", "nrs.", "dhr.", "mevr.", "mr.", "dr.", "drs.", "ir.", "ing.",
		"prof.", "blz.", "bldz.", "ca.", "evt.", "resp.", "zgn.", "ong.", "incl.", "excl.", "jl.",
		"jo.", "j°.", "vlg.", "mln.", "mld.", "mrd.", "bijz.", "hfdst.", "par.", "afd.", "wo.", "pag.", "vgl.", "max.", "min.", "st.", "stb.",
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

// cut is the segmenter as a cutter. UAX #29 puts a sentence boundary only at the end of a
// run of terminators (STerm, ATerm), closing punctuation and spaces, or after a paragraph
// separator, so cut scans for those code points and asks uniseg only about a small window
// around each: one code point before the terminator up to the first letter or line break
// after it (what rules SB6-SB11 look at). cutUniseg, which segments everything with uniseg,
// is the reference the tests compare it with.
func (g *SentenceSegmenter) cut(text string, s, e int, cuts []int) []int {
	last := s
	for i := s; i < e; {
		c := text[i]
		w := 1
		if c < utf8.RuneSelf {
			if !asciiTerm[c] {
				i++
				for i < e && !asciiStop[text[i]] {
					i++
				}
				continue
			}
			if c == '.' && i+1 < e && ('a' <= text[i+1] && text[i+1] <= 'z' || '0' <= text[i+1] && text[i+1] <= '9') {
				// A full stop before a lower-case letter (SB8) or a digit (SB6) is no
				// boundary: "e.g", "3.14", "example.com".
				i++
				continue
			}
		} else {
			var r rune
			r, w = utf8.DecodeRuneInString(text[i:e])
			if !breaker(r) {
				i += w
				continue
			}
		}
		if c == '\n' || c == '\r' {
			// SB4: a boundary always follows a paragraph separator (SB3: CR LF is one).
			b := i + 1
			if c == '\r' && b < e && text[b] == '\n' {
				b++
			}
			if b < e && !g.continues(text[last:b]) {
				cuts = append(cuts, b)
				last = b
			}
			i = b
			continue
		}
		if b := spaceUpper(text, i, e); b > 0 {
			// The common case, settled without uniseg: a terminator, spaces and an ASCII
			// capital letter. SB11 breaks before the capital: SB6 and SB7 need the letter
			// or digit right after the terminator, SB8 a lower-case letter and SB8a a
			// continuation or terminator after the spaces.
			if !g.continues(text[last:b]) {
				cuts = append(cuts, b)
				last = b
			}
			i = b
			continue
		}
		p0 := i
		if p0 > s {
			_, pw := utf8.DecodeLastRuneInString(text[s:p0])
			p0 -= pw
		}
		p1 := lookahead(text, i+w, e)
		b := -1
		rest, state, pos := text[p0:p1], -1, p0
		for len(rest) > 0 {
			var sent string
			sent, rest, state = uniseg.FirstSentenceInString(rest, state)
			pos += len(sent)
			if pos > i && len(rest) > 0 {
				b = pos
				break
			}
		}
		if b < 0 || b >= e {
			i += w
			continue
		}
		if !g.continues(text[last:b]) {
			cuts = append(cuts, b)
			last = b
		}
		i = b
	}
	return cuts
}

// spaceUpper returns the position of the ASCII capital letter that follows the ASCII
// terminator text[i] ('.', '!' or '?') after one or more spaces, when it is before e; 0
// otherwise.
func spaceUpper(text string, i, e int) int {
	if c := text[i]; c != '.' && c != '!' && c != '?' {
		return 0
	}
	j := i + 1
	for j < e && text[j] == ' ' {
		j++
	}
	if j == i+1 || j >= e || text[j] < 'A' || text[j] > 'Z' {
		return 0
	}
	return j
}

// lookahead returns the end of the window the boundary rules need after a terminator that
// ends before p: past the first letter or line break (and one more code point), or e when
// that is more than 256 bytes away.
func lookahead(text string, p, e int) int {
	for q := p; q < e && q-p < 256; {
		c := text[q]
		if c < utf8.RuneSelf {
			q++
			if c == '\n' || c == '\r' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
				return nextRune(text, q, e)
			}
			continue
		}
		r, w := utf8.DecodeRuneInString(text[q:e])
		q += w
		if unicode.IsLetter(r) || breaker(r) {
			return nextRune(text, q, e)
		}
	}
	return e
}

// nextRune returns the position after the code point at q (or e).
func nextRune(text string, q, e int) int {
	if q >= e {
		return e
	}
	_, w := utf8.DecodeRuneInString(text[q:e])
	return q + w
}

// asciiTerm marks the ASCII sentence terminators and paragraph separators of UAX #29.
var asciiTerm = [256]bool{'.': true, '!': true, '?': true, '\n': true, '\r': true}

// asciiStop marks the bytes the cutter stops at: asciiTerm and every non-ASCII byte.
var asciiStop = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= utf8.RuneSelf || asciiTerm[c]
	}
	return t
}()

var (
	bmpBreakers     [1 << 16]bool
	bmpBreakersOnce sync.Once
	astralBreakers  sync.Map // rune -> bool
)

// breaker reports whether a sentence boundary can follow r: whether r is an STerm, ATerm or
// Sep code point. uniseg keeps its property tables private, so each code point is probed
// once: a boundary follows it before " A" exactly when it is one of those.
func breaker(r rune) bool {
	if r < 1<<16 {
		bmpBreakersOnce.Do(func() {
			for c := rune(0); c < 1<<16; c++ {
				if c >= 0xD800 && c < 0xE000 {
					continue
				}
				bmpBreakers[c] = probeBreaker(c)
			}
		})
		return bmpBreakers[r]
	}
	if v, ok := astralBreakers.Load(r); ok {
		return v.(bool)
	}
	v := probeBreaker(r)
	astralBreakers.Store(r, v)
	return v
}

func probeBreaker(r rune) bool {
	s := "a" + string(r) + " A"
	first, _, _ := uniseg.FirstSentenceInString(s, -1)
	return len(first) < len(s)
}

// cutUniseg is the reference segmentation: uniseg over the whole range, abbreviations
// merged.
func (g *SentenceSegmenter) cutUniseg(text string, s, e int, cuts []int) []int {
	rest, state, pos, last := text[s:e], -1, s, s
	for len(rest) > 0 {
		var sent string
		sent, rest, state = uniseg.FirstSentenceInString(rest, state)
		pos += len(sent)
		if pos >= e {
			break
		}
		if g.continues(text[last:pos]) {
			continue
		}
		cuts = append(cuts, pos)
		last = pos
	}
	return cuts
}

// lastWordStart returns where the last word of s starts: after its last space, tab,
// newline, opening bracket or quote (" ' ( [ “ ‘), or 0.
func lastWordStart(s string) int {
	for j := len(s) - 1; j >= 0; j-- {
		switch c := s[j]; c {
		case ' ', '\t', '\n', '(', '"', '\'', '[':
			return j + 1
		case 0xE2: // “ (E2 80 9C) and ‘ (E2 80 98)
			if j+2 < len(s) && s[j+1] == 0x80 && (s[j+2] == 0x9C || s[j+2] == 0x98) {
				return j + 3
			}
		}
	}
	return 0
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
	word := sent[lastWordStart(sent[:end]):end]
	if len(word) < 2 {
		return false
	}
	if len(word) <= 16 {
		// Lower-cased into a buffer: the map lookup of string(buf) does not allocate.
		var buf [16]byte
		ascii := true
		for k := 0; k < len(word); k++ {
			c := word[k]
			if c >= utf8.RuneSelf {
				ascii = false
				break
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[k] = c
		}
		if ascii && g.abbrev[string(buf[:len(word)])] {
			return true
		}
		if !ascii && g.abbrev[strings.ToLower(word)] {
			return true
		}
	} else if g.abbrev[strings.ToLower(word)] {
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
