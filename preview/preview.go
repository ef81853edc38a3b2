// Package preview shows what a ChunkingStrategy does to local files before anything is
// built: `ragops chunk -f strategy.yaml [--model DIR] FILE...`.
//
// It reads each file with the readers a build uses (reader/formats; BEIR corpus.jsonl
// files through reader/beir), checks the strategy manifest as the cluster would (package
// internal/admission with the CRD embedded from config/crd/bases, then the controller's
// validation), builds the chunker with chunkers/registry and chunks each document with
// chunkers/docchunk.Chunk, exactly as `ragops embed` does. Per chunk it reports the byte
// span into the extracted text, the page span, the size in the strategy's unit, the
// model's token count (with a model folder), the heading path, the first and last words and,
// for late chunking with a model, the macro windows the chunk's vector is pooled from
// (embedder.PlanLate). The output is a table with a summary, JSON lines (one chunk per line),
// or two strategies' boundaries side by side.
//
// Without a model folder a strategy in Tokens is sized in words (chunkers.WordSizer), which
// the output says; Semantic and Cluster strategies need the model (and ONNX Runtime) to
// embed sentences.
package preview

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/embedder/tokenize"
	"github.com/ragops/ragops/internal/plan"
)

// Units a Result's Size is counted in.
const (
	UnitTokens     = "tokens"
	UnitCharacters = "characters"
	UnitWords      = "words"
)

// EdgeWords is how many words Chunk.FirstWords and Chunk.LastWords hold.
const EdgeWords = 5

// Model is a model folder's tokenizer and configuration; the ONNX model itself is loaded
// only for strategies that embed sentences (Semantic, Cluster).
type Model struct {
	// Dir is the model folder.
	Dir string
	// Config is its ragops.json.
	Config embedder.Config
	// Tokenizer is its tokenizer.json.
	Tokenizer *tokenize.Tokenizer

	libraryPath string
	loaded      *embedder.Model
	limits      registry.ModelLimits
}

// LoadModel reads dir's ragops.json and tokenizer.json. libraryPath is the ONNX Runtime
// library for strategies that embed ("" means $RAGOPS_ONNXRUNTIME_LIB).
func LoadModel(dir, libraryPath string) (*Model, error) {
	cfg, err := embedder.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	return &Model{Dir: dir, Config: cfg, Tokenizer: tok, libraryPath: libraryPath,
		limits: registry.NewModelLimits(cfg.Name, cfg.MaxPositions, cfg.DocumentPrefix, tok)}, nil
}

// Close releases the ONNX Runtime session if one was started.
func (m *Model) Close() error {
	if m == nil || m.loaded == nil {
		return nil
	}
	return m.loaded.Close()
}

// Limits returns the model's figures that bound a strategy's sizes, built as a build builds
// them from the same folder (registry.NewModelLimits: ragops.json positions, [CLS] and
// [SEP], the document prefix's tokens).
func (m *Model) Limits() registry.ModelLimits { return m.limits }

// sentenceEmbedder loads the ONNX model on first use.
func (m *Model) sentenceEmbedder() (chunkers.SentenceEmbedder, error) {
	if m.loaded == nil {
		l, err := embedder.Load(m.Dir, embedder.Options{LibraryPath: m.libraryPath})
		if err != nil {
			return nil, err
		}
		m.loaded = l
	}
	return m.loaded, nil
}

// Chunker is a strategy's chunker with the unit it sizes in.
type Chunker struct {
	Strategy Strategy
	// Unit is what Chunk.Size counts: UnitTokens (the model's), UnitCharacters, or
	// UnitWords (a Tokens strategy without a model).
	Unit    string
	chunker chunkers.Chunker
	model   *Model
}

// NewChunker builds s's chunker as a build does (chunkers/registry) with model's tokenizer
// for the Tokens unit; model may be nil (see the package doc). With a model it first
// refuses what a build with that model refuses (registry.CheckModelLimits: a Tokens size
// above the model's room for text, a late window above its positions): the error names the
// field and both numbers, e.g. "ModelLimitExceeded: spec.size 510 tokens needs 515
// positions, over model e5-small-v2's limit of 512 positions (...)".
func NewChunker(s Strategy, model *Model) (*Chunker, error) {
	if model != nil {
		if err := registry.CheckModelLimits(s.Spec, model.Limits()); err != nil {
			return nil, fmt.Errorf("strategy %s: a build with model %s would be refused (Index Stalled): %w", s.Name, model.Config.Name,
				&plan.Failure{Reason: plan.FailureModelLimitExceeded, Err: err})
		}
	}
	var sizer chunkers.Sizer
	unit := UnitCharacters
	if s.Spec.Unit != ragopsv1alpha1.UnitCharacters {
		unit = UnitTokens
		if model != nil {
			sizer = model.Tokenizer
		} else {
			unit, sizer = UnitWords, chunkers.WordSizer{}
		}
	}
	var emb chunkers.SentenceEmbedder
	if s.Spec.Type == ragopsv1alpha1.StrategySemantic || s.Spec.Type == ragopsv1alpha1.StrategyCluster {
		if model == nil {
			return nil, fmt.Errorf("strategy %s: type %s embeds sentences: give the model folder (--model)", s.Name, s.Spec.Type)
		}
		var err error
		if emb, err = model.sentenceEmbedder(); err != nil {
			return nil, fmt.Errorf("strategy %s: %w", s.Name, err)
		}
	}
	c, err := registry.New(s.Spec, sizer, emb)
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", s.Name, err)
	}
	return &Chunker{Strategy: s, Unit: unit, chunker: c, model: model}, nil
}

// Chunk is one chunk of a previewed document.
type Chunk struct {
	// Ordinal is the chunk's 0-based position.
	Ordinal int `json:"ordinal"`
	// Start and End are byte offsets into the document's extracted text; for a k-means
	// cluster chunk they cover its first to its last span.
	Start int `json:"start"`
	End   int `json:"end"`
	// Spans are a multi-span chunk's byte spans; empty otherwise.
	Spans []chunkers.Span `json:"spans,omitempty"`
	// PageStart and PageEnd are the first and last 1-based pages the span overlaps; 0 for
	// documents without pages.
	PageStart int `json:"pageStart,omitempty"`
	PageEnd   int `json:"pageEnd,omitempty"`
	// Size is the chunk's size in the Result's Unit, as the chunker measured it.
	Size int `json:"size"`
	// Tokens is the number of model tokens the chunk is embedded with (special tokens and
	// the model's document prefix excluded), counted by the model's tokenizer: of
	// PathPrefix followed by Text, or of Text with late chunking (which pools the
	// document's own tokens); nil without a model.
	Tokens *int `json:"tokens,omitempty"`
	// HeadingPath is the section titles above the chunk, outermost first, as a build stores
	// them.
	HeadingPath []string `json:"headingPath,omitempty"`
	// Oversize marks a chunk above the strategy's size because it holds one unit that may
	// not be split.
	Oversize bool `json:"oversize,omitempty"`
	// Truncated marks a chunk whose document prefix plus tokens exceed the model's
	// positions (less [CLS] and [SEP]): naive embedding sees only its first part.
	Truncated bool `json:"truncated,omitempty"`
	// Empty marks a chunk with no text but white space.
	Empty bool `json:"empty,omitempty"`
	// FirstWords and LastWords are the first and last EdgeWords words of Text.
	FirstWords string `json:"firstWords"`
	LastWords  string `json:"lastWords"`
	// Windows are the indexes of the late chunking macro windows (Result.Windows) the
	// chunk's vector pools token states from; empty without late chunking or a model.
	Windows []int `json:"windows,omitempty"`
	// Text is what a build embeds and stores for the chunk (chunkers.Chunk.Text): the span's
	// text, after a repeated table header (Prefix) when there is one.
	Text string `json:"text"`
	// Prefix is the repeated table header in front of a continued table's rows.
	Prefix string `json:"prefix,omitempty"`
	// PathPrefix is the heading path line embedded in front of Text (a Heading strategy
	// with heading.pathPrefix, naive embedding); it is not stored with the chunk. Size and
	// Tokens count it.
	PathPrefix string `json:"pathPrefix,omitempty"`
}

// Summary sums up a Result's chunks.
type Summary struct {
	// Chunks is the number of chunks.
	Chunks int `json:"chunks"`
	// Unit is what Mean, Min and Max count: UnitTokens with a model (Chunk.Tokens), else the
	// Result's unit (Chunk.Size).
	Unit string `json:"unit"`
	// Mean, Min and Max of the chunks' sizes in Unit.
	Mean float64 `json:"mean"`
	Min  int     `json:"min"`
	Max  int     `json:"max"`
	// Oversize, Truncated and Empty count the chunks so marked.
	Oversize  int `json:"oversize"`
	Truncated int `json:"truncated"`
	Empty     int `json:"empty"`
}

// Result is one strategy applied to one document.
type Result struct {
	Document Document
	Strategy Strategy
	// Unit is what Chunk.Size counts.
	Unit   string
	Chunks []Chunk
	// Windows are the late chunking macro windows (with a model and a late strategy).
	Windows []embedder.LateWindow
	// ModelPositions is the model's position limit; 0 without a model.
	ModelPositions int
	// Headings is the number of headings the strategy cuts the document at
	// (docchunk.Headings): for Heading, the reader's outline with the strategy's line
	// headings, or the headings it detects in a text without an outline; for the other
	// strategies the reader's outline.
	Headings int
	Summary  Summary
}

// Chunk cuts d with docchunk.Chunk, as a build does, and measures the chunks.
func (c *Chunker) Chunk(ctx context.Context, d Document) (Result, error) {
	chunks, err := docchunk.Chunk(ctx, c.chunker, d.Doc)
	if err != nil {
		return Result{}, fmt.Errorf("%s: chunking with %s: %w", d.Name(), c.Strategy.Name, err)
	}
	res := Result{Document: d, Strategy: c.Strategy, Unit: c.Unit, Chunks: make([]Chunk, len(chunks)),
		Headings: len(docchunk.Headings(c.chunker, d.Doc))}
	text := d.Doc.Text
	if c.model != nil {
		res.ModelPositions = c.model.Config.MaxPositions
	}
	for i, ch := range chunks {
		body := ch.Text(text)
		out := Chunk{
			Ordinal: ch.Ordinal, Start: ch.Start, End: ch.End, Spans: ch.Spans, Size: ch.TokenCount,
			HeadingPath: ch.HeadingPath, Oversize: ch.Oversize, Text: body, Prefix: ch.Prefix,
			Empty: strings.TrimSpace(body) == "",
		}
		embedded := body
		if !c.Strategy.late() {
			out.PathPrefix = ch.PathPrefix
			embedded = ch.EmbedText(text)
		}
		out.FirstWords, out.LastWords = edgeWords(body, EdgeWords)
		if first, last, ok := d.Doc.PageRange(ch.Start, ch.End); ok {
			out.PageStart, out.PageEnd = first, last
		}
		if c.model != nil {
			n := c.model.Tokenizer.Size(embedded)
			out.Tokens = &n
			out.Truncated = !c.Strategy.late() && n > c.model.limits.TextTokens()
		}
		res.Chunks[i] = out
	}
	if c.Strategy.late() && c.model != nil && len(chunks) > 0 {
		o := embedder.Options{WindowTokens: int(c.Strategy.Spec.Late.Window), WindowOverlap: int(c.Strategy.Spec.Late.WindowOverlap)}
		plan, err := embedder.PlanLate(c.model.Tokenizer, c.model.Config, o, text, chunks)
		if err != nil {
			return Result{}, fmt.Errorf("%s: late chunking with %s: %w", d.Name(), c.Strategy.Name, err)
		}
		res.Windows = plan.Windows
		for i := range res.Chunks {
			res.Chunks[i].Windows = plan.ChunkWindows[i]
		}
	}
	res.Summary = summarize(res)
	return res, nil
}

func summarize(r Result) Summary {
	s := Summary{Chunks: len(r.Chunks), Unit: r.Unit}
	if r.ModelPositions > 0 {
		s.Unit = UnitTokens
	}
	total := 0
	for i, c := range r.Chunks {
		n := c.Size
		if c.Tokens != nil {
			n = *c.Tokens
		}
		total += n
		if i == 0 || n < s.Min {
			s.Min = n
		}
		s.Max = max(s.Max, n)
		if c.Oversize {
			s.Oversize++
		}
		if c.Truncated {
			s.Truncated++
		}
		if c.Empty {
			s.Empty++
		}
	}
	if s.Chunks > 0 {
		s.Mean = float64(total) / float64(s.Chunks)
	}
	return s
}

// edgeWords returns the first and the last n words of text (runs of non-space characters),
// each joined by single spaces. A text of at most n words gives it whole twice.
func edgeWords(text string, n int) (first, last string) {
	words := strings.FieldsFunc(text, unicode.IsSpace)
	if len(words) <= n {
		all := strings.Join(words, " ")
		return all, all
	}
	return strings.Join(words[:n], " "), strings.Join(words[len(words)-n:], " ")
}
