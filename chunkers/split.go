package chunkers

import (
	"context"
	"fmt"
)

// splitChunker runs a splitter over the whole text.
type splitChunker struct{ sp *splitter }

// Chunk implements Chunker.
func (c *splitChunker) Chunk(ctx context.Context, text string) ([]Chunk, error) {
	if err := checkUTF8(text); err != nil {
		return nil, err
	}
	sp := c.sp.indexed(text)
	out := sp.split(text, 0, len(text), 0, make([]Chunk, 0, sp.chunksCap(text)))
	return number(mergeSmall(text, out, c.sp.sizer, c.sp.max, c.sp.minSize)), nil
}

// fallback is the tail of every hierarchy: words, grapheme clusters, code points.
var fallback = []cutter{cutWords, cutGraphemes, cutCodePoints}

// SentenceOptions configure NewSentence.
type SentenceOptions struct {
	// Languages whose abbreviation lists guard full stops (en, nl, de, fr); nil means
	// DefaultLanguages.
	Languages []string
	// OverlapSentences repeats this many trailing sentences of a chunk at the start of the
	// next one (when they fit). It replaces the unit overlap.
	OverlapSentences int
}

// NewSentence returns a chunker that packs whole sentences (SentenceSegmenter) into chunks
// of at most size units of sizer, with overlap units (or opts.OverlapSentences sentences)
// repeated between neighbours (chonkie's SentenceChunker, LlamaIndex's SentenceSplitter).
// A sentence longer than size is split at words, then grapheme clusters.
func NewSentence(sizer Sizer, size, overlap int, opts SentenceOptions) (Chunker, error) {
	if err := validateSize(sizer, size, overlap); err != nil {
		return nil, err
	}
	if opts.OverlapSentences < 0 {
		return nil, fmt.Errorf("chunkers: overlap sentences must not be negative, got %d", opts.OverlapSentences)
	}
	g, err := NewSentenceSegmenter(opts.Languages)
	if err != nil {
		return nil, err
	}
	levels := append([]cutter{g.cut}, fallback...)
	return &splitChunker{&splitter{sizer: sizer, max: size, overlap: overlap, overlapSegs: opts.OverlapSentences, levels: levels}}, nil
}

// NewParagraph returns a chunker that packs paragraphs (blocks separated by a blank line)
// into chunks of at most size units, overlap units shared by neighbours; a paragraph longer
// than size is split at sentences, then words, then grapheme clusters.
func NewParagraph(sizer Sizer, size, overlap int) (Chunker, error) {
	if err := validateSize(sizer, size, overlap); err != nil {
		return nil, err
	}
	g, _ := NewSentenceSegmenter(nil)
	levels := append([]cutter{cutParagraphs, g.cut}, fallback...)
	return &splitChunker{&splitter{sizer: sizer, max: size, overlap: overlap, levels: levels}}, nil
}

// NewRecursive returns a chunker that splits by a hierarchy of separators until pieces fit
// size units and packs neighbouring pieces up to size with about overlap units shared
// (LangChain's RecursiveCharacterTextSplitter, chonkie's RecursiveChunker). The default
// hierarchy is blank line, newline, sentence end (SentenceSegmenter with DefaultLanguages),
// whitespace; separators replaces it with literal strings tried in order, each kept at the
// end of the piece before it. Grapheme clusters and then code points always follow, so no
// cut falls inside a code point. An empty separator is an error.
func NewRecursive(sizer Sizer, size, overlap int, separators []string) (Chunker, error) {
	if err := validateSize(sizer, size, overlap); err != nil {
		return nil, err
	}
	levels, err := recursiveLevels(separators)
	if err != nil {
		return nil, err
	}
	return &splitChunker{&splitter{sizer: sizer, max: size, overlap: overlap, levels: levels}}, nil
}

// recursiveLevels builds the cutter hierarchy for NewRecursive.
func recursiveLevels(separators []string) ([]cutter, error) {
	if len(separators) == 0 {
		g, _ := NewSentenceSegmenter(nil)
		return append([]cutter{cutParagraphs, cutLines, g.cut}, fallback...), nil
	}
	levels := make([]cutter, 0, len(separators)+2)
	for i, s := range separators {
		if s == "" {
			return nil, fmt.Errorf("chunkers: recursive separator %d is empty (grapheme clusters always come last)", i)
		}
		levels = append(levels, cutLiteral(s))
	}
	return append(levels, cutGraphemes, cutCodePoints), nil
}
