package chunkers

import "unsafe"

// runeBlock is the number of bytes one runeIndex entry covers.
const runeBlock = 64

// runeIndex memoises code point counts over one document's text for RuneSizer: the count
// of code points before every runeBlock-th byte, so the size of any span [s, e) is two
// table reads plus at most 2·runeBlock bytes counted at its ends, instead of a count over
// the whole span each time the packer measures a candidate (the memoisation of sizes per
// offset range of benbrandt/text-splitter, here as prefix sums since code points add up).
// It takes len(text)/16 bytes, none for ASCII text (a span's size is then its length).
type runeIndex struct {
	text  string
	cum   []int32 // cum[k]: code points in text[:k*runeBlock]; nil when ascii
	ascii bool    // every byte is a code point: a span's size is its length
}

// newRuneIndex indexes text (valid UTF-8).
func newRuneIndex(text string) *runeIndex {
	if leadBytes(text) == len(text) {
		return &runeIndex{text: text, ascii: true}
	}
	cum := make([]int32, len(text)/runeBlock+1)
	n := 0
	for k := 1; k < len(cum); k++ {
		n += leadBytes(text[(k-1)*runeBlock : k*runeBlock])
		cum[k] = int32(n)
	}
	return &runeIndex{text: text, cum: cum}
}

// leadBytes counts the bytes of s that start a code point: the code points of s when s is
// valid UTF-8, and additive over any split of it into byte ranges. Eight bytes at a time: a
// continuation byte has its top bits 10, so x &^ (x << 1) marks it in bit 7; the marks,
// moved to bit 0, add up per byte lane for up to 255 words before the lanes are summed.
func leadBytes(s string) int {
	cont, i := 0, 0
	for i+8 <= len(s) {
		var acc uint64
		for k := 0; k < 255 && i+8 <= len(s); k, i = k+1, i+8 {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			acc += (x &^ (x << 1) & 0x8080808080808080) >> 7
		}
		acc = acc&0x00FF00FF00FF00FF + acc>>8&0x00FF00FF00FF00FF // four 16-bit lanes
		cont += int((acc * 0x0001000100010001) >> 48)
	}
	n := i - cont
	for ; i < len(s); i++ {
		if s[i]&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// count returns the number of code points in text[s:e].
func (x *runeIndex) count(s, e int) int {
	if x.ascii {
		return e - s
	}
	bs, be := (s+runeBlock-1)/runeBlock, e/runeBlock
	if bs >= be {
		return leadBytes(x.text[s:e])
	}
	return leadBytes(x.text[s:bs*runeBlock]) + int(x.cum[be]-x.cum[bs]) + leadBytes(x.text[be*runeBlock:e])
}

// indexed returns a copy of sp that measures spans of text through a runeIndex when its
// sizer is RuneSizer (sizes are exactly RuneSizer's); sp itself otherwise. The copy serves
// one Chunk call: the splitter stays safe for concurrent use.
func (sp *splitter) indexed(text string) *splitter {
	if _, ok := sp.sizer.(RuneSizer); !ok || len(text) < 4*runeBlock {
		return sp
	}
	cp := *sp
	cp.runes = newRuneIndex(text)
	return &cp
}

// size returns the sizer's size of text[s:e], from the rune index when there is one for
// this text.
func (sp *splitter) size(text string, s, e int) int {
	if x := sp.runes; x != nil && len(x.text) == len(text) && unsafe.StringData(x.text) == unsafe.StringData(text) {
		return x.count(s, e)
	}
	return sp.sizer.Size(text[s:e])
}

// sizePrefixed returns the sizer's size of prefix followed by text[s:e].
func (sp *splitter) sizePrefixed(prefix, text string, s, e int) int {
	if prefix == "" {
		return sp.size(text, s, e)
	}
	if sp.runes != nil {
		return RuneSizer{}.Size(prefix) + sp.size(text, s, e)
	}
	return sp.sizer.Size(prefix + text[s:e])
}
