package preview

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/config/crd"
	"github.com/ragops/ragops/internal/admission"
	"github.com/ragops/ragops/internal/conditions"
)

// strategyCRD is the file in config/crd/bases holding the ChunkingStrategy CRD.
const strategyCRD = "bases/ragops.dev_chunkingstrategies.yaml"

// Strategy is a ChunkingStrategy manifest as the cluster would store it: admitted (CRD
// schema, CEL rules, defaults applied) and accepted by the controller's validation.
type Strategy struct {
	// Name is metadata.name.
	Name string
	// Spec is the defaulted spec.
	Spec ragopsv1alpha1.ChunkingStrategySpec
}

// String describes the strategy in one line, e.g. `fixed-512 (Fixed, 512 Tokens, overlap 0)`.
func (s Strategy) String() string {
	b := fmt.Sprintf("%s (%s, %d %s, overlap %d", s.Name, s.Spec.Type, s.Spec.Size, s.Spec.Unit, s.Spec.Overlap)
	if s.Spec.SlidingWindow != nil {
		b += fmt.Sprintf(", stride %d", s.Spec.SlidingWindow.Stride)
	}
	if s.late() {
		b += fmt.Sprintf(", late: window %d, window overlap %d", s.Spec.Late.Window, s.Spec.Late.WindowOverlap)
	}
	return b + ")"
}

func (s Strategy) late() bool { return s.Spec.Late != nil && s.Spec.Late.Enabled }

var (
	admitOnce sync.Once
	admitCRD  *admission.CRD
	admitErr  error
)

// strategyAdmission returns the admission of the ChunkingStrategy CRD embedded in the binary.
func strategyAdmission() (*admission.CRD, error) {
	admitOnce.Do(func() {
		raw, err := crd.Bases.ReadFile(strategyCRD)
		if err != nil {
			admitErr = err
			return
		}
		admitCRD, admitErr = admission.New(raw, ragopsv1alpha1.GroupVersion.Version)
	})
	return admitCRD, admitErr
}

// LoadStrategy reads the ChunkingStrategy in the YAML file path (see ParseStrategy).
func LoadStrategy(ctx context.Context, path string) (Strategy, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Strategy{}, err
	}
	s, err := ParseStrategy(ctx, raw)
	if err != nil {
		return Strategy{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseStrategy takes the one ChunkingStrategy among the YAML documents in data (other
// kinds are ignored) and checks it as a `kubectl apply` to a cluster with ragops would:
// kube-apiserver admission against the CRD (package internal/admission; its errors are
// the apiserver's messages), then the ChunkingStrategy controller's validation
// (chunkers/registry.Validate, which the controllers call; its error is the message the strategy's Stalled condition
// would carry).
func ParseStrategy(ctx context.Context, data []byte) (Strategy, error) {
	docs, err := strategyDocuments(data)
	if err != nil {
		return Strategy{}, err
	}
	a, err := strategyAdmission()
	if err != nil {
		return Strategy{}, err
	}
	u, err := a.Admit(ctx, docs[0])
	if err != nil {
		return Strategy{}, err
	}
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cs); err != nil {
		return Strategy{}, fmt.Errorf("ChunkingStrategy %q: %w", u.GetName(), err)
	}
	if err := registry.Validate(cs.Spec); err != nil {
		return Strategy{}, fmt.Errorf("ChunkingStrategy %q would be Stalled (%s): %w", cs.Name, conditions.ReasonInvalidStrategy, err)
	}
	return Strategy{Name: cs.Name, Spec: cs.Spec}, nil
}

// strategyDocuments splits a YAML stream and returns the documents whose kind is
// ChunkingStrategy; there must be exactly one.
func strategyDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var found [][]byte
	var names, kinds []string
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", len(kinds)+1, err)
		}
		kinds = append(kinds, head.Kind)
		if head.Kind == "ChunkingStrategy" {
			found = append(found, doc)
			names = append(names, head.Metadata.Name)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no ChunkingStrategy among the %d YAML documents (kinds %s)", len(kinds), strings.Join(kinds, ", "))
	case 1:
		return found, nil
	default:
		return nil, fmt.Errorf("%d ChunkingStrategies (%s): keep one per file", len(found), strings.Join(names, ", "))
	}
}
