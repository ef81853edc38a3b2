package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// Issue 51, an unchanged HTTP archive is not downloaded again: the validators a scan of an
// HTTP Corpus reports are recorded in status.http, and the next scan's plan carries them
// with the recorded figures, so that its worker asks the server conditionally.
func TestHTTPScanValidatorsReachTheNextScan(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archief"},
		Spec: ragopsv1alpha1.CorpusSpec{HTTP: &ragopsv1alpha1.HTTPSource{URL: "https://example.org/archief.tar.gz"}}}
	if err := env.Client.Create(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	validator := &ragopsv1alpha1.HTTPValidator{ETag: `"v1"`, LastModified: "Mon, 07 Dec 2026 10:00:00 GMT", Selection: "0123456789abcdef"}
	var jobs []batchv1.Job
	eventually(t, 30*time.Second, "first scan Job", func() (bool, error) {
		jobs = ownedJobs(t, ns, corpus)
		return len(jobs) == 1, nil
	})
	res, _ := json.Marshal(plan.ScanResult{Documents: 7, Bytes: 700, Revision: "rev1", HTTP: validator})
	finishJob(t, &jobs[0], 0, string(res))
	eventually(t, 30*time.Second, "validators recorded", func() (bool, error) {
		var c ragopsv1alpha1.Corpus
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), &c)
		return err == nil && c.Status.Revision == "rev1" && c.Status.HTTP != nil && *c.Status.HTTP == *validator, err
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), corpus); err != nil {
		t.Fatal(err)
	}
	patchAnnotation(t, corpus, "ragops.dev/scan-requested", "1")
	var second *batchv1.Job
	eventually(t, 30*time.Second, "second scan Job", func() (bool, error) {
		for _, j := range ownedJobs(t, ns, corpus) {
			if j.Name != jobs[0].Name {
				second = &j
				return true, nil
			}
		}
		return false, nil
	})
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: second.Name}, &cm); err != nil {
		t.Fatal(err)
	}
	var p plan.Scan
	if err := json.Unmarshal([]byte(cm.Data[plan.File]), &p); err != nil {
		t.Fatal(err)
	}
	if p.Previous == nil || p.Previous.Revision != "rev1" || p.Previous.Documents != 7 || p.Previous.Bytes != 700 ||
		p.Previous.HTTP == nil || *p.Previous.HTTP != *validator {
		t.Errorf("second scan's previous %s, want rev1's figures and validators %+v", fmt.Sprintf("%+v", p.Previous), validator)
	}
}
