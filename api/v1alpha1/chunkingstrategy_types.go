package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StrategyType is a chunk boundary strategy.
// +kubebuilder:validation:Enum=Fixed;SlidingWindow;Sentence;Paragraph;Recursive;Heading;Semantic;Cluster
type StrategyType string

// Boundary strategies.
const (
	// StrategyFixed cuts every Size units with Overlap units shared by neighbours.
	StrategyFixed StrategyType = "Fixed"
	// StrategySlidingWindow takes windows of Size units every SlidingWindow.Stride units.
	StrategySlidingWindow StrategyType = "SlidingWindow"
	// StrategySentence packs whole sentences up to Size.
	StrategySentence StrategyType = "Sentence"
	// StrategyParagraph packs blank-line separated blocks up to Size.
	StrategyParagraph StrategyType = "Paragraph"
	// StrategyRecursive splits by paragraph, line, sentence, word, then grapheme until pieces fit.
	StrategyRecursive StrategyType = "Recursive"
	// StrategyHeading cuts at section headings and splits over-long sections recursively.
	StrategyHeading StrategyType = "Heading"
	// StrategySemantic cuts where the embedding similarity of adjacent sentences drops.
	StrategySemantic StrategyType = "Semantic"
	// StrategyCluster groups sentences by embedding similarity.
	StrategyCluster StrategyType = "Cluster"
)

// SizeUnit is the unit of Size and Overlap.
// +kubebuilder:validation:Enum=Tokens;Characters
type SizeUnit string

// Size units.
const (
	// UnitTokens counts tokens of the Index's embedding model's tokenizer (special tokens excluded).
	UnitTokens SizeUnit = "Tokens"
	// UnitCharacters counts Unicode code points.
	UnitCharacters SizeUnit = "Characters"
)

// ChunkingStrategySpec says how to cut documents into chunks and whether to embed them with
// late chunking.
// +kubebuilder:validation:XValidation:rule="self.overlap < self.size",fieldPath=".overlap",message="overlap must be less than size"
// +kubebuilder:validation:XValidation:rule="!has(self.minSize) || self.minSize < self.size",fieldPath=".minSize",message="minSize must be less than size"
// +kubebuilder:validation:XValidation:rule="self.type != 'SlidingWindow' || has(self.slidingWindow)",fieldPath=".slidingWindow",reason=FieldValueRequired,message="slidingWindow is required when type is SlidingWindow"
// +kubebuilder:validation:XValidation:rule="self.type != 'Heading' || has(self.heading)",fieldPath=".heading",reason=FieldValueRequired,message="heading is required when type is Heading"
// +kubebuilder:validation:XValidation:rule="self.type != 'Semantic' || has(self.semantic)",fieldPath=".semantic",reason=FieldValueRequired,message="semantic is required when type is Semantic"
// +kubebuilder:validation:XValidation:rule="self.type != 'Cluster' || has(self.cluster)",fieldPath=".cluster",reason=FieldValueRequired,message="cluster is required when type is Cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.slidingWindow) || self.type == 'SlidingWindow'",fieldPath=".slidingWindow",reason=FieldValueForbidden,message="slidingWindow may only be set when type is SlidingWindow"
// +kubebuilder:validation:XValidation:rule="!has(self.heading) || self.type == 'Heading'",fieldPath=".heading",reason=FieldValueForbidden,message="heading may only be set when type is Heading"
// +kubebuilder:validation:XValidation:rule="!has(self.semantic) || self.type == 'Semantic'",fieldPath=".semantic",reason=FieldValueForbidden,message="semantic may only be set when type is Semantic"
// +kubebuilder:validation:XValidation:rule="!has(self.cluster) || self.type == 'Cluster'",fieldPath=".cluster",reason=FieldValueForbidden,message="cluster may only be set when type is Cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.slidingWindow) || self.slidingWindow.stride <= self.size",fieldPath=".slidingWindow.stride",message="slidingWindow.stride must not exceed size (the window)"
type ChunkingStrategySpec struct {
	// Type of boundary strategy.
	Type StrategyType `json:"type"`
	// Unit of Size and Overlap.
	// +optional
	// +kubebuilder:default=Tokens
	Unit SizeUnit `json:"unit,omitempty"`
	// Size is the maximum chunk size in Unit (the window for SlidingWindow). In Tokens it must
	// fit the Index's model: size plus the model's special tokens and document prefix at most
	// its maxPositions (ragops.json), or the build is refused (Index condition reason
	// ModelLimitExceeded). The default fits the default model (512 positions).
	// +optional
	// +kubebuilder:default=500
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	Size int32 `json:"size,omitempty"`
	// Overlap is the number of units shared by adjacent chunks (Fixed, Recursive, Heading).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Overlap int32 `json:"overlap,omitempty"`
	// MinSize is the smallest chunk in Unit that stands on its own; 0 (the default) keeps
	// chunks as the strategy cuts them. With MinSize set, a chunk under it merges with a
	// neighbour in the same section when the merged chunk fits Size (Sentence, Paragraph,
	// Recursive, Heading, Semantic, and Cluster's contiguous chunks; a KMeans chunk of
	// several spans is left as it is); a Fixed or SlidingWindow document's last window
	// under it starts earlier, sharing units with the window before, so that it holds Size
	// units; a Heading section with no text under its heading folds into its first
	// subsection (the chunk's heading path keeps both titles), and a document's first
	// heading with nothing under it (a title) folds into the section after it. Text is
	// never dropped. Must be less than Size.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	MinSize int32 `json:"minSize,omitempty"`

	// SlidingWindow options; required for type SlidingWindow.
	// +optional
	SlidingWindow *SlidingWindowOptions `json:"slidingWindow,omitempty"`
	// Sentence segmentation options (Sentence, Semantic and Cluster strategies).
	// +optional
	Sentence *SentenceOptions `json:"sentence,omitempty"`
	// Recursive splitting options (Recursive, and over-long Heading sections).
	// +optional
	Recursive *RecursiveOptions `json:"recursive,omitempty"`
	// Heading options; required for type Heading.
	// +optional
	Heading *HeadingOptions `json:"heading,omitempty"`
	// Semantic options; required for type Semantic.
	// +optional
	Semantic *SemanticOptions `json:"semantic,omitempty"`
	// Cluster options; required for type Cluster.
	// +optional
	Cluster *ClusterOptions `json:"cluster,omitempty"`

	// Late switches on late chunking (Günther et al. 2024, arXiv:2409.04701): the document
	// is embedded once and token states are mean-pooled inside each chunk's span.
	// +optional
	Late *LateChunkingOptions `json:"late,omitempty"`
}

// SlidingWindowOptions are the SlidingWindow strategy's parameters.
type SlidingWindowOptions struct {
	// Stride is the distance in Unit between window starts; Size - Stride units overlap.
	// +kubebuilder:validation:Minimum=1
	Stride int32 `json:"stride"`
}

// SentenceOptions configure sentence segmentation.
type SentenceOptions struct {
	// Languages whose abbreviation lists guard sentence ends (ISO 639-1).
	// +optional
	// +kubebuilder:default={"en","nl"}
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Enum=en;nl;de;fr
	Languages []string `json:"languages,omitempty"`
	// OverlapSentences repeats this many trailing sentences at the start of the next chunk.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	OverlapSentences int32 `json:"overlapSentences,omitempty"`
}

// RecursiveOptions configure recursive splitting.
type RecursiveOptions struct {
	// Separators overrides the hierarchy (default: blank line, newline, sentence end, space,
	// grapheme). Tried in order; each is a literal string.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	Separators []string `json:"separators,omitempty"`
}

// HeadingOptions configure heading detection.
type HeadingOptions struct {
	// Markdown detects ATX (#) and Setext (underlined) headings outside fenced code blocks.
	// +optional
	// +kubebuilder:default=true
	Markdown *bool `json:"markdown,omitempty"`
	// NumberedSections detects, in text without an outline from its reader, numbered section
	// lines such as "1.2 Scope", Dutch legal divisions (Boek, Deel, Titel(deel), Hoofdstuk,
	// Afdeling, Paragraaf/§, Artikel 3a) and the sections of a Dutch decision (Beslispunt,
	// Motivering, Overwegende, Besluit, Stemverhouding).
	// +optional
	// +kubebuilder:default=false
	NumberedSections bool `json:"numberedSections,omitempty"`
	// Patterns are extra heading lines matched by regular expressions (RE2 syntax) per line.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Patterns []HeadingPattern `json:"patterns,omitempty"`
	// PathPrefix puts each chunk's heading path in front of its embedded text, e.g.
	// "Vreemdelingenwet 2000 > Hoofdstuk 3 > Artikel 20" on its own line. The prefix counts
	// toward size (sections are cut smaller by it; a path over half the size keeps only its
	// innermost titles); the stored chunk text and offsets stay exact. Naive embedding only:
	// late chunking already encodes the headings in context.
	// +optional
	// +kubebuilder:default=false
	PathPrefix bool `json:"pathPrefix,omitempty"`
}

// HeadingPattern is a regular expression that marks a line as a heading of a level.
type HeadingPattern struct {
	// Pattern is an RE2 regular expression matched against each line, e.g. ^Beslispunt.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="type(''.matches(self)) == bool",message="pattern must be a valid regular expression"
	Pattern string `json:"pattern"`
	// Level of the heading (1 is outermost).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=6
	Level int32 `json:"level,omitempty"`
}

// ThresholdType is how a semantic breakpoint threshold is derived from the distances.
// +kubebuilder:validation:Enum=Percentile;StandardDeviation;InterQuartile
type ThresholdType string

// Semantic threshold types (as in LangChain's SemanticChunker).
const (
	ThresholdPercentile        ThresholdType = "Percentile"
	ThresholdStandardDeviation ThresholdType = "StandardDeviation"
	ThresholdInterQuartile     ThresholdType = "InterQuartile"
)

// SemanticOptions configure the Semantic strategy.
type SemanticOptions struct {
	// ThresholdType picks how the breakpoint threshold is computed.
	// +optional
	// +kubebuilder:default=Percentile
	ThresholdType ThresholdType `json:"thresholdType,omitempty"`
	// ThresholdAmount is the percentile (0-100) or the number of standard deviations or
	// interquartile ranges; a string holding a decimal number, e.g. "95" or "1.5".
	// +optional
	// +kubebuilder:default="95"
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	ThresholdAmount string `json:"thresholdAmount,omitempty"`
	// BufferSentences is how many neighbouring sentences join each sentence's embedding window.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8
	BufferSentences int32 `json:"bufferSentences,omitempty"`
}

// ClusterMode selects how sentences are grouped.
// +kubebuilder:validation:Enum=Contiguous;KMeans
type ClusterMode string

// Cluster modes.
const (
	// ClusterContiguous groups adjacent sentences (Chroma's ClusterSemanticChunker).
	ClusterContiguous ClusterMode = "Contiguous"
	// ClusterKMeans groups sentences of a document by k-means; a chunk may be several spans.
	ClusterKMeans ClusterMode = "KMeans"
)

// ClusterOptions configure the Cluster strategy.
// +kubebuilder:validation:XValidation:rule="self.mode != 'KMeans' || has(self.clusters)",fieldPath=".clusters",reason=FieldValueRequired,message="clusters is required when mode is KMeans"
type ClusterOptions struct {
	// Mode of grouping.
	// +optional
	// +kubebuilder:default=Contiguous
	Mode ClusterMode `json:"mode,omitempty"`
	// Clusters is k for KMeans mode.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	Clusters *int32 `json:"clusters,omitempty"`
}

// LateChunkingOptions configure late chunking.
// +kubebuilder:validation:XValidation:rule="self.window > self.windowOverlap",fieldPath=".windowOverlap",message="windowOverlap must be less than window"
type LateChunkingOptions struct {
	// Enabled switches late chunking on.
	Enabled bool `json:"enabled"`
	// Window is the macro window in tokens for documents longer than the model's context
	// ("long late chunking"), special tokens included; a window above the model's maximum
	// positions is refused (Index condition reason ModelLimitExceeded).
	// +optional
	// +kubebuilder:default=512
	// +kubebuilder:validation:Minimum=8
	// +kubebuilder:validation:Maximum=131072
	Window int32 `json:"window,omitempty"`
	// WindowOverlap is the number of tokens adjacent macro windows share.
	// +optional
	// +kubebuilder:default=128
	// +kubebuilder:validation:Minimum=0
	WindowOverlap int32 `json:"windowOverlap,omitempty"`
}

// ChunkingStrategyStatus is the observed state of a ChunkingStrategy.
type ChunkingStrategyStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Indexes lists the names of the Indexes in this namespace that use this strategy.
	// +optional
	// +listType=set
	Indexes []string `json:"indexes,omitempty"`
}

// ChunkingStrategy says how documents are cut into chunks.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cs;chunking,categories=rag
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Overlap",type=integer,JSONPath=`.spec.overlap`
// +kubebuilder:printcolumn:name="Late",type=boolean,JSONPath=`.spec.late.enabled`
// +kubebuilder:printcolumn:name="Unit",type=string,priority=1,JSONPath=`.spec.unit`
// +kubebuilder:printcolumn:name="Ready",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ChunkingStrategy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ChunkingStrategySpec   `json:"spec"`
	Status ChunkingStrategyStatus `json:"status,omitempty"`
}

// ChunkingStrategyList is a list of ChunkingStrategy.
// +kubebuilder:object:root=true
type ChunkingStrategyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ChunkingStrategy `json:"items"`
}

func init() { SchemeBuilder.Register(&ChunkingStrategy{}, &ChunkingStrategyList{}) }
