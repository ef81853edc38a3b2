package trials

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/config/crd"
	"github.com/ragops/ragops/internal/admission"
)

// experimentCRD is the file in config/crd/bases holding the Experiment CRD.
const experimentCRD = "bases/ragops.dev_experiments.yaml"

var (
	admitOnce sync.Once
	admitCRD  *admission.CRD
	admitErr  error
)

// Admit checks one Experiment manifest (YAML or JSON) without a cluster, as a `kubectl apply`
// to a cluster with ragops would, then as the Experiment controller would: kube-apiserver
// admission against the CRD embedded in the binary (package internal/admission: schema, CEL
// rules, defaults; its errors are the apiserver's messages), then Validate (what the CRD cannot
// express; its error is what the Experiment's Stalled condition would carry, reason
// ragopsv1alpha1.ReasonInvalidSpace). It returns the Experiment with defaults applied.
func Admit(ctx context.Context, doc []byte) (*ragopsv1alpha1.Experiment, error) {
	admitOnce.Do(func() {
		raw, err := crd.Bases.ReadFile(experimentCRD)
		if err != nil {
			admitErr = err
			return
		}
		admitCRD, admitErr = admission.New(raw, ragopsv1alpha1.GroupVersion.Version)
	})
	if admitErr != nil {
		return nil, admitErr
	}
	u, err := admitCRD.Admit(ctx, doc)
	if err != nil {
		return nil, err
	}
	var exp ragopsv1alpha1.Experiment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &exp); err != nil {
		return nil, fmt.Errorf("Experiment %q: %w", u.GetName(), err)
	}
	if err := Validate(&exp.Spec); err != nil {
		return nil, fmt.Errorf("Experiment %q would be Stalled (%s): %w", exp.Name, ragopsv1alpha1.ReasonInvalidSpace, err)
	}
	return &exp, nil
}
