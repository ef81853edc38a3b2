package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
)

// failedS3Corpus creates an S3 Corpus whose credentials Secret "s3-creds" holds a wrong key,
// plays its first scan Job failing with the S3 error, and waits for the Corpus to report it.
// The backoff's first retry is 30 s away: anything that starts a scan within a few seconds
// was started by what the test did.
func failedS3Corpus(t *testing.T, ns string) (*ragopsv1alpha1.Corpus, *corev1.Secret) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-creds"},
		Data: map[string][]byte{"accesskey": []byte("raad"), "secretkey": []byte("verkeerd")}}
	spec := ragopsv1alpha1.CorpusSpec{S3: &ragopsv1alpha1.S3Source{Endpoint: "https://s3.example.org", Bucket: "besluiten",
		SecretRef: &ragopsv1alpha1.LocalObjectReference{Name: "s3-creds"}}}
	corpus := failedScan(t, ns, spec, `{"error":"list s3://besluiten/: SignatureDoesNotMatch: the request signature we calculated does not match"}`,
		"SignatureDoesNotMatch", secret)
	return corpus, secret
}

// failedScan creates refs and a Corpus "besluiten" with spec, plays its first scan Job
// failing with the result errJSON, and returns the Corpus once it reports SourceUnreadable
// naming want.
func failedScan(t *testing.T, ns string, spec ragopsv1alpha1.CorpusSpec, errJSON, want string, refs ...client.Object) *ragopsv1alpha1.Corpus {
	t.Helper()
	ctx := context.Background()
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"}, Spec: spec}
	for _, o := range append(refs, corpus) {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []batchv1.Job
	eventually(t, 30*time.Second, "the first scan Job", func() (bool, error) {
		jobs = ownedJobs(t, ns, corpus)
		return len(jobs) == 1, nil
	})
	finishJob(t, &jobs[0], 1, errJSON)
	eventually(t, 30*time.Second, "the failed scan reported", func() (bool, error) {
		var c ragopsv1alpha1.Corpus
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), &c); err != nil {
			return false, err
		}
		r := condition(&c, ragopsv1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == controllers.ReasonSourceUnreadable &&
			strings.Contains(r.Message, want), nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), corpus); err != nil {
		t.Fatal(err)
	}
	return corpus
}

// waitSecondScan waits up to 10 s (a third of the first backoff) for a second scan Job,
// plays it succeeding and waits for the Corpus to record it.
func waitSecondScan(t *testing.T, corpus *ragopsv1alpha1.Corpus, after string) {
	t.Helper()
	ctx := context.Background()
	var second *batchv1.Job
	eventually(t, 10*time.Second, "a second scan Job "+after, func() (bool, error) {
		for _, j := range ownedJobs(t, corpus.Namespace, corpus) {
			if j.Status.Failed == 0 {
				second = &j
				return true, nil
			}
		}
		return false, nil
	})
	// Scans are ordered by creation and finish times (whole seconds): finish in a later second
	// than the failure, as a real scan (pod start, listing) does.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	res, _ := json.Marshal(plan.ScanResult{Documents: 12, Bytes: 4096, Revision: "fixed1"})
	finishJob(t, second, 0, string(res))
	eventually(t, 30*time.Second, "the second scan recorded", func() (bool, error) {
		var c ragopsv1alpha1.Corpus
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), &c); err != nil {
			return false, err
		}
		r := condition(&c, ragopsv1alpha1.ConditionReady)
		return c.Status.Revision == "fixed1" && r != nil && r.Status == metav1.ConditionTrue, nil
	})
}

// Defect 10 of issue 32: after a failed scan, a new ragops.dev/scan-requested value starts a
// scan at once, not an interval (1 h) after the failed Job was created.
func TestFailedScanHandlesAScanRequestAtOnce(t *testing.T) {
	ns := newNamespace(t)
	corpus, _ := failedS3Corpus(t, ns)
	patchAnnotation(t, corpus, "ragops.dev/scan-requested", "na-reparatie")
	waitSecondScan(t, corpus, "after the scan request")
	var c ragopsv1alpha1.Corpus
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(corpus), &c); err != nil || c.Status.LastHandledScanRequest != "na-reparatie" {
		t.Fatalf("lastHandledScanRequest %q (err %v), want na-reparatie", c.Status.LastHandledScanRequest, err)
	}
}

// Defect 10 of issue 32: after a scan failed on wrong S3 credentials, fixing the Secret the
// Corpus names starts a scan at once.
func TestFailedScanRetriesWhenItsSecretIsFixed(t *testing.T) {
	ns := newNamespace(t)
	corpus, secret := failedS3Corpus(t, ns)
	// managedFields times have whole seconds: fix the key in a later second than the Job's
	// creation, as a person would.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	secret.Data["secretkey"] = []byte("juist")
	if err := env.Client.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	waitSecondScan(t, corpus, "after the Secret was fixed")
}

// Defect 13 of issue 32, for scans: a failed scan is retried on its own, ScanRetryBase (30 s)
// after the failure, then twice as long after each further failure, up to the interval; the
// Reconciling condition says when. The clock is the reconciler's (Now); the Jobs and their
// failure times are real API objects.
func TestFailedScanIsRetriedWithExponentialBackoff(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	corpus := createSuspendedGitCorpus(t, ns)
	var written *ragopsv1alpha1.Corpus
	var clock time.Time
	rec := &controllers.CorpusReconciler{
		Client:  laggingCorpusClient(t, func() corpusView { return corpusView{} }, func(c *ragopsv1alpha1.Corpus) { written = c }),
		Options: controllers.Options{WorkerImage: "ragops:test", ProgressInterval: time.Second},
		Now:     func() time.Time { return clock },
	}
	// reconcile runs one reconcile at the given clock and returns its requeue and the number
	// of scan Jobs after it.
	reconcile := func(at time.Time) (time.Duration, int) {
		t.Helper()
		clock, written = at, nil
		res, err := rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(corpus)})
		if err != nil {
			t.Fatal(err)
		}
		return res.RequeueAfter, len(ownedJobs(t, ns, corpus))
	}
	running := func() *batchv1.Job {
		t.Helper()
		for _, j := range ownedJobs(t, ns, corpus) {
			if len(j.Status.Conditions) == 0 {
				return &j
			}
		}
		t.Fatal("no running scan Job")
		return nil
	}
	reconciling := func() string {
		t.Helper()
		if written == nil {
			t.Fatal("the reconcile wrote no status")
		}
		r := condition(written, ragopsv1alpha1.ConditionReconciling)
		if r == nil || r.Status != metav1.ConditionTrue {
			t.Fatalf("Reconciling condition %+v, want True", r)
		}
		return r.Message
	}

	start := time.Now().Truncate(time.Second)
	if _, n := reconcile(start); n != 1 {
		t.Fatalf("%d scan Jobs after the first reconcile, want 1", n)
	}
	failed1 := metav1.NewTime(start.Add(2 * time.Second))
	finishJobAt(t, running(), failed1, 1, `{"error":"clone https://git.example.org/besluiten.git: connection refused"}`)

	// 10 s after the failure: no retry yet, and the condition says when it comes.
	wait, n := reconcile(failed1.Add(10 * time.Second))
	if n != 1 || wait != 20*time.Second {
		t.Fatalf("10 s after the first failure: %d scan Jobs, requeue after %s; want 1 and 20s", n, wait)
	}
	if msg := reconciling(); !strings.Contains(msg, "connection refused") || !strings.Contains(msg, "retry 1 in 20s") ||
		!strings.Contains(msg, "doubles up to the interval, 1h0m0s") {
		t.Errorf("Reconciling message %q: want the failure, retry 1 in 20s and the backoff", msg)
	}
	// 30 s after it: the first retry.
	if _, n := reconcile(failed1.Add(30 * time.Second)); n != 2 {
		t.Fatalf("30 s after the first failure: %d scan Jobs, want 2 (a retry)", n)
	}
	if msg := reconciling(); !strings.Contains(msg, "retry 1 after scan Job") {
		t.Errorf("Reconciling message %q: want it to name the retry and the failed Job", msg)
	}
	// Each further failure in a row doubles the wait, up to the interval (1 h): after the 8th
	// and 9th it is an hour, not 30 s * 2^8. The failed Jobs the backoff counts are kept.
	failed := failed1.Add(40 * time.Second)
	for k, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute,
		32 * time.Minute, time.Hour, time.Hour} {
		failures := k + 2
		finishJobAt(t, running(), metav1.NewTime(failed), 1, `{"error":"clone https://git.example.org/besluiten.git: connection refused"}`)
		if wait, n := reconcile(failed.Add(want - time.Second)); n != failures || wait != time.Second {
			t.Fatalf("%s after failure %d: %d scan Jobs, requeue after %s; want %d and 1s (a wait of %s)", want-time.Second, failures, n, wait, failures, want)
		}
		if msg := reconciling(); !strings.Contains(msg, fmt.Sprintf("%d failed in a row", failures)) {
			t.Errorf("Reconciling message %q: want %d failed in a row", msg, failures)
		}
		if _, n := reconcile(failed.Add(want)); n != failures+1 {
			t.Fatalf("%s after failure %d: %d scan Jobs, want %d", want, failures, n, failures+1)
		}
		failed = failed.Add(want + 5*time.Second)
	}
	// A reconcile on a cache that has not seen the newest retry yet (it reads the failed Job
	// before it as the newest) names the same Job: no second retry.
	newest := running().Name
	rec.Client = laggingCorpusClient(t, func() corpusView { return corpusView{unseen: map[string]bool{newest: true}} }, func(c *ragopsv1alpha1.Corpus) { written = c })
	if _, n := reconcile(failed); n != 10 {
		t.Fatalf("a stale reconcile started another retry: %d scan Jobs, want 10", n)
	}
}

// Defect 10 of issue 32: a write to a referenced PVC's status (its phase, a resize) is not a
// fix of the source and starts no scan; a write to its metadata or spec does, at once.
func TestFailedScanIgnoresAStatusWriteToItsPVC(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	pvc := readOnlyClaim(ns, "archief")
	corpus := failedScan(t, ns, ragopsv1alpha1.CorpusSpec{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "archief"}},
		`{"error":"open /corpus/besluiten: no such file or directory"}`, "no such file or directory", pvc)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	pvc.Status.Phase = corev1.ClaimBound
	if err := env.Client.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	// The first retry is 30 s away: a Job within 8 s was started by the status write.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if n := len(ownedJobs(t, ns, corpus)); n != 1 {
			t.Fatalf("%d scan Jobs after a write to the PVC's status, want 1", n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Labels = map[string]string{"archief.example.org/hersteld": "ja"}
	if err := env.Client.Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	waitSecondScan(t, corpus, "after the PVC was relabelled")
}

// readOnlyClaim is a 1Gi ReadOnlyMany PersistentVolumeClaim, not yet bound.
func readOnlyClaim(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}
