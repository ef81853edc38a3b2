// Package registry builds a chunker from a ChunkingStrategy spec
// (github.com/ragops/ragops/api/v1alpha1), so the controller (validation) and the embedder
// (chunking) share one mapping. It lives apart from package chunkers to keep that package
// free of Kubernetes dependencies.
package registry

import (
	"fmt"
	"strconv"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
)

// DefaultSize is the CRD's default spec.size: 500 tokens fit the default model
// all-MiniLM-L6-v2 (512 positions, 510 for text) with room for a short document prefix.
const DefaultSize = 500

// New returns the chunker that spec describes. tokens measures the Tokens unit (the
// embedding model's tokenizer; for Fixed and SlidingWindow it must be a chunkers.SpanSizer);
// Characters always uses chunkers.RuneSizer. emb embeds sentences for Semantic and Cluster
// and may be nil otherwise. Defaults follow the CRD: unit Tokens, size DefaultSize, Markdown headings
// on, percentile threshold 95, buffer of 1 sentence, contiguous clusters, no minimum size
// (spec.minSize 0; chunkers.WithMinSize otherwise). spec.Late is not
// the chunker's concern: the embedder reads it from the spec. Errors name the spec field.
func New(spec v1alpha1.ChunkingStrategySpec, tokens chunkers.Sizer, emb chunkers.SentenceEmbedder) (chunkers.Chunker, error) {
	var sizer chunkers.Sizer
	switch spec.Unit {
	case v1alpha1.UnitCharacters:
		sizer = chunkers.RuneSizer{}
	case v1alpha1.UnitTokens, "":
		if tokens == nil {
			return nil, fmt.Errorf("registry: spec.unit is Tokens but no tokenizer sizer was given")
		}
		sizer = tokens
	default:
		return nil, fmt.Errorf("registry: spec.unit %q is not Tokens or Characters", spec.Unit)
	}
	size, overlap := int(spec.Size), int(spec.Overlap)
	if size == 0 {
		size = DefaultSize
	}
	var so chunkers.SentenceOptions
	if spec.Sentence != nil {
		so = chunkers.SentenceOptions{Languages: spec.Sentence.Languages, OverlapSentences: int(spec.Sentence.OverlapSentences)}
	}
	var c chunkers.Chunker
	var err error
	switch spec.Type {
	case v1alpha1.StrategyFixed:
		c, err = chunkers.NewFixed(sizer, size, overlap)
	case v1alpha1.StrategySlidingWindow:
		if spec.SlidingWindow == nil {
			return nil, fmt.Errorf("registry: spec.slidingWindow is required when type is SlidingWindow")
		}
		c, err = chunkers.NewSlidingWindow(sizer, size, int(spec.SlidingWindow.Stride))
	case v1alpha1.StrategySentence:
		c, err = chunkers.NewSentence(sizer, size, overlap, so)
	case v1alpha1.StrategyParagraph:
		c, err = chunkers.NewParagraph(sizer, size, overlap)
	case v1alpha1.StrategyRecursive:
		var seps []string
		if spec.Recursive != nil {
			seps = spec.Recursive.Separators
		}
		c, err = chunkers.NewRecursive(sizer, size, overlap, seps)
	case v1alpha1.StrategyHeading:
		opts := chunkers.HeadingOptions{Markdown: true}
		if h := spec.Heading; h != nil {
			if h.Markdown != nil {
				opts.Markdown = *h.Markdown
			}
			opts.NumberedSections = h.NumberedSections
			opts.PathPrefix = h.PathPrefix
			for _, p := range h.Patterns {
				lv := int(p.Level)
				if lv == 0 {
					lv = 1
				}
				opts.Patterns = append(opts.Patterns, chunkers.HeadingPattern{Pattern: p.Pattern, Level: lv})
			}
		}
		c, err = chunkers.NewHeading(sizer, size, overlap, opts)
	case v1alpha1.StrategySemantic:
		opts := chunkers.SemanticOptions{Threshold: chunkers.ThresholdPercentile, Amount: 95, BufferSentences: 1, Sentence: so}
		if s := spec.Semantic; s != nil {
			if s.ThresholdType != "" {
				opts.Threshold = chunkers.ThresholdType(s.ThresholdType)
			}
			if s.ThresholdAmount != "" {
				a, perr := strconv.ParseFloat(s.ThresholdAmount, 64)
				if perr != nil {
					return nil, fmt.Errorf("registry: spec.semantic.thresholdAmount %q is not a decimal number", s.ThresholdAmount)
				}
				opts.Amount = a
			}
			opts.BufferSentences = int(s.BufferSentences)
		}
		c, err = chunkers.NewSemantic(sizer, size, emb, opts)
	case v1alpha1.StrategyCluster:
		opts := chunkers.ClusterOptions{Mode: chunkers.ClusterContiguous, Sentence: so}
		if cl := spec.Cluster; cl != nil {
			if cl.Mode != "" {
				opts.Mode = chunkers.ClusterMode(cl.Mode)
			}
			if cl.Clusters != nil {
				opts.Clusters = int(*cl.Clusters)
			}
		}
		c, err = chunkers.NewCluster(sizer, size, emb, opts)
	default:
		return nil, fmt.Errorf("registry: spec.type %q is not a known strategy (Fixed, SlidingWindow, Sentence, Paragraph, Recursive, Heading, Semantic, Cluster)", spec.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("registry: spec.type %s: %w", spec.Type, err)
	}
	if c, err = chunkers.WithMinSize(c, int(spec.MinSize)); err != nil {
		return nil, fmt.Errorf("registry: spec.minSize: %w", err)
	}
	return c, nil
}
