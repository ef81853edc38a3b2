package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder/tokenize"
	"sigs.k8s.io/yaml"
)

// TestCheckModelLimits: sizes in tokens over the model's room are refused with both numbers;
// the room counts the special tokens and the document prefix; late chunking checks the
// window instead; Characters are not checked.
func TestCheckModelLimits(t *testing.T) {
	minilm := ModelLimits{Name: "all-minilm-l6-v2", MaxPositions: 512, SpecialTokens: 2}
	e5 := ModelLimits{Name: "multilingual-e5-small", MaxPositions: 512, SpecialTokens: 2, DocumentPrefixTokens: 4}
	late := func(w int32) *v1alpha1.LateChunkingOptions {
		return &v1alpha1.LateChunkingOptions{Enabled: true, Window: w, WindowOverlap: 64}
	}
	for _, tc := range []struct {
		spec  v1alpha1.ChunkingStrategySpec
		l     ModelLimits
		field string // "" means accepted
		need  int
	}{
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Size: 510}, minilm, "", 0},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Size: 511}, minilm, "spec.size", 513},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Size: 800, Overlap: 400}, minilm, "spec.size", 802},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategySemantic, Unit: v1alpha1.UnitTokens, Size: 512}, minilm, "spec.size", 514},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyRecursive, Size: 510}, e5, "spec.size", 516},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyRecursive, Size: 506}, e5, "", 0},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyRecursive}, e5, "", 0}, // the default
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Unit: v1alpha1.UnitCharacters, Size: 4000}, minilm, "", 0},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Size: 800, Late: late(512)}, minilm, "", 0},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Size: 100, Late: late(1024)}, minilm, "spec.late.window", 1024},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyFixed, Size: 511, Late: &v1alpha1.LateChunkingOptions{Window: 4096}}, minilm, "spec.size", 513},
		{v1alpha1.ChunkingStrategySpec{Type: v1alpha1.StrategyHeading, Size: 500}, ModelLimits{Name: "m", MaxPositions: 512, SpecialTokens: 2, HeadingPathTokens: 16}, "spec.size", 518},
	} {
		err := CheckModelLimits(tc.spec, tc.l)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.spec, err)
			}
			continue
		}
		var e *ModelLimitError
		if !IsModelLimit(err) {
			t.Errorf("%+v: %v, want a ModelLimitError on %s", tc.spec, err, tc.field)
			continue
		}
		e = err.(*ModelLimitError)
		if e.Field != tc.field || e.Need != tc.need || e.Limit != tc.l.MaxPositions || e.Model != tc.l.Name {
			t.Errorf("%+v: %+v, want field %s need %d limit %d", tc.spec, e, tc.field, tc.need, tc.l.MaxPositions)
		}
		for _, s := range []string{tc.field, " 512 positions", tc.l.Name} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("message %q does not name %q", err.Error(), s)
			}
		}
	}
}

// TestCRDDefaultsFitDefaultModel reads the defaults of spec.size and spec.late.window from
// the generated CRD and checks them against the default model's ragops.json and tokenizer.
func TestCRDDefaultsFitDefaultModel(t *testing.T) {
	dir := need(t, "RAGOPS_MODEL_DIR", "run hack/prepare.d/embedder.sh and export what it prints")
	raw, err := os.ReadFile(filepath.Join(dir, "ragops.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Name           string
		MaxPositions   int
		DocumentPrefix string
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	crd, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "ragops.dev_chunkingstrategies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties map[string]struct {
									Default    any `json:"default"`
									Properties map[string]struct {
										Default any `json:"default"`
									} `json:"properties"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(crd, &doc); err != nil {
		t.Fatal(err)
	}
	props := doc.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties
	size, _ := props["size"].Default.(float64)
	window, _ := props["late"].Properties["window"].Default.(float64)
	if int(size) != DefaultSize || window == 0 {
		t.Fatalf("CRD defaults size %v, late.window %v; registry.DefaultSize %d", props["size"].Default, props["late"].Properties["window"].Default, DefaultSize)
	}
	l := NewModelLimits(cfg.Name, cfg.MaxPositions, cfg.DocumentPrefix, tok)
	for _, spec := range []v1alpha1.ChunkingStrategySpec{
		{Type: v1alpha1.StrategyRecursive, Size: int32(size)},
		{Type: v1alpha1.StrategyRecursive, Size: int32(size), Late: &v1alpha1.LateChunkingOptions{Enabled: true, Window: int32(window)}},
	} {
		if err := CheckModelLimits(spec, l); err != nil {
			t.Errorf("CRD defaults do not fit the default model: %v", err)
		}
	}
}

// TestNewModelLimitsCountsTheDocumentPrefix: with e5-small-v2's tokenizer the "passage: "
// prefix takes 2 of 512 positions ("passage", ":") besides [CLS] and [SEP], leaving 508
// tokens of text; a model without a prefix needs no tokenizer and leaves 510.
func TestNewModelLimitsCountsTheDocumentPrefix(t *testing.T) {
	dir := need(t, "RAGOPS_E5_SMALL_DIR", "run hack/prepare.d/embedder.sh and export what it prints")
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if l := NewModelLimits("e5-small-v2", 512, "passage: ", tok); l.DocumentPrefixTokens != 2 || l.TextTokens() != 508 {
		t.Errorf("e5-small-v2: %+v, text tokens %d, want prefix 2 and 508", l, l.TextTokens())
	}
	if l := NewModelLimits("all-minilm-l6-v2", 512, "", nil); l.TextTokens() != 510 || l.SpecialTokens != 2 {
		t.Errorf("all-minilm-l6-v2: %+v, text tokens %d, want 510", l, l.TextTokens())
	}
}
