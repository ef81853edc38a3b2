package preview_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/internal/admission"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/preview"
)

const head = "apiVersion: ragops.dev/v1alpha1\nkind: ChunkingStrategy\nmetadata:\n  name: s\nspec:\n"

// TestParseStrategyAppliesCRDDefaults checks that the parsed spec carries the CRD's
// defaults, as the stored object would.
func TestParseStrategyAppliesCRDDefaults(t *testing.T) {
	s, err := preview.ParseStrategy(context.Background(), []byte(head+"  type: Sentence\n  late:\n    enabled: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "s" || s.Spec.Unit != ragopsv1alpha1.UnitTokens || s.Spec.Size != registry.DefaultSize || s.Spec.Overlap != 0 {
		t.Errorf("spec %+v", s.Spec)
	}
	if l := s.Spec.Late; l == nil || !l.Enabled || l.Window != 512 || l.WindowOverlap != 128 {
		t.Errorf("late %+v, want window 512 and overlap 128", l)
	}
	if got, want := s.String(), "s (Sentence, 500 Tokens, overlap 0, late: window 512, window overlap 128)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestParseStrategyControllerValidation checks a spec the CRD admits but the controller
// marks Stalled: the error carries the condition's reason and message.
func TestParseStrategyControllerValidation(t *testing.T) {
	doc := head + "  type: Semantic\n  semantic:\n    thresholdAmount: \"150\"\n"
	_, err := preview.ParseStrategy(context.Background(), []byte(doc))
	if err == nil {
		t.Fatal("a percentile of 150 was accepted")
	}
	spec := ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategySemantic, Unit: ragopsv1alpha1.UnitTokens, Size: 512,
		Semantic: &ragopsv1alpha1.SemanticOptions{ThresholdType: "Percentile", ThresholdAmount: "150", BufferSentences: 1}}
	cond := registry.Validate(spec)
	if cond == nil {
		t.Fatal("the controller accepts the spec")
	}
	if want := `ChunkingStrategy "s" would be Stalled (InvalidStrategy): ` + cond.Error(); err.Error() != want {
		t.Errorf("error\n got: %s\nwant: %s", err, want)
	}
	if admission.IsRejected(err) {
		t.Error("a controller condition is reported as an apiserver rejection")
	}
}

// TestParseStrategyPicksTheStrategy checks multi-document files: other kinds are ignored,
// and zero or two strategies are errors that say so.
func TestParseStrategyPicksTheStrategy(t *testing.T) {
	corpus := "apiVersion: ragops.dev/v1alpha1\nkind: Corpus\nmetadata:\n  name: c\nspec: {}\n"
	s, err := preview.ParseStrategy(context.Background(), []byte(corpus+"---\n"+head+"  type: Paragraph\n  size: 200\n"))
	if err != nil || s.Spec.Type != ragopsv1alpha1.StrategyParagraph || s.Spec.Size != 200 {
		t.Errorf("strategy %+v, err %v", s, err)
	}
	_, err = preview.ParseStrategy(context.Background(), []byte(corpus))
	if err == nil || err.Error() != "no ChunkingStrategy among the 1 YAML documents (kinds Corpus)" {
		t.Errorf("err = %v", err)
	}
	two := head + "  type: Fixed\n---\n" + strings.Replace(head, "name: s", "name: t", 1) + "  type: Fixed\n"
	_, err = preview.ParseStrategy(context.Background(), []byte(two))
	if err == nil || err.Error() != "2 ChunkingStrategies (s, t): keep one per file" {
		t.Errorf("err = %v", err)
	}
}

// TestSampleStrategiesParse parses every ChunkingStrategy shipped in config/samples, one
// document at a time, and checks it against the YAML it came from.
func TestSampleStrategiesParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.ModuleRoot(), "config", "samples", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	top, _ := filepath.Glob(filepath.Join(testenv.ModuleRoot(), "config", "samples", "*.yaml"))
	n := 0
	for _, f := range append(files, top...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(doc, []byte("kind: ChunkingStrategy")) {
				continue
			}
			n++
			s, err := preview.ParseStrategy(context.Background(), doc)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if !bytes.Contains(doc, []byte("name: "+s.Name+"\n")) || !bytes.Contains(doc, []byte("type: "+string(s.Spec.Type)+"\n")) {
				t.Errorf("%s: parsed %s from\n%s", f, s, doc)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d sample strategies found", n)
	}
}

// TestSemanticNeedsModel checks that a strategy that embeds sentences is refused without a
// model folder, naming the flag.
func TestSemanticNeedsModel(t *testing.T) {
	s, err := preview.ParseStrategy(context.Background(), []byte(head+"  type: Semantic\n  semantic: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = preview.NewChunker(s, nil)
	if err == nil || err.Error() != "strategy s: type Semantic embeds sentences: give the model folder (--model)" {
		t.Errorf("err = %v", err)
	}
}
