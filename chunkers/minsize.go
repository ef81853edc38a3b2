package chunkers

import (
	"context"
	"fmt"
	"slices"
)

// WithMinSize returns a copy of c that keeps no chunk under minSize units standing alone
// where it can join a neighbour, never dropping text; c itself is unchanged. minSize 0
// returns c.
//
//   - Sentence, Paragraph, Recursive, Heading, Semantic and the single-span chunks of
//     Cluster: a chunk under minSize merges with its previous neighbour, else its next one,
//     when both carry the same heading path and the merged span measures at most the
//     maximum size (measured again by the sizer, prefixes included; merges chain). While
//     packing, a group under minSize is not closed before a segment too large to join it:
//     the segment is cut finer and its pieces join the group, so a heading line or a short
//     lead-in does not stand alone before a long paragraph or code block.
//   - Heading, in addition: a section with nothing under its heading folds into the section
//     after it when that one is a subsection (the heading path keeps both titles), and so
//     does the document's first heading (a title) before any following section; the
//     folded heading lines then pack with the next section's text.
//   - Fixed and SlidingWindow: a document's last window under minSize starts earlier,
//     sharing units with the window before it, so that it holds size units (windows
//     inside it are dropped), as a sliding window flush with the end of the text.
//
// The rule follows the minimum-chunk-size merge of semchunk and LlamaIndex's
// SentenceSplitter tail handling in spirit; the measurements behind it (short tails of
// SciFact abstracts outranking whole abstracts under e5-small-v2) are in docs/results.md.
// Errors: minSize < 0, minSize >= the chunker's size, or a Chunker this package did not
// build.
func WithMinSize(c Chunker, minSize int) (Chunker, error) {
	if minSize == 0 {
		return c, nil
	}
	if minSize < 0 {
		return nil, fmt.Errorf("chunkers: min size must not be negative, got %d", minSize)
	}
	check := func(size int) error {
		if minSize >= size {
			return fmt.Errorf("chunkers: min size (%d) must be less than size (%d)", minSize, size)
		}
		return nil
	}
	switch c := c.(type) {
	case *fixed:
		if err := check(c.size); err != nil {
			return nil, err
		}
		cp := *c
		cp.minSize = minSize
		return &cp, nil
	case *splitChunker:
		if err := check(c.sp.max); err != nil {
			return nil, err
		}
		sp := *c.sp
		sp.minSize = minSize
		return &splitChunker{&sp}, nil
	case *HeadingChunker:
		if err := check(c.sp.max); err != nil {
			return nil, err
		}
		cp := *c
		sp := *c.sp
		sp.minSize = minSize
		cp.sp = &sp
		return &cp, nil
	case *semantic:
		if err := check(c.sp.max); err != nil {
			return nil, err
		}
		return &mergeChunker{c: c, sizer: c.sp.sizer, max: c.sp.max, minSize: minSize}, nil
	case *cluster:
		if err := check(c.sp.max); err != nil {
			return nil, err
		}
		return &mergeChunker{c: c, sizer: c.sp.sizer, max: c.sp.max, minSize: minSize}, nil
	}
	return nil, fmt.Errorf("chunkers: min size is not supported for %T", c)
}

// mergeChunker applies mergeSmall to another chunker's output.
type mergeChunker struct {
	c            Chunker
	sizer        Sizer
	max, minSize int
}

// Chunk implements Chunker.
func (m *mergeChunker) Chunk(ctx context.Context, text string) ([]Chunk, error) {
	cs, err := m.c.Chunk(ctx, text)
	if err != nil {
		return nil, err
	}
	return number(mergeSmall(text, cs, m.sizer, m.max, m.minSize)), nil
}

// mergeSmall merges every single-span chunk under minSize with its previous neighbour,
// else with its next one, when both have the same heading path and the merged chunk
// measures at most max (its EmbedText, as the strategies count it). Merged chunks keep the
// first chunk's Prefix and PathPrefix. Ordinals are left to the caller.
func mergeSmall(text string, chunks []Chunk, sizer Sizer, max, minSize int) []Chunk {
	if minSize <= 0 || len(chunks) < 2 {
		return chunks
	}
	out := chunks[:0:0]
	for _, c := range chunks {
		if k := len(out) - 1; k >= 0 {
			p := out[k]
			if (p.TokenCount < minSize || c.TokenCount < minSize) && len(p.Spans) == 0 && len(c.Spans) == 0 &&
				slices.Equal(p.HeadingPath, c.HeadingPath) && c.End > p.End {
				m := p
				m.End = c.End
				m.Oversize = false
				if m.TokenCount = sizer.Size(m.EmbedText(text)); m.TokenCount <= max {
					out[k] = m
					continue
				}
			}
		}
		out = append(out, c)
	}
	return out
}
