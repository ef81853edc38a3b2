package chunkers

import "sort"

// seg is one segment handed to the packer: a contiguous byte range [s, e) of the text.
type seg struct {
	s, e int
	// prefix is the context a chunk starting with this segment carries (table header rows).
	prefix string
	// atomic segments are never split further (a Markdown table row).
	atomic bool
	// fine segments come from a last-resort cutter (grapheme clusters, code points): pieces
	// of a word whose sizes do not add up (a tokenizer measures "▁abc" as less than "▁a",
	// "▁b" and "▁c"), so packing grows their group by the joined text's size (grow).
	fine bool
}

// item is a segment being packed: its size estimate n (untrimmed, without prefix), the size
// of its prefix pn, and whether it repeats an already emitted segment (overlap).
type item struct {
	seg
	n, pn  int
	repeat bool
}

// splitter cuts text with a hierarchy of cutters (coarsest first) and packs neighbouring
// segments greedily up to max units, in the manner of LangChain's
// RecursiveCharacterTextSplitter, but on byte offsets: nothing is copied or dropped, and
// every chunk is measured with the sizer itself, so sizes are exact for any sizer.
type splitter struct {
	sizer   Sizer
	max     int
	overlap int // units shared by neighbouring chunks (estimated from segment sizes)
	// overlapSegs repeats this many trailing level-0 segments (sentences) instead.
	overlapSegs int
	levels      []cutter
	// minSize > 0 keeps a group under it open before a segment too large to join it: the
	// segment is cut finer and its pieces join the group (WithMinSize).
	minSize int
	// runes memoises RuneSizer's sizes over the text of one Chunk call (indexed).
	runes *runeIndex
}

// split appends the chunks of [s, e), cut from level lvl downwards.
func (sp *splitter) split(text string, s, e, lvl int, out []Chunk) []Chunk {
	ts, te := trimSpan(text, s, e)
	if ts == te {
		return out
	}
	return sp.splitSized(text, ts, te, sp.size(text, ts, te), lvl, out)
}

// splitSized is split of a trimmed span [ts, te) whose size the caller has measured.
func (sp *splitter) splitSized(text string, ts, te, size, lvl int, out []Chunk) []Chunk {
	if size <= sp.max {
		return append(out, Chunk{Start: ts, End: te, TokenCount: size})
	}
	if segs, l := sp.cutFiner(text, ts, te, lvl); len(segs) > 0 {
		return sp.pack(text, segs, l, out)
	}
	// One code point measuring more than max: the unit that cannot be split.
	return append(out, Chunk{Start: ts, End: te, TokenCount: size, Oversize: true})
}

// cutFiner cuts [ts, te) with the first cutter from level lvl on that finds a cut and
// returns the pieces and that level; nil when no cutter cuts (one code point).
func (sp *splitter) cutFiner(text string, ts, te, lvl int) ([]seg, int) {
	var cuts []int
	for ; lvl < len(sp.levels); lvl++ {
		cuts = sp.levels[lvl](text, ts, te, cuts[:0])
		if len(cuts) == 0 {
			continue
		}
		segs := make([]seg, 0, len(cuts)+1)
		fine := lvl >= len(sp.levels)-2 // every hierarchy ends with graphemes, code points
		prev := ts
		for _, c := range cuts {
			segs = append(segs, seg{s: prev, e: c, fine: fine})
			prev = c
		}
		return append(segs, seg{s: prev, e: te, fine: fine}), lvl
	}
	return nil, lvl
}

// pack merges neighbouring segments of level lvl into chunks of at most max units; a
// non-atomic segment above max is split from level lvl+1 on, an atomic one is emitted alone
// and flagged Oversize.
func (sp *splitter) pack(text string, segs []seg, lvl int, out []Chunk) []Chunk {
	group := make([]item, 0, min(len(segs), 16))
	gs := 0 // groupSize(group), kept as the group changes instead of summed for each segment
	for k := 0; k < len(segs); k++ {
		g := segs[k]
		n := sp.size(text, g.s, g.e)
		if n > sp.max {
			ts, te := trimSpan(text, g.s, g.e)
			if ts == te {
				continue
			}
			g.s, g.e = ts, te
			n = sp.size(text, ts, te)
			if n > sp.max && !g.atomic {
				if sp.minSize > 0 && len(group) > 0 && gs < sp.minSize {
					// Keep the small group open: its pieces join it.
					if sub, _ := sp.cutFiner(text, ts, te, lvl+1); len(sub) > 1 {
						segs = append(sub, segs[k+1:]...)
						k = -1
						continue
					}
				}
				out, group = sp.closeAll(text, group, out)
				gs = 0
				out = sp.splitSized(text, ts, te, n, lvl+1, out)
				continue
			}
		}
		it := item{seg: g, n: n}
		if g.prefix != "" {
			it.pn = sp.sizer.Size(g.prefix)
		}
		if len(group) > 0 && gs+it.n > sp.max {
			// At the limit: the segment's trailing whitespace will be trimmed off the
			// chunk, so measure it without.
			if _, te := trimSpan(text, g.s, g.e); te < g.e {
				it.n = sp.size(text, g.s, te)
			}
		}
		if g.fine && len(group) > 0 && gs+it.n > sp.max && !sp.additive() {
			// Sizes of word pieces overestimate their joined size: grow the group while
			// the joined text fits and close it at once.
			if j, n := sp.grow(text, group, segs, k); j > k {
				out, group = sp.emitGrown(text, group, segs, k, j, n, out)
				gs = groupSize(group)
				k = j - 1
				continue
			}
		}
		for len(group) > 0 && gs+it.n > sp.max {
			if group[0].repeat {
				group = group[1:]
				gs = groupSize(group)
				continue
			}
			tail := sp.tail(group, lvl)
			var rest []item
			out, rest = sp.close(text, group, out)
			if len(rest) > 0 {
				group = rest
			} else {
				group = tail
			}
			gs = groupSize(group)
		}
		if len(group) == 0 {
			gs = it.pn
		}
		group = append(group, it)
		gs += it.n
	}
	out, _ = sp.closeAll(text, group, out)
	return out
}

// chunksCap is a capacity for the chunk list of text that seldom needs to grow: with the
// rune index, twice the chunks of size max that the text fills (chunks are mostly over half
// full), else one chunk per 4·max bytes (about 4 bytes per token).
func (sp *splitter) chunksCap(text string) int {
	if sp.runes != nil {
		return 2*sp.runes.count(0, len(text))/sp.max + 1
	}
	return len(text)/(4*sp.max) + 1
}

// additive reports whether the sizer's sizes of neighbouring segments add up to the size of
// their joined text (RuneSizer), so packing by summed sizes is exact.
func (sp *splitter) additive() bool {
	if sp.runes != nil {
		return true
	}
	_, ok := sp.sizer.(RuneSizer)
	return ok
}

// grow returns the largest j > k such that group followed by segs[k:j] measures at most max
// as one chunk (its trimmed, prefixed joined text), and that size; j == k when segs[k] does
// not fit. Only the run of fine segments from k is considered. The joined size is not
// monotone in j for every tokenizer, so this is the end found by galloping (from the end
// projected by the units per byte so far) and then binary search over candidate ends, each
// measured once (benbrandt/text-splitter's binary search over semantic levels with memoised
// sizes): O(log n) measures of the joined text instead of one per piece.
func (sp *splitter) grow(text string, group []item, segs []seg, k int) (int, int) {
	start, prefix := group[0].s, group[0].prefix
	hi := k
	for hi < len(segs) && segs[hi].fine && !segs[hi].atomic && segs[hi].prefix == "" {
		hi++
	}
	sizes := map[int]int{} // candidate end index -> joined size, each measured once
	fits := func(j int) bool {
		n, ok := sizes[j]
		if !ok {
			s, e := trimSpan(text, start, segs[j-1].e)
			n = sp.sizePrefixed(prefix, text, s, e)
			sizes[j] = n
		}
		return n <= sp.max
	}
	if hi == k || !fits(k+1) {
		return k, 0
	}
	// Gallop: project the end where the joined size reaches max from the bytes per unit so
	// far, at least doubling the step after each fit, until a candidate does not fit.
	lo, bad, step := k+1, hi+1, 1 // fits(lo); bad: the first end known not to fit
	for lo < hi && bad > hi {
		want := start + (segs[lo-1].e-start)*sp.max/max(sizes[lo], 1)
		j := lo + sort.Search(hi-lo, func(i int) bool { return segs[lo+i].e >= want }) + 1
		j = min(max(j, lo+step), hi)
		if fits(j) {
			lo, step = j, 2*step
		} else {
			bad = j
		}
	}
	for lo+1 < bad && lo < hi {
		m := (lo + bad) / 2
		if fits(m) {
			lo = m
		} else {
			bad = m
		}
	}
	return lo, sizes[lo]
}

// emitGrown emits group followed by segs[k:j] as one chunk of measured size n (grow) and
// returns the group the next chunk starts with: empty, or with overlap > 0 the shortest
// suffix of segs[k+1:j] (never the whole chunk) whose joined size is at most overlap, as
// repeats.
func (sp *splitter) emitGrown(text string, group []item, segs []seg, k, j, n int, out []Chunk) ([]Chunk, []item) {
	s, e := trimSpan(text, group[0].s, segs[j-1].e)
	if s < e {
		out = append(out, Chunk{Start: s, End: e, TokenCount: n, Prefix: group[0].prefix})
	}
	group = group[:0]
	if sp.overlap <= 0 {
		return out, group
	}
	size := func(i int) int {
		ts, te := trimSpan(text, segs[i].s, segs[j-1].e)
		return sp.size(text, ts, te)
	}
	// The smallest i in (k, j) whose suffix fits the overlap: binary search, the suffix's
	// size shrinking as i grows.
	lo, hi := k+1, j
	for lo < hi {
		m := (lo + hi) / 2
		if size(m) <= sp.overlap {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo >= j {
		return out, group
	}
	group = append(group, item{seg: segs[lo], n: size(lo), repeat: true})
	for i := lo + 1; i < j; i++ {
		group = append(group, item{seg: segs[i], repeat: true})
	}
	return out, group
}

// groupSize estimates the size of a group's chunk: its segments' sizes plus the first
// segment's prefix.
func groupSize(group []item) int {
	if len(group) == 0 {
		return 0
	}
	n := group[0].pn
	for _, it := range group {
		n += it.n
	}
	return n
}

// closeAll emits every segment of group.
func (sp *splitter) closeAll(text string, group []item, out []Chunk) ([]Chunk, []item) {
	for len(group) > 0 {
		out, group = sp.close(text, group, out)
	}
	return out, group[:0]
}

// close emits group as one chunk measured by the sizer. When the sizer measures the joined
// text above max (tokens that merge across a cut), it emits the longest leading part that
// fits and returns the segments not yet emitted. At least one segment is always consumed.
func (sp *splitter) close(text string, group []item, out []Chunk) ([]Chunk, []item) {
	for k := len(group); k > 0; k-- {
		s, e := trimSpan(text, group[0].s, group[k-1].e)
		if s == e {
			return out, group[k:]
		}
		prefix := group[0].prefix
		n := sp.sizePrefixed(prefix, text, s, e)
		if n <= sp.max || k == 1 {
			return append(out, Chunk{Start: s, End: e, TokenCount: n, Prefix: prefix, Oversize: n > sp.max}), group[k:]
		}
	}
	return out, nil
}

// tail returns copies, marked as repeats, of the trailing segments of a group that the next
// chunk repeats as overlap; never the whole group, so packing always advances.
func (sp *splitter) tail(group []item, lvl int) []item {
	t := 0
	if lvl == 0 && sp.overlapSegs > 0 {
		t = min(sp.overlapSegs, len(group)-1)
	} else if sp.overlap > 0 {
		sum := 0
		for i := len(group) - 1; i > 0; i-- {
			if sum+group[i].n > sp.overlap {
				break
			}
			sum += group[i].n
			t++
		}
	}
	if t <= 0 {
		return nil
	}
	kept := make([]item, t)
	copy(kept, group[len(group)-t:])
	for i := range kept {
		kept[i].repeat = true
	}
	return kept
}
