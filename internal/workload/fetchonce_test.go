package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// jobUIDEnv returns the container's plan.EnvJobUID variable, or nil.
func jobUIDEnv(w *Workload) *corev1.EnvVar {
	for _, e := range w.Job().Spec.Template.Spec.Containers[0].Env {
		if e.Name == plan.EnvJobUID {
			return &e
		}
	}
	return nil
}

// Issue 51, HTTP archives fetched once per build: the shards of an embed Job of an HTTP
// Corpus get their Job's UID from the pod's label, the run under which shard 0 stages the
// archive for the others; one shard, or a source that is not HTTP, gets none.
func TestHTTPBuildShardsKnowTheirJob(t *testing.T) {
	idx, rev := index()
	http := corpus()
	http.Spec.PVC = nil
	http.Spec.HTTP = &ragopsv1alpha1.HTTPSource{URL: "https://example.org/archief.tar.gz"}
	three := ragopsv1alpha1.EmbedderSpec{Shards: 3}
	for _, tc := range []struct {
		name string
		w    *Workload
		want bool
	}{
		{"build of an HTTP corpus on 3 shards", Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: http, Embedder: three}, defaults), true},
		{"sync of an HTTP corpus on 3 shards", Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: http, Embedder: three, Incremental: true}, defaults), true},
		{"build of an HTTP corpus on 1 shard", Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: http}, defaults), false},
		{"build of a PVC corpus on 3 shards", Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: corpus(), Embedder: three}, defaults), false},
	} {
		e := jobUIDEnv(tc.w)
		if !tc.want {
			if e != nil {
				t.Errorf("%s: %s set (%+v), want none", tc.name, plan.EnvJobUID, e)
			}
			continue
		}
		if e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
			e.ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/controller-uid']" {
			t.Errorf("%s: %s = %+v, want the pod's batch.kubernetes.io/controller-uid label", tc.name, plan.EnvJobUID, e)
		}
	}
}

// Issue 51, Git fetched once per build: an estimate reads the commit the Corpus's scan
// counted (a pinned commit, which a partial clone fetches at depth 1), as builds do.
func TestEstimateReadsTheScannedCommit(t *testing.T) {
	c := corpus()
	c.Spec.PVC = nil
	c.Spec.Git = &ragopsv1alpha1.GitSource{URL: "https://git.example.org/archief.git", Ref: "main", Path: "docs"}
	c.Status.Commit = "0123456789abcdef0123456789abcdef01234567"
	idx, rev := index()
	est := planOf[plan.Estimate](t, Estimate(EstimateInputs{Experiment: experiment(), Corpus: c, Fraction: 0.05, MinDocuments: 8}, defaults))
	build := planOf[plan.Build](t, Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: c}, defaults))
	for name, src := range map[string]plan.Source{"estimate": est.Source, "build": build.Source} {
		if src.Git == nil || src.Git.Ref != c.Status.Commit || src.Git.Path != "docs" {
			t.Errorf("%s reads %+v, want the scanned commit %s", name, src.Git, c.Status.Commit)
		}
	}
	if c.Spec.Git.Ref != "main" {
		t.Errorf("the Corpus's spec was changed: ref %q", c.Spec.Git.Ref)
	}
	scan := planOf[plan.Scan](t, Scan(c, "t", defaults))
	if scan.Source.Git.Ref != "main" {
		t.Errorf("the scan reads ref %q, want the spec's main", scan.Source.Git.Ref)
	}
}

// Issue 51: the scan plan of an HTTP Corpus carries its last recorded scan (figures and
// validators), which makes the worker's download conditional; a Corpus without validators
// or not scanned yet, and other sources, carry none.
func TestHTTPScanPlanCarriesTheLastScan(t *testing.T) {
	http := corpus()
	http.Spec.PVC = nil
	http.Spec.HTTP = &ragopsv1alpha1.HTTPSource{URL: "https://example.org/archief.tar.gz"}
	http.Status = ragopsv1alpha1.CorpusStatus{Documents: 7, Bytes: 700, Revision: "rev1", Skipped: map[string]int64{"TooLarge": 1},
		HTTP: &ragopsv1alpha1.HTTPValidator{ETag: `"v1"`, Selection: "0123456789abcdef"}}
	p := planOf[plan.Scan](t, Scan(http, "t", defaults))
	if prev := p.Previous; prev == nil || prev.Documents != 7 || prev.Bytes != 700 || prev.Revision != "rev1" ||
		prev.Skipped["TooLarge"] != 1 || prev.HTTP == nil || prev.HTTP.ETag != `"v1"` || prev.HTTP.Selection != "0123456789abcdef" {
		t.Errorf("scan plan previous %+v, want the recorded scan", prev)
	}
	unscanned := http.DeepCopy()
	unscanned.Status = ragopsv1alpha1.CorpusStatus{}
	noValidators := http.DeepCopy()
	noValidators.Status.HTTP = nil
	pvc := corpus()
	pvc.Status.HTTP = http.Status.HTTP
	for name, c := range map[string]*ragopsv1alpha1.Corpus{"unscanned": unscanned, "no validators": noValidators, "PVC": pvc} {
		if p := planOf[plan.Scan](t, Scan(c, "t", defaults)); p.Previous != nil {
			t.Errorf("%s: scan plan previous %+v, want none", name, p.Previous)
		}
	}
}
